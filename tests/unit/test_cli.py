"""The command line: every subcommand is listed; bad options exit 2 with one line."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from scaleset.cli import app
from scaleset.controllers import manager_process

SUBCOMMANDS = [
    "controller",
    "listener",
    "demo",
    "crds",
    "apiserver",
    "fake-github",
    "doctor",
    "simulate",
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


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def assert_one_clean_line(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    """The command failed with one line on stderr naming the problem, and no Python traceback."""
    assert "Traceback" not in result.stderr + result.stdout
    assert len(_lines(result.stderr)) == 1, result.stderr
    for needle in needles:
        assert needle in result.stderr


def test_crds_output_dir_at_a_file_is_one_line(tmp_path: Path) -> None:
    afile = tmp_path / "crds.yaml"
    afile.write_text("")
    result = run_cli("crds", "--output-dir", str(afile))
    assert result.returncode == 1
    assert_one_clean_line(result, "--output-dir", str(afile))


def test_crds_output_dir_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    afile = tmp_path / "crds.yaml"
    afile.write_text("")
    result = run_cli("crds", "--output-dir", str(afile / "deploy"))
    assert result.returncode == 1
    assert_one_clean_line(result, "--output-dir")


@pytest.mark.parametrize("port", ["-1", "65536"])
def test_apiserver_bad_port_exits_2_with_one_line(port: str) -> None:
    result = run_cli("apiserver", "--port", port)
    assert result.returncode == 2
    assert_one_clean_line(result, "--port")


def test_demo_with_a_missing_kubeconfig_is_a_bad_option() -> None:
    result = run_cli("demo", "--kubeconfig", "/nonexistent/kubeconfig")
    assert result.returncode == 2
    assert_one_clean_line(result, "--kubeconfig", "/nonexistent/kubeconfig")


@pytest.mark.parametrize(
    ("args", "named", "not_named"),
    [
        (["--jobs", "-1"], "--jobs", ("--duration", "--grace")),
        (["--duration", "-5"], "--duration", ("--jobs", "--grace")),
        (["--grace", "-1"], "--grace", ("--jobs", "--duration")),
        (["--seeds", "0"], "--seeds", ("--parallel",)),
        (["--parallel", "0"], "--parallel", ("--seeds",)),
    ],
)
def test_demo_bad_number_names_its_own_flag(
    args: list[str], named: str, not_named: tuple[str, ...]
) -> None:
    result = run_cli("demo", *args)
    assert result.returncode == 2
    assert_one_clean_line(result, named)
    for other in not_named:
        assert other not in result.stderr


def test_demo_help_lists_every_chaos_profile() -> None:
    from scaleset.demo.workload import CHAOS_PROFILES

    text = " ".join(CliRunner().invoke(app, ["demo", "--help"]).output.split())
    missing = [name for name in CHAOS_PROFILES if name not in text]
    assert not missing, f"demo --help does not name: {missing}"


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path under ``command`` (typer's own click: groups have ``commands``)."""
    found = [path]
    if isinstance(getattr(command, "commands", None), dict):
        for name, child in command.commands.items():
            found.extend(_commands(child, (*path, name)))
    return found


ISSUE_NUMBER = re.compile(r"\bissues?\s+#?\d+|#\d+\b|\bPR\s+#?\d+", re.IGNORECASE)


def test_no_help_text_cites_an_issue_number() -> None:
    root = typer.main.get_command(app)
    cited = {}
    paths = _commands(root)
    assert ("dev", "real-apiserver", "start") in paths
    for path in paths:
        output = CliRunner().invoke(app, [*path, "--help"], terminal_width=200).output
        if ISSUE_NUMBER.search(output):
            cited[" ".join(path) or "scaleset"] = ISSUE_NUMBER.findall(output)
    assert not cited, cited


# --- scaleset controller: ARC's flags, old and new -----------------------------------------------

CONTROLLER_BASE = ["controller", "--controller-namespace", "arc-systems", "--listener-image", "x"]


