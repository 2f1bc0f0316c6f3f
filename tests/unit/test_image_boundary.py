"""The container image holds the product only, and the product needs nothing else.

The image runs the controller manager and the listener (plus ``scaleset crds`` and ``scaleset
doctor``). It leaves out the development packages — the embedded API server and fake GitHub
(``scaleset.embedded``), the demo, the simulator and the developer tools — through
``.dockerignore``, so they never reach the build. These tests hold the three places that must
agree: what the image leaves out, what the product may not import (an import-linter contract,
checked statically for every import, lazy ones too), and what the controller and the listener
load when they start. And they run the CLI on a copy of the package without those packages, as
the image has it: ``--help`` is unchanged, and each command that needs one exits 1 with one line
saying it is not in this image.
"""

from __future__ import annotations

import ast
import os
import pkgutil
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import scaleset

ROOT = Path(__file__).resolve().parents[2]

DEVELOPMENT_PACKAGES = (
    "scaleset.embedded",
    "scaleset.demo",
    "scaleset.simulate",
    "scaleset.devtools",
)
"""Packages the image leaves out."""

DEVELOPMENT_COMMANDS = [
    ["demo"],
    ["simulate"],
    ["apiserver"],
    ["fake-github"],
    ["dev", "config-reference"],
    ["dev", "real-apiserver", "build"],
    ["dev", "real-apiserver", "start"],
    ["dev", "real-apiserver", "stop"],
    ["dev", "real-apiserver", "env"],
]
"""Every command that needs a development package."""

MODULES_AT_EXIT = """
import atexit, os, sys
def _dump():
    with open(os.environ["MODULES_FILE"], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
atexit.register(_dump)
sys.argv = ["scaleset", *sys.argv[1:]]
from scaleset.cli import main
main()
"""


def _is_development(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in DEVELOPMENT_PACKAGES)


