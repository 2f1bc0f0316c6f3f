"""``scaleset.devtools.config_reference``: helm-docs comments read from a values file, the
controller's flags and environment rendered, and the ``scaleset dev config-reference`` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer

from scaleset.cli import app
from scaleset.controllers.registry import environment_variables
from scaleset.devtools.config_reference import (
    chart_values,
    command_flags,
    find_charts,
    generate,
    render,
)

VALUES = """\
# -- Number of controller pods; one leads, the others wait.
replicaCount: 1

image:
  # -- Image repository.
  # Continues on the next line.
  repository: ghcr.io/example/scaleset
  # -- (string) Image tag.
  # @default -- the chart's appVersion
  tag: ""

# -- Security context of the pod.
podSecurityContext:
  fsGroup: 123
  runAsNonRoot: true

## a section title, not a description
# -- Extra containers of the runner pod.
template:
  spec:
    containers:
      - name: runner
        # -- not a key of the values: inside a list item
        image: runner:latest

# -- Added to every object.
annotations: |
  notAKey: inside a block scalar

undocumented:
  child: 1

flags:
  # -- Log level.
  logLevel: debug
  # -- Label prefixes not propagated.
  excludeLabelPropagationPrefixes: []
"""


def write_chart(root: Path, directory: str, values: str, name: str | None = None) -> Path:
    chart = root / directory
    chart.mkdir(parents=True)
    (chart / "values.yaml").write_text(values)
    if name is not None:
        (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
    return chart


def controller_command() -> typer.core.TyperCommand:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    command = group.commands["controller"]
    assert isinstance(command, typer.core.TyperCommand)
    return command


def test_helm_docs_comments_give_path_type_default_and_description(tmp_path: Path) -> None:
    chart = chart_values(write_chart(tmp_path, "c", VALUES, name="scaleset-controller"))

    assert chart.name == "scaleset-controller"
    rows = {e.path: (e.type, e.default, e.description) for e in chart.entries}
    assert rows == {
        "replicaCount": ("int", "1", "Number of controller pods; one leads, the others wait."),
        "image.repository": (
            "string",
            '"ghcr.io/example/scaleset"',
            "Image repository. Continues on the next line.",
        ),
        "image.tag": ("string", "the chart's appVersion", "Image tag."),
        "podSecurityContext": (
            "object",
            '{"fsGroup": 123, "runAsNonRoot": true}',
            "Security context of the pod.",
        ),
        "template": (
            "object",
            '{"spec": {"containers": [{"image": "runner:latest", "name": "runner"}]}}',
            "Extra containers of the runner pod.",
        ),
        "annotations": ("string", '"notAKey: inside a block scalar\\n"', "Added to every object."),
        "flags.logLevel": ("string", '"debug"', "Log level."),
        "flags.excludeLabelPropagationPrefixes": ("list", "[]", "Label prefixes not propagated."),
    }


def test_keys_no_description_covers_are_reported(tmp_path: Path) -> None:
    chart = chart_values(write_chart(tmp_path, "c", VALUES))

    # image and flags only group described keys; the children of podSecurityContext and
    # template are covered by their described parent; undocumented has nothing at all
    assert chart.undocumented == ("undocumented", "undocumented.child")
    assert chart.name == "c"  # no Chart.yaml: the directory's name


def test_charts_are_found_by_directory_and_a_missing_directory_is_no_chart(
    tmp_path: Path,
) -> None:
    write_chart(tmp_path, "b-chart", "# -- x\nx: 1\n", name="b")
    write_chart(tmp_path, "a-chart", "# -- y\ny: true\n", name="a")
    (tmp_path / "not-a-chart").mkdir()

    assert [c.name for c in find_charts(tmp_path)] == ["a", "b"]
    assert find_charts(tmp_path / "missing") == []


def test_controller_flags_come_from_the_command_with_their_environment() -> None:
    flags = {flag.names: flag for flag in command_flags(controller_command())}

    namespace = flags["`--controller-namespace`"]
    assert namespace.environment == "`CONTROLLER_MANAGER_POD_NAMESPACE`"
    assert "Required" in namespace.description
    assert flags["`--k8s-client-rate-limiter-burst`"].default == "`30`"
    assert flags["`--watch-namespace`, `--namespaces`"].default == "none"
    assert "`--help`" not in flags


def test_render_has_a_section_per_chart_and_the_flags_and_environment(tmp_path: Path) -> None:
    write_chart(tmp_path, "scaleset-controller", VALUES, name="scaleset-controller")
    text = generate(tmp_path, controller_command(), environment_variables())

    assert "## Chart `scaleset-controller`" in text
    assert "| `image.tag` | string | the chart's appVersion | Image tag. |" in text
    assert "| `replicaCount` | int | `1` |" in text
    assert "| `--log-level` |  | `debug` | debug, info, warn or error. |" in text
    for variable in environment_variables():
        assert variable.name.split(", ")[0] in text


def test_render_without_charts_says_so() -> None:
    text = render([], controller_command())

    assert "No chart under `deploy/charts` yet" in text
    assert "## `scaleset controller` command line" in text


def test_a_pipe_in_a_description_does_not_break_the_table(tmp_path: Path) -> None:
    write_chart(tmp_path, "c", "# -- a | b\nkey: 'x|y'\n")
    text = generate(tmp_path, controller_command())

    assert '| `key` | string | `"x\\|y"` | a \\| b |' in text


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scaleset", "dev", "config-reference", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def test_the_command_writes_and_checks_the_file(tmp_path: Path) -> None:
    charts = tmp_path / "charts"
    write_chart(charts, "c", "# -- x\nx: 1\n")
    target = tmp_path / "configuration.md"

    stale = run_cli("--charts", str(charts), "--output", str(target), "--check", cwd=tmp_path)
    assert stale.returncode == 1
    assert "out of date" in stale.stderr

    written = run_cli("--charts", str(charts), "--output", str(target), cwd=tmp_path)
    assert written.returncode == 0
    assert "| `x` | int | `1` | x |" in target.read_text()

    fresh = run_cli("--charts", str(charts), "--output", str(target), "--check", cwd=tmp_path)
    assert fresh.returncode == 0

    printed = run_cli("--charts", str(charts), cwd=tmp_path)
    assert printed.stdout == target.read_text()


EXPLICIT = """\
# metrics -- (object) Prometheus endpoints; absent disables them.
# Set all three to enable.
# metrics:
#   controllerManagerAddr: ":8080"
#   listenerAddr: ":8080"

