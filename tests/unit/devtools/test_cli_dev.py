"""``scaleset dev real-apiserver``: env and stop on a harness that is not running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scaleset", "dev", "real-apiserver", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_env_without_a_running_harness_exits_1_with_a_hint(tmp_path: Path) -> None:
    result = run_cli("env", "--state-dir", str(tmp_path))

    assert result.returncode == 1
    assert result.stdout == ""
    assert "not running" in result.stderr
    assert "scaleset dev real-apiserver start" in result.stderr


def test_stop_without_a_running_harness_is_ok(tmp_path: Path) -> None:
    result = run_cli("stop", "--state-dir", str(tmp_path / "nothing"))

    assert result.returncode == 0
    assert "not running" in result.stderr


def test_help_lists_the_four_subcommands() -> None:
    result = run_cli("--help")

    assert result.returncode == 0
    for name in ("build", "start", "stop", "env"):
        assert name in result.stdout
