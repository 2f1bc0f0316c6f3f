"""README's two commands in one clone: ``scripts/test`` after command 1, and ``.ci/run``.

Each test builds a throwaway checkout: the real ``scripts/test`` / ``.ci/run`` next to a
``pyproject.toml`` written by the test and a ``.venv/bin`` of recording stand-ins (pip, pytest,
scaleset, ruff, ...; and ``scripts/build-image``). ``.venv/bin/python`` runs this interpreter,
so the script's completeness check looks at the packages really installed here.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RECORDER = """#!/bin/sh
echo "$(basename "$0")${{*:+ $*}}" >> "{calls}"
{body}
"""
README_BLOCK = "# scaleset\n\n```sh\n{one}\n{two}\n```\n\nMore text.\n\n```sh\nnot a command\n```\n"


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def make_checkout(
    root: Path,
    *,
    dev: list[str],
    tools: dict[str, str] | None = None,
    readme: tuple[str, str] | None = None,
) -> Path:
    """A checkout whose venv holds scaleset (this one) and recording stand-ins for ``tools``."""
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "test", root / "scripts" / "test")
    (root / ".ci").mkdir()
    shutil.copy(REPO / ".ci" / "run", root / ".ci" / "run")
    (root / "src").symlink_to(REPO / "src")  # scaleset is importable from "this checkout"
    deps = ", ".join(f'"{d}"' for d in ["pytest>=1"])
    extras = ", ".join(f'"{d}"' for d in dev)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "scaleset"\ndependencies = [{deps}]\n'
        f"[project.optional-dependencies]\ndev = [{extras}]\n"
    )
    if readme is not None:
        (root / "README.md").write_text(README_BLOCK.format(one=readme[0], two=readme[1]))
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    _executable(bin_dir / "python", f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    calls = root / "calls.log"
    calls.touch()
    for name, body in {"pip": "", "pytest": "", "scaleset": "", **(tools or {})}.items():
        _executable(bin_dir / name, RECORDER.format(calls=calls, body=body))
    # the image step's script is a recording stand-in too (the real one needs buildah and root)
    _executable(root / "scripts" / "build-image", RECORDER.format(calls=calls, body=""))
    return root


def run(root: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SCALESET_TEST_KUBECONFIG"}
    env["SCALESET_REAL_APISERVER"] = "0"
    # the stand-ins come first on PATH too (.ci/run calls kubectl by name)
    env["PATH"] = f"{root / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [str(root / script), *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def calls(root: Path) -> list[str]:
    return (root / "calls.log").read_text().splitlines()


# --- scripts/test -------------------------------------------------------------------------------


def test_after_readme_command_1_a_missing_dev_tool_is_installed_before_pytest(
    tmp_path: Path,
) -> None:
    # Command 1 left .venv/bin/scaleset but not the dev extras (here: one dev tool is absent).
    root = make_checkout(tmp_path / "clone", dev=["pytest>=1", "scaleset-absent-dev-tool>=1"])

    result = run(root, "scripts/test", "-q")

    assert calls(root)[0] == "pip install --quiet -e .[dev]", result.stdout + result.stderr
    assert "scaleset-absent-dev-tool is missing" in result.stdout
    # the stand-in pip installed nothing, so the script refuses to run pytest on a broken venv
    assert result.returncode == 1
    assert "still incomplete" in result.stderr
    assert not any(call.startswith("pytest") for call in calls(root))


def test_a_dev_tool_older_than_pyproject_asks_for_is_reinstalled(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "clone", dev=["pytest>=999"])

    result = run(root, "scripts/test")

    assert calls(root)[0] == "pip install --quiet -e .[dev]"
    assert "does not satisfy pytest>=999" in result.stdout


def test_a_complete_venv_runs_pytest_with_the_arguments_and_installs_nothing(
    tmp_path: Path,
) -> None:
    root = make_checkout(tmp_path / "clone", dev=["pytest>=1"])

    result = run(root, "scripts/test", "-q", "tests/x")

    assert result.returncode == 0, result.stderr
    assert calls(root) == ["pytest -q tests/x"]


def test_a_venv_importing_scaleset_from_elsewhere_is_reinstalled(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "clone", dev=["pytest>=1"])
    (root / "src").unlink()
    (root / "src").mkdir()  # this checkout's sources are not what .venv imports

    result = run(root, "scripts/test")

    assert calls(root)[0] == "pip install --quiet -e .[dev]"
    assert "not from this checkout" in result.stdout


# --- .ci/run ------------------------------------------------------------------------------------

DEV_TOOLS = {name: "" for name in ("ruff", "mypy", "lint-imports", "kubectl")}
COMMAND_1 = ".venv/bin/pip install -e '.[demo]' && .venv/bin/scaleset demo"
DEMO = 'if [ "$1" = demo ]; then echo "kubeconfig: $PWD/demo-kubeconfig"; fi'
"""The stand-in demo prints the line .ci/run reads to find the running demo's kubeconfig."""