# pprof.addr -- (string) Ignored.
pprof: {}

flags:
  # -- Log level.
  logLevel: debug
  # flags.watchSingleNamespace -- (string) Watch only this namespace.
  # watchSingleNamespace: ""
  # -- Probe address.
  healthProbeBindAddress: ":8081"
"""


def test_a_commented_out_key_is_documented_by_its_name(tmp_path: Path) -> None:
    chart = chart_values(write_chart(tmp_path, "c", EXPLICIT))

    rows = {e.path: (e.type, e.default, e.description) for e in chart.entries}
    assert rows == {
        # the commented-out example after the description is not part of it
        "metrics": (
            "object",
            "unset",
            "Prometheus endpoints; absent disables them. Set all three to enable.",
        ),
        "pprof.addr": ("string", "unset", "Ignored."),
        "flags.logLevel": ("string", '"debug"', "Log level."),
        "flags.watchSingleNamespace": ("string", "unset", "Watch only this namespace."),
        "flags.healthProbeBindAddress": ("string", '":8081"', "Probe address."),
    }
    assert not any(e.literal for e in chart.entries if e.default == "unset")
    # pprof's only key is commented out and described; flags only groups described keys
    assert chart.undocumented == ()
    assert [e.path for e in chart.entries][:2] == ["metrics", "pprof.addr"]  # file order