def controller_options(
    monkeypatch: pytest.MonkeyPatch, *args: str
) -> manager_process.ControllerOptions:
    """The options ``scaleset controller ARGS`` would run with (validated; nothing served)."""
    captured: list[manager_process.ControllerOptions] = []

    def capture(options: manager_process.ControllerOptions) -> int:
        manager_process.validate(options)
        captured.append(options)
        return 0

    monkeypatch.setattr(manager_process, "run", capture)
    result = CliRunner().invoke(app, [*CONTROLLER_BASE, *args])
    assert result.exit_code == 0, result.output
    return captured[0]


def test_arc_0_15_per_controller_flags_set_each_controllers_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options = controller_options(
        monkeypatch,
        "--autoscaling-runner-set-max-concurrent-reconciles=3",
        "--autoscaling-listener-max-concurrent-reconciles=4",
        "--ephemeral-runner-set-max-concurrent-reconciles=5",
        "--ephemeral-runner-max-concurrent-reconciles=6",
    )
    assert options.workers_for("autoscalingrunnerset") == 3
    assert options.workers_for("autoscalinglistener") == 4
    assert options.workers_for("ephemeralrunnerset") == 5
    assert options.workers_for("ephemeralrunner") == 6


def test_the_global_flag_sets_arcs_controllers_that_have_no_flag_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options = controller_options(
        monkeypatch,
        "--default-max-concurrent-reconciles=7",
        "--ephemeral-runner-set-max-concurrent-reconciles=2",
    )
    assert options.workers_for("autoscalingrunnerset") == 7
    assert options.workers_for("autoscalinglistener") == 7
    assert options.workers_for("ephemeralrunner") == 7
    assert options.workers_for("ephemeralrunnerset") == 2
    assert options.workers_for("registrationpass", 1) == 1  # scaleset's own: --workers only


def test_which_workers_flag_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--workers NAME=N`` (scaleset's), then ARC 0.15's per-controller flag, then ARC 0.14's
    ``--runner-max-concurrent-reconciles``, then the global flag, then the controller's own."""
    options = controller_options(
        monkeypatch,
        "--default-max-concurrent-reconciles=3",
        "--runner-max-concurrent-reconciles=4",
        "--ephemeral-runner-max-concurrent-reconciles=5",
        "--workers=ephemeralrunner=6",
    )
    assert options.workers_for("ephemeralrunner") == 6
    assert controller_options(monkeypatch).workers_for("ephemeralrunner", 2) == 2
    assert (
        controller_options(
            monkeypatch,
            "--runner-max-concurrent-reconciles=4",
            "--default-max-concurrent-reconciles=3",
        ).workers_for("ephemeralrunner")
        == 4
    )


@pytest.mark.parametrize(
    "flag",
    [
        "--default-max-concurrent-reconciles",
        "--autoscaling-runner-set-max-concurrent-reconciles",
        "--ephemeral-runner-max-concurrent-reconciles",
    ],
)
def test_a_worker_count_below_one_is_refused_naming_its_flag(flag: str) -> None:
    result = run_cli(*CONTROLLER_BASE, f"{flag}=0")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert flag in result.stderr


def test_update_strategy_is_accepted_and_ignored_with_a_warning() -> None:
    """A kustomized ARC 0.14 manifest passes --update-strategy: the controller starts (here it
    stops at the missing kubeconfig, after logging the warning) instead of exiting on usage."""
    result = run_cli(
        *CONTROLLER_BASE, "--update-strategy=eventual", "--kubeconfig", "/nonexistent/kubeconfig"
    )
    assert "No such option" not in result.stderr
    assert result.returncode == 1
    warning = next(line for line in _lines(result.stderr) if "update-strategy" in line)
    assert "warn" in warning
    assert "ignored" in warning


def test_ignored_chart_values_are_logged_at_start() -> None:
    ignored = json.dumps([{"key": "flags.updateStrategy", "why": "runner sets change in place"}])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scaleset",
            *CONTROLLER_BASE,
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "--log-format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "SCALESET_IGNORED_VALUES": ignored},
    )
    records = [json.loads(line) for line in _lines(result.stderr)]
    warned = [r for r in records if r.get("setting") == "flags.updateStrategy"]
    assert warned, records
    assert warned[0]["level"] == "warning"
    assert warned[0]["reason"] == "runner sets change in place"


