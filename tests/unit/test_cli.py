"""The command line: every subcommand is listed; bad options exit 2 with one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

SUBCOMMANDS = [
    "controller",
    "listener",
    "demo",
    "crds",
    "apiserver",
    "fake-github",
    "doctor",
    "dev",
]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scaleset", *args], capture_output=True, text=True, check=False
    )


def test_help_lists_every_subcommand() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for name in SUBCOMMANDS:
        assert name in result.stdout


def test_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("scaleset ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--output", "xml"], "--output"),
        (["--kubeconfig", "/nonexistent/kubeconfig"], "not found"),
    ],
)
def test_doctor_bad_options_exit_2_with_one_line(args: list[str], message: str) -> None:
    result = run_cli("doctor", *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().count("\n") == 0
    assert message in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runners", "5:2"], "--runners"),
        (["--chaos", "meteor"], "unknown profile"),
        (["--duration", "0"], "--duration"),
    ],
)
def test_demo_bad_options_exit_2_with_one_line(args: list[str], message: str) -> None:
    result = run_cli("demo", *args)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert message in result.stderr


def test_demo_help_lists_the_chaos_profiles_and_exit_codes() -> None:
    result = run_cli("demo", "--help")
    assert result.returncode == 0
    for needle in ("--chaos", "--runners", "--report", "spot", "outage", "Exit codes"):
        assert needle in result.stdout


def test_doctor_help_explains_itself() -> None:
    result = run_cli("doctor", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for words in ("--kubeconfig", "--namespace", "--output", "table or json", "GITHUB_TOKEN"):
        assert words in text
    assert "read-only" in text
    assert "0 healthy, 1 findings, 2 bad options" in text