def test_ci_runs_readme_command_1_then_command_2_then_the_linters(tmp_path: Path) -> None:
    root = make_checkout(
        tmp_path / "clone",
        dev=["pytest>=1"],
        tools={**DEV_TOOLS, "scaleset": DEMO},
        readme=(COMMAND_1, "scripts/test"),
    )

    result = run(root, ".ci/run")

    assert result.returncode == 0, result.stdout + result.stderr
    kubeconfig = root / "demo-kubeconfig"
    assert calls(root) == [
        "pip install -e .[demo]",  # command 1 as README writes it: no dev extras
        "scaleset demo",
        "scaleset demo",  # again, in the background, for kubectl with the kubeconfig it prints
        f"kubectl --kubeconfig {kubeconfig} get autoscalingrunnersets -n arc-runners",
        f"kubectl --kubeconfig {kubeconfig} get ephemeralrunnersets -n arc-runners",
        f"kubectl --kubeconfig {kubeconfig} get ephemeralrunners -n arc-runners",
        "scaleset dev real-apiserver build",
        "pytest",  # command 2: scripts/test found the venv complete
        "ruff check src tests bench",
        "ruff format --check src tests bench",
        "mypy --strict src",
        "lint-imports",
        "build-image --smoke",  # last: the container image, built and run
    ]


def test_ci_fails_when_the_demo_of_command_1_fails(tmp_path: Path) -> None:
    # `scaleset demo` exits non-zero when an invariant broke (or, before it existed, with 2)
    root = make_checkout(
        tmp_path / "clone",
        dev=["pytest>=1"],
        tools={**DEV_TOOLS, "scaleset": "exit 2"},
        readme=(COMMAND_1, "scripts/test"),
    )

    result = run(root, ".ci/run")

    assert result.returncode == 2
    assert calls(root) == ["pip install -e .[demo]", "scaleset demo"]


def test_ci_fails_when_the_install_of_command_1_fails(tmp_path: Path) -> None:
    root = make_checkout(
        tmp_path / "clone",
        dev=["pytest>=1"],
        tools={**DEV_TOOLS, "pip": "exit 1"},
        readme=(COMMAND_1, "scripts/test"),
    )

    result = run(root, ".ci/run")

    assert result.returncode == 1
    assert calls(root) == ["pip install -e .[demo]"]


def test_ci_fails_when_readme_no_longer_has_exactly_two_commands(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "clone", dev=["pytest>=1"], tools=DEV_TOOLS)
    (root / "README.md").write_text("```sh\nscripts/test\n```\n")

    result = run(root, ".ci/run")

    assert result.returncode == 1
    assert "exactly two commands" in result.stderr
    assert calls(root) == []


def test_ci_finds_the_kubeconfig_of_a_demo_that_printed_it_and_ended_while_ci_looked(
    tmp_path: Path,
) -> None:
    # The demo prints its kubeconfig and ends while .ci/run reads its output: a slow `sed` (a
    # stand-in that answers what it read 0.6 s late) reads an empty file, the demo prints at
    # 0.2 s and ends; a loop that asks "still running?" after reading gives up with no
    # kubeconfig. Asking before reading looks once more and finds it.
    demo = 'if [ "$1" = demo ]; then sleep 0.2; echo "kubeconfig: $PWD/demo-kubeconfig"; fi'
    slow_sed = 'out="$(/bin/sed "$@")"; sleep 0.6; printf "%s\\n" "$out"'
    root = make_checkout(
        tmp_path / "clone",
        dev=["pytest>=1"],
        tools={**DEV_TOOLS, "scaleset": demo, "sed": slow_sed},
        readme=(COMMAND_1, "scripts/test"),
    )

    result = run(root, ".ci/run")

    assert "the demo printed no kubeconfig" not in result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        f"kubectl --kubeconfig {root / 'demo-kubeconfig'} get ephemeralrunners -n arc-runners"
        in calls(root)
    )


def test_ci_fails_when_the_demo_prints_no_kubeconfig_for_kubectl(tmp_path: Path) -> None:
    root = make_checkout(
        tmp_path / "clone", dev=["pytest>=1"], tools=DEV_TOOLS, readme=(COMMAND_1, "scripts/test")
    )

    result = run(root, ".ci/run")

    assert result.returncode == 1
    assert "the demo printed no kubeconfig" in result.stderr
    assert not any(call.startswith(("kubectl", "pytest")) for call in calls(root))