@pytest.mark.parametrize(
    "args",
    [
        ["--workers", "bogus=2"],
        ["--sync-period", "soon"],
        ["--log-level", "loud"],
        ["--kubeconfig", "/nonexistent/kubeconfig"],
        ["--default-max-concurrent-reconciles=0"],
    ],
)
def test_start_up_errors_honour_log_format_json(args: list[str]) -> None:
    result = run_cli(*CONTROLLER_BASE, "--log-format", "json", *args)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    records = [json.loads(line) for line in _lines(result.stderr)]
    assert records[-1]["level"] == "error"
    assert records[-1]["error"]


# --- the demo extra ------------------------------------------------------------------------------

WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # as if not installed: find_spec gives None, import fails
sys.argv = ["scaleset", *sys.argv[2:]]
from scaleset.cli import main
main()
"""


def test_demo_extra_is_pyprojects() -> None:
    import tomllib

    from packaging.requirements import Requirement

    from scaleset.cli import DEMO_EXTRA

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["demo"]
    assert sorted(DEMO_EXTRA) == sorted(Requirement(line).name for line in extra)


def test_controller_defaults_are_controller_options_defaults() -> None:
    """The controller command states each default again (typer shows it in --help); each is
    ``ControllerOptions``' own, which takes it from the runtime part that uses it."""
    defaults = {
        field.name: field.default
        for field in dataclasses.fields(manager_process.ControllerOptions)
        if field.default is not dataclasses.MISSING
    }
    flags = {
        param.name: param.default
        for param in typer.main.get_group(app).commands["controller"].params
    }
    renamed = {
        "k8s_client_rate_limiter_qps": "k8s_client_qps",
        "k8s_client_rate_limiter_burst": "k8s_client_burst",
        "graceful_shutdown_timeout": "graceful_shutdown",
    }
    compared = {
        flag: (default, defaults[renamed.get(flag, flag)])
        for flag, default in flags.items()
        if flag is not None and renamed.get(flag, flag) in defaults and flag != "sync_period"
    }
    assert {flag: pair for flag, pair in compared.items() if pair[0] != pair[1]} == {}
    assert len(compared) >= 15, sorted(compared)
    assert manager_process.parse_duration(flags["sync_period"]) == defaults["sync_period"]


def test_demo_and_simulate_defaults_are_their_options_defaults() -> None:
    """The CLI states the defaults of demo and simulate again (it imports those packages only
    when the command runs, and the image has neither): they stay the dataclasses' defaults."""
    from scaleset.demo.options import DemoOptions
    from scaleset.simulate.model import Parameters

    commands = typer.main.get_group(app).commands
    demo = {param.name: param for param in commands["demo"].params}
    options = DemoOptions()
    assert (demo["seed"].default, demo["grace"].default, demo["chaos"].default) == (
        options.seed,
        options.grace,
        options.chaos,
    )
    helps = {name: getattr(demo[name], "help", "") or "" for name in demo}
    assert f"[default: {options.jobs}]" in helps["jobs"]
    assert f"[default: {options.duration:g}]" in helps["duration"]
    assert f"[default: {options.min_runners}:{options.max_runners}]" in helps["runners"]
    simulate = {param.name: param.default for param in commands["simulate"].params}
    parameters = Parameters()
    for name in ("max_runners", "pod_start", "node_scale_up", "runners_per_node", "jit_rate"):
        assert simulate[name] == getattr(parameters, name), name


@pytest.mark.parametrize(
    ("command", "missing", "named"),
    [
        (["demo"], "aiohttp", "aiohttp"),
        (["apiserver"], "jsonpatch", "jsonpatch"),
        (["fake-github"], "aiohttp,jsonpatch", "aiohttp and jsonpatch"),
    ],
)
def test_a_command_of_the_embedded_servers_without_the_demo_extra_says_so_in_one_line(
    command: list[str], missing: str, named: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT, missing, *command],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"scaleset {command[0]}: needs {named}, which scaleset's demo extra installs: "
        "pip install -e '.[demo]' in a checkout\n"
    )
