"""The container image (./Dockerfile): built and run for real, plus the rules of its recipe.

``test_the_image_builds_and_runs`` builds the image with ``scripts/build-image --smoke`` (Debian
base from mmdebstrap, ``buildah bud`` of the Dockerfile) and runs it: ``scaleset --version``,
``scaleset listener --help``, the listener pod's command, UID 65532, a read-only root filesystem,
the development packages absent (``scaleset demo`` says so in one line), and the controller
against an embedded API server (run from the checkout: the image has none) until it is ready and
leads, then SIGTERM.
It takes minutes and needs root and buildah, so it runs only with ``SCALESET_TEST_IMAGE=1``
(CI runs the same script as its own step in ``.ci/run``).

The other tests read the Dockerfile itself, so a change that would break the image in a cluster
fails the ordinary suite: the listener pod's command must be an executable the image puts on
PATH, the final stage runs as a numeric non-root user and contains no build step, and the file
names no package index.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from scaleset.controllers.autoscalinglistener.settings import Settings, command_from_environ

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
BUILD_IMAGE = ROOT / "scripts" / "build-image"

SMOKE_CHECKS = (
    "smoke: scaleset --version -> scaleset ",
    "smoke: scaleset listener --help -> usage",
    "smoke: listener pod command 'scaleset listener' runs",
    "smoke: runs as UID 65532 (USER 65532:65532)",
    "smoke: read-only root filesystem: --version and the listener command run",
    "smoke: left out of the image: scaleset.embedded scaleset.demo scaleset.simulate "
    "scaleset.devtools",
    "smoke: not installed in the image (the demo extra): aiohttp jsonpatch",
    "smoke: scaleset demo -> exit 1, one line: not in this image",
    "smoke: 4 CRDs Established",
    "smoke: controller in the image (buildah run): /readyz 200, became leader",
    "smoke: controller in the image (buildah run): SIGTERM -> exit 0, lease released",
    "smoke: controller on a read-only root filesystem: /readyz 200, became leader",
    "smoke: controller on a read-only root filesystem: SIGTERM -> exit 0, lease released",
    "smoke: passed",
)


def _image_build_skip_reason() -> str | None:
    if os.environ.get("SCALESET_TEST_IMAGE") != "1":
        return "set SCALESET_TEST_IMAGE=1 to build and run the image (minutes; CI's own step)"
    if os.geteuid() != 0:
        return "building the image needs root (mmdebstrap, buildah with chroot isolation)"
    if shutil.which("buildah") is None and shutil.which("apt-get") is None:
        return "buildah is not installed and apt-get is not there to install it"
    return None


@pytest.mark.timeout(1800)
def test_the_image_builds_and_runs() -> None:
    reason = _image_build_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    result = subprocess.run(
        [str(BUILD_IMAGE), "--smoke"], capture_output=True, text=True, check=False, cwd=ROOT
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    missing = [check for check in SMOKE_CHECKS if check not in output]
    assert not missing, f"checks the smoke run did not report: {missing}\n{output}"


@dataclass
class Instruction:
    keyword: str
    arguments: str


def _stages() -> list[list[Instruction]]:
    """The Dockerfile's build stages, each a list of instructions (continuations joined)."""
    logical: list[str] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            logical.append(pending.strip())
            pending = ""
    stages: list[list[Instruction]] = []
    for text in logical:
        keyword, _, arguments = text.partition(" ")
        instruction = Instruction(keyword.upper(), arguments.strip())
        if instruction.keyword == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def _final_stage() -> list[Instruction]:
    return _stages()[-1]


def _env(stage: list[Instruction]) -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction in stage:
        if instruction.keyword == "ENV":
            env.update(re.findall(r"(\w+)=(\S+)", instruction.arguments))
    return env


def test_the_listener_pod_command_is_an_executable_the_image_puts_on_path() -> None:
    """The AutoscalingListener controller's default listener command (no LISTENER_ENTRYPOINT)
    names an executable of the image's venv, and that venv's bin is first on the image's PATH:
    the kubelet resolves a bare command name through the image's PATH."""
    command = Settings().command
    assert command == command_from_environ({})
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert command[0] in scripts, f"{command[0]!r} is not a console script of the package"
    path = _env(_final_stage())["PATH"].split(":")
    venv_bin = path[0]
    copied = [i.arguments for i in _final_stage() if i.keyword == "COPY"]
    venv = venv_bin.removesuffix("/bin")
    assert venv_bin.endswith("/bin")
    assert any(args.split()[-1] == venv for args in copied), f"no COPY of {venv} in {copied}"
    assert any(i.keyword == "RUN" and f"venv {venv}" in i.arguments for i in _stages()[0]), (
        f"the build stage makes no venv at {venv}"
    )


def test_the_final_stage_runs_as_a_numeric_non_root_user_and_has_no_build_step() -> None:
    """Numeric UID/GID (runAsNonRoot can only verify a number), not 0, and no RUN: nothing a
    build step mounted or wrote reaches the image, and nothing needs root at run time."""
    stage = _final_stage()
    users = [i.arguments for i in stage if i.keyword == "USER"]
    assert users, "the final stage sets no USER (it would run as root)"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit(), f"USER {users[-1]}: the UID is not a number"
    assert gid.isdigit(), f"USER {users[-1]}: the GID is not a number"
    assert int(uid) != 0, "USER is root"
    assert int(gid) != 0, "USER's group is root"
    assert [i for i in stage if i.keyword == "RUN"] == []
    env = _env(stage)
    assert env.get("PYTHONDONTWRITEBYTECODE") == "1", "Python would write bytecode at run time"
    assert env.get("HOME") == "/tmp", "HOME must be the only writable place, /tmp"


def test_the_dockerfile_names_no_package_index_and_compiles_bytecode() -> None:
    """pip's index comes from the builder's configuration (the pipconf secret), never the file."""
    instructions = [i for stage in _stages() for i in stage]
    text = " ".join(i.arguments for i in instructions)
    assert "://" not in text
    for option in ("--index-url", "--extra-index-url", "--find-links", "PIP_INDEX_URL"):
        assert option not in text, f"the Dockerfile sets {option.strip()}"
    runs = [i.arguments for i in instructions if i.keyword == "RUN"]
    pip_runs = [run for run in runs if "pip install" in run]
    assert pip_runs
    assert all("id=pipconf" in run for run in pip_runs)
    assert any("compileall" in i.arguments for i in _stages()[0] if i.keyword == "RUN")