# --- what the controller and the listener load -----------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "entry"),
    [
        # exits 1 after the whole manager is imported: no namespace, no image
        (["controller"], {}, "scaleset.controllers.manager_process"),
        # exits 1 after the whole listener is imported: no config
        (
            ["listener"],
            {"LISTENER_CONFIG_PATH": "/nonexistent/listener-config.json"},
            "scaleset.listener.main",
        ),
    ],
    ids=["controller", "listener"],
)
def test_the_controller_and_the_listener_load_no_development_package(
    tmp_path: Path, args: list[str], env: dict[str, str], entry: str
) -> None:
    modules_file = tmp_path / "modules"
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CONTROLLER_MANAGER_POD_NAMESPACE", "CONTROLLER_MANAGER_CONTAINER_IMAGE")
    }
    result = subprocess.run(
        [sys.executable, "-c", MODULES_AT_EXIT, *args],
        env={**environ, **env, "MODULES_FILE": str(modules_file)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    loaded = modules_file.read_text().split()
    assert entry in loaded, "the command exited before importing its process"
    assert [m for m in loaded if _is_development(m)] == []


# --- the three lists agree -------------------------------------------------------------------


def test_the_image_build_context_leaves_out_exactly_the_development_packages() -> None:
    """``.dockerignore`` is an allowlist (``*``, then ``!src/``); the lines after it drop the
    development packages from the context, so the wheel built in the image lacks them."""
    lines = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    after_src = lines[lines.index("!src/") + 1 :]
    left_out = {
        line.removeprefix("src/").rstrip("/").replace("/", ".")
        for line in after_src
        if line.startswith("src/scaleset/")
    }
    assert left_out == set(DEVELOPMENT_PACKAGES)


def test_lint_imports_forbids_every_product_package_to_import_a_development_one() -> None:
    """One import-linter contract names every other part of the package (all but the CLI, which
    imports the development packages lazily and copes with their absence) as a source."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contracts = [
        c
        for c in settings["contracts"]
        if c["type"] == "forbidden" and set(c["forbidden_modules"]) == set(DEVELOPMENT_PACKAGES)
    ]
    assert len(contracts) == 1, "no forbidden contract for exactly the development packages"
    contract = contracts[0]
    assert contract.get("allow_indirect_imports", False) is False
    everything = {f"scaleset.{m.name}" for m in pkgutil.iter_modules(scaleset.__path__)}
    product = everything - set(DEVELOPMENT_PACKAGES) - {"scaleset.cli", "scaleset.__main__"}
    assert set(contract["source_modules"]) == product


def _development_imports(function: ast.FunctionDef) -> set[str]:
    """The development packages ``function`` imports (lazily, inside its body)."""
    names: list[str] = []
    for node in ast.walk(function):
        if isinstance(node, ast.ImportFrom):
            names.append(node.module or "")
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return {p for p in DEVELOPMENT_PACKAGES for n in names if n == p or n.startswith(p + ".")}


def _required(function: ast.FunctionDef) -> set[str]:
    """The packages the command's first statements (after its docstring) check with _require."""
    body = function.body[1:] if ast.get_docstring(function) is not None else function.body
    required: set[str] = set()
    for statement in body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", "") == "_require"):
            break
        first = call.args[0]
        assert isinstance(first, ast.Constant)
        required.add(str(first.value))
    return required


def test_every_command_that_imports_a_development_package_checks_for_it_first() -> None:
    """A command added later (or a new import in one) cannot forget the check: in the image it
    would end in a ModuleNotFoundError traceback."""
    tree = ast.parse((ROOT / "src" / "scaleset" / "cli.py").read_text())
    commands = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(
            isinstance(d, ast.Call) and getattr(d.func, "attr", "") in ("command", "callback")
            for d in node.decorator_list
        )
    ]
    assert len(commands) >= len(DEVELOPMENT_COMMANDS)
    unchecked = {
        c.name: sorted(_development_imports(c) - _required(c))
        for c in commands
        if _development_imports(c) - _required(c)
    }
    assert unchecked == {}
    assert sum(1 for c in commands if _development_imports(c)) == len(DEVELOPMENT_COMMANDS)


# --- the CLI on the image's package ----------------------------------------------------------


@pytest.fixture(scope="module")
def image_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the ``scaleset`` package without the development packages (as in the image),
    first on ``PYTHONPATH`` so that it shadows the checkout's."""
    source = Path(scaleset.__file__).parent
    left_out = {p.removeprefix("scaleset.") for p in DEVELOPMENT_PACKAGES}

    def ignore(directory: str, names: list[str]) -> set[str]:
        dropped = {"__pycache__"}
        if Path(directory) == source:
            dropped |= left_out
        return dropped & set(names)

    root = tmp_path_factory.mktemp("image-site")
    shutil.copytree(source, root / "scaleset", ignore=ignore)
    return root


def run_image_cli(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scaleset", *args],
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_copy_is_what_the_image_imports(image_package: Path) -> None:
    result = run_image_cli(image_package, "crds")
    assert result.returncode == 0, result.stderr
    probe = subprocess.run(
        [sys.executable, "-c", "import scaleset, scaleset.demo"],
        env={**os.environ, "PYTHONPATH": str(image_package)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert "No module named 'scaleset.demo'" in probe.stderr


@pytest.mark.parametrize(
    "args", [["--help"], ["dev", "--help"], ["dev", "real-apiserver", "--help"]], ids=" ".join
)
def test_help_is_the_same_without_the_development_packages(
    image_package: Path, args: list[str]
) -> None:
    in_image = run_image_cli(image_package, *args)
    in_checkout = subprocess.run(
        [sys.executable, "-m", "scaleset", *args], capture_output=True, text=True, check=False
    )
    assert in_image.returncode == 0, in_image.stderr
    assert in_image.stdout == in_checkout.stdout


@pytest.mark.parametrize("args", DEVELOPMENT_COMMANDS, ids=" ".join)
def test_a_development_command_says_in_one_line_that_it_is_not_in_the_image(
    image_package: Path, args: list[str]
) -> None:
    result = run_image_cli(image_package, *args)
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.strip().count("\n") == 0, result.stderr
    command = " ".join(args[:2])
    assert result.stderr.startswith(f"scaleset {command}: not in this image"), result.stderr


@pytest.mark.parametrize("args", DEVELOPMENT_COMMANDS, ids=" ".join)
def test_a_development_command_help_still_works_in_the_image(
    image_package: Path, args: list[str]
) -> None:
    result = run_image_cli(image_package, *args, "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout
