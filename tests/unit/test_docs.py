"""The user documentation under docs/ stays true to the code.

- docs/configuration.md is exactly what ``scaleset dev config-reference`` generates, and every
  key of every chart's values.yaml has a description;
- the environment variables it lists are the ones the controllers read, with their defaults;
- docs/troubleshooting.md lists every Event/decision reason the code has, and none it lacks;
- docs/doctor.md lists every doctor check; docs/metrics.md every metric the code defines;
- the values examples of docs/install.md render with the charts (Helm's own engine);
- relative links between the docs point at files and headings that exist, inside the
  repository; no page cites a file outside it, and docs/lifecycle.md holds the rules L0–L10.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import typer
import yaml
from tests.support.helm import render

from scaleset.api import keys
from scaleset.cli import app
from scaleset.controllers.ephemeralrunner.settings import Settings as RunnerSettings
from scaleset.controllers.ephemeralrunnerset.settings import Settings as RunnerSetSettings
from scaleset.controllers.registrationpass.settings import Settings as PassSettings
from scaleset.controllers.registry import environment_variables
from scaleset.devtools.config_reference import find_charts, generate
from scaleset.doctor.checks import GITHUB_CHECKS, KUBERNETES_CHECKS
from scaleset.simulate.model import Parameters

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "scaleset"
DOCS = ROOT / "docs"
CHARTS = ROOT / "deploy" / "charts"


def controller_command() -> typer.core.TyperCommand:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    command = group.commands["controller"]
    assert isinstance(command, typer.core.TyperCommand)
    return command


# --- configuration.md ---------------------------------------------------------------------------


def test_configuration_md_is_the_generated_reference() -> None:
    committed = (DOCS / "configuration.md").read_text()

    assert committed == generate(CHARTS, controller_command(), environment_variables()), (
        "docs/configuration.md is out of date: run "
        "`scaleset dev config-reference --output docs/configuration.md`"
    )


CHART_DIRS = [path.parent.name for path in sorted(CHARTS.glob("*/values.yaml"))]


@pytest.mark.parametrize("chart", CHART_DIRS or ["-"])
def test_every_values_key_has_a_description(chart: str) -> None:
    charts = {c.values_file.parent.name: c for c in find_charts(CHARTS)}
    if chart == "-":
        pytest.skip("no chart under deploy/charts yet")

    assert charts[chart].undocumented == (), (
        f"keys of {chart}/values.yaml without a `# --` description: {charts[chart].undocumented}"
    )


def scaleset_variables_in_source() -> set[str]:
    found: set[str] = set()
    for path in SRC.glob("controllers/**/*.py"):
        found.update(re.findall(r"\bSCALESET_[A-Z][A-Z_]*[A-Z]\b", path.read_text()))
    return found


def test_the_documented_scaleset_variables_are_the_ones_the_controllers_read() -> None:
    documented = {v.name for v in environment_variables() if v.name.startswith("SCALESET_")}

    assert documented == scaleset_variables_in_source()


def test_the_documented_defaults_are_the_controllers_defaults() -> None:
    runner, runner_set, registration = RunnerSettings(), RunnerSetSettings(), PassSettings()
    actual = {
        "SCALESET_JOB_COMPLETION_GRACE": runner.grace_period,
        "SCALESET_RUNNER_POD_PENDING_TIMEOUT": runner.pod_pending_timeout,
        "SCALESET_RUNNER_SET_MAX_CONCURRENT_CREATES": runner_set.apply.max_concurrent_creates,
        "SCALESET_RUNNER_SET_BREAKER_THRESHOLD": runner_set.plan.breaker_threshold,
        "SCALESET_REGISTRATION_PASS_INTERVAL": registration.interval,
        "SCALESET_REGISTRATION_PASS_MAX_DELETIONS": registration.max_deletions,
        "SCALESET_RUNNER_OFFLINE_BOUND": registration.offline_bound,
    }
    documented = {v.name: v.default for v in environment_variables()}

    for name, value in actual.items():
        assert float(documented[name]) == value, name
    assert registration.max_runner_age is None
    assert documented["SCALESET_MAX_RUNNER_AGE"].startswith("unset")


# --- troubleshooting.md -------------------------------------------------------------------------

EMITTERS = sorted(
    [*SRC.glob("controllers/**/*.py"), *SRC.glob("listener/**/*.py"), SRC / "api/validation.py"]
)
"""Every module that decides, counts or posts a reason (``api/validation.py``: the reasons of
what the controllers' policy refuses)."""

REASON_SHAPED = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][a-zA-Z0-9]*)+$")

NOT_REASONS = {
    # kinds
    "AutoscalingListener",
    "AutoscalingRunnerSet",
    "ConfigMap",
    "EphemeralRunner",
    "EphemeralRunnerSet",
    "RoleBinding",
    "ServiceAccount",
    # condition types (their reasons are listed)
    "ControllerConflict",
    "ListenerRunning",
    "ReplicasAccepted",
    "RetryPod",
    "RunnerPod",
    "RunnerSetConflict",
    "RunnersCanReadSecrets",
    "TerminalRunners",
    "ValuesIgnored",
    # kubelet/scheduler reasons the code reads from pods (mapped to our own reasons)
    "ContainerCreating",
    "CreateContainerConfigError",
    "CreateContainerError",
    "ErrImageNeverPull",
    "ErrImagePull",
    "FallbackToLogsOnError",
    "ImagePullBackOff",
    "InvalidImageName",
    "NodeAffinity",
    "NodeSelector",
    "OutOf",
    "PodInitializing",
    "PodScheduled",
    "UnexpectedAdmissionError",
    # a seccomp profile type (the listener pod's security context)
    "RuntimeDefault",
    # GitHub message types (listener metric labels)
    "JobCompleted",
    "JobStarted",
    # EphemeralRunnerSet action labels that are never counted nor posted
    "AddFinalizer",
    "JitRequestInFlight",
    "MoreToCreate",
    "RunnersGone",
    "StatusChanged",
    "StatusPaced",
    "WaitingForBusyRunners",
}
"""Reason-shaped strings in the emitting modules that are not reasons."""

CONDITION_ONLY = {"Accepted", "Created", "Ready"}
"""Reasons of EphemeralRunnerSet/EphemeralRunner conditions that are never an Event or a count
(``_set_condition``/``_condition``, not the Event-posting ``Cond`` of the other two)."""

OTHER_SHAPES = {"Evicted", "OOMKilled"}
"""Reasons the listener pod's end gives that the shape above misses (checked to be in the code)."""

COMPOSED = {
    # AutoscalingListener deletion: Note(f"{kind.kind}Deleted") for each object it owns
    'Note(f"{kind.kind}Deleted")': (
        "PodDeleted",
        "SecretDeleted",
        "RoleBindingDeleted",
        "RoleDeleted",
        "ServiceAccountDeleted",
    ),
}


def _literal(node: ast.AST | None) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _literal(node.body) + _literal(node.orelse)
    return []


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


POSITIONS = {"Note": 0, "Cond": 1, "EmitEvent": 1, "emit": 2, "GitHubAccessError": 0}
"""Calls whose argument at that position is a reason."""


def reasons_in_code() -> set[str]:
    """Reason-shaped string constants anywhere in the emitting modules, plus any constant in a
    reason position (``Note(r)``, ``Cond(s, r)``, ``EmitEvent(t, r)``, ``emit(o, t, r)``,
    ``reason=r``, a ``reason: str = r`` default), minus ``NOT_REASONS`` and ``CONDITION_ONLY``."""
    found: set[str] = set()
    for path in EMITTERS:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if REASON_SHAPED.match(node.value):
                    found.add(node.value)
            elif isinstance(node, ast.Call):
                position = POSITIONS.get(_callee(node))
                if position is not None and len(node.args) > position:
                    found.update(_literal(node.args[position]))
                for keyword in node.keywords:
                    if keyword.arg == "reason":
                        found.update(_literal(keyword.value))
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == "reason"
            ):
                found.update(_literal(node.value))
    return (found - NOT_REASONS - CONDITION_ONLY - {""}) | {keys.REASON_INVALID_POD}


def reasons_in_doc() -> set[str]:
    """The backticked names in the first cell of the rows of troubleshooting.md's tables whose
    first column is "Reason"."""
    listed: set[str] = set()
    header: str | None = None  # the header row of the table the line is in
    for line in (DOCS / "troubleshooting.md").read_text().splitlines():
        if not line.startswith("|"):
            header = None
        elif header is None:
            header = line
        elif header.startswith("| Reason |") and line.startswith("| `"):
            listed.update(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return listed


def test_simulate_md_states_the_models_own_defaults() -> None:
    """docs/simulate.md's table of the model says its latencies in words; they are
    ``Parameters``' defaults (the listener's pacing is the listener's own), not a second
    declaration that may drift."""
    p = Parameters()
    text = " ".join((DOCS / "simulate.md").read_text().split())
    stated = [
        f"job events reach the listener {p.message_latency:g} s later",
        f"an empty long poll returns after {p.poll_timeout:g} s",
        f"calls at most {p.jit_rate:g} a second | `--jit-rate {p.jit_rate:g}`",
        f"a patch at most every {p.patch_interval:g} s while messages come",
        f"the EphemeralRunnerSet controller {p.reconcile_latency:g} s later",
        f"`--pod-start {p.pod_start:g}`",
        f"removed after {p.node_idle / 60:g} minutes empty",
        f"an idle runner to its job running {p.pickup:g} s",
        f"pod gone {p.delete_latency:g} s later",
    ]
    assert [phrase for phrase in stated if phrase not in text] == []


def test_troubleshooting_lists_every_reason_the_code_has() -> None:
    composed = {name for names in COMPOSED.values() for name in names}
    missing = (reasons_in_code() | OTHER_SHAPES | composed) - reasons_in_doc()

    assert not missing, f"reasons missing from docs/troubleshooting.md: {sorted(missing)}"


def test_troubleshooting_lists_no_reason_the_code_lacks() -> None:
    composed = {name for names in COMPOSED.values() for name in names}
    extra = reasons_in_doc() - reasons_in_code() - OTHER_SHAPES - composed

    assert not extra, f"docs/troubleshooting.md lists reasons the code lacks: {sorted(extra)}"


def test_the_reasons_the_scan_cannot_see_are_in_the_code() -> None:
    source = "\n".join(path.read_text() for path in EMITTERS)

    for reason in OTHER_SHAPES:
        assert f'"{reason}"' in source, reason
    for pattern in COMPOSED:
        assert pattern in source, pattern
    plan = (SRC / "controllers" / "autoscalinglistener" / "plan.py").read_text()
    for kind in ("POD", "SECRET", "ROLE_BINDING", "ROLE", "SERVICE_ACCOUNT"):
        assert f"({kind}, " in plan, kind  # the objects whose deletion is f"{kind.kind}Deleted"


def test_the_scan_finds_reasons_in_every_position() -> None:
    """The collector itself: a reason in each position is found, a kind is not."""
    found = reasons_in_code()

    assert {"PodLostAfterStart", "ScaleSetRegistered", "RegistrationMissing"} <= found
    assert {"Valid", "Registered", "Unschedulable", "Pending", "Running", "Restarting"} <= found
    assert {"InvalidPod", "PoisonMessage", "ReapTerminal", "GitHubSecretMissing"} <= found
    assert not (found & NOT_REASONS)


# --- doctor.md, metrics.md, links ---------------------------------------------------------------


def test_doctor_md_has_a_section_per_check() -> None:
    text = (DOCS / "doctor.md").read_text()
    sections = set(re.findall(r"^### `([a-z-]+)`", text, flags=re.MULTILINE))

    assert sections == set(KUBERNETES_CHECKS) | set(GITHUB_CHECKS)


METRIC_NAME = re.compile(
    r"\"((?:gha|scaleset|workqueue|controller_runtime|rest_client|github_api|leader_election)"
    r"_[a-z_]+)\""
)


def _base(name: str) -> str:
    """A metric's name without the ``_total`` prometheus_client adds to (or keeps on) counters."""
    return name.removesuffix("_total")


def metrics_in_code() -> set[str]:
    """Metric-name string constants in the product (not the embedded test servers or the demo):
    the names given to prometheus_client, directly, through a module constant or a name table
    (the listener's ARC metrics)."""
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        if "embedded" in path.parts or "demo" in path.parts:
            continue
        found.update(_base(name) for name in METRIC_NAME.findall(path.read_text()))
    return found


def metrics_in_doc() -> set[str]:
    listed: set[str] = set()
    for line in (DOCS / "metrics.md").read_text().splitlines():
        if line.startswith("| `"):
            listed.update(_base(n) for n in re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return listed


def test_metrics_md_lists_every_metric_and_only_those() -> None:
    code, doc = metrics_in_code(), metrics_in_doc()

    assert code - doc == set(), f"metrics missing from docs/metrics.md: {sorted(code - doc)}"
    assert doc - code == set(), f"docs/metrics.md lists unknown metrics: {sorted(doc - code)}"


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to '-'."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(), flags=re.MULTILINE):
        found.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return found


PAGES = sorted(
    str(path.relative_to(ROOT))
    for path in [ROOT / "README.md", *DOCS.glob("*.md"), *(ROOT / "deploy").rglob("*.md")]
)
"""Every Markdown page of the repository a user reads."""


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_point_at_files_and_headings_that_exist(page: str) -> None:
    source = ROOT / page
    text = source.read_text()
    for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", text):
        if "://" in target or target.startswith("mailto:"):
            continue
        path = (source.parent / target).resolve() if target else source
        assert path.is_relative_to(ROOT), f"{page} links to {target}, outside the repository"
        assert path.exists(), f"{page} links to {target}, which does not exist"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"{page} links to {target}#{anchor}: no such heading"


OUTSIDE = re.compile(
    r"\.\./shared\b|/work/|(?<![\w/])spec/(?:lifecycle|kubernetes|actions-protocol)\.md"
)
"""A citation of a file that is not in the repository (the project's working notes)."""
CITING_FILES = sorted(
    str(path.relative_to(ROOT))
    for path in [
        ROOT / "README.md",
        *DOCS.glob("*.md"),
        *(ROOT / "deploy").rglob("*.md"),
        *(ROOT / "deploy").rglob("*.yaml"),
        *(ROOT / "deploy").rglob("*.tpl"),
        *(ROOT / "deploy").rglob("*.txt"),
    ]
)
LIFECYCLE_CITING = sorted(
    str(path.relative_to(ROOT))
    for path in [
        *SRC.rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "bench").rglob("*.py"),
    ]
    if path != Path(__file__).resolve()
)


@pytest.mark.parametrize("page", CITING_FILES)
def test_no_page_cites_a_file_outside_the_repository(page: str) -> None:
    cited = OUTSIDE.findall((ROOT / page).read_text())
    assert not cited, f"{page} cites files outside the repository: {cited}"


def test_code_cites_the_lifecycle_rules_in_the_repository() -> None:
    """The rules' page is docs/lifecycle.md; no code, test or benchmark cites the old notes (the
    lifecycle rules, ARC's and GitHub's fact sheets), which are not in the repository."""
    old = re.compile(
        r"(?<![\w/])(?:spec/)?(?:lifecycle|kubernetes|actions-protocol)\.md(?= §)"
        r"|(?<![\w/])spec/(?:lifecycle|kubernetes|actions-protocol)\.md"
        r"|\bprotocol §|\.\./shared\b|/work/shared"
    )
    citing = [page for page in LIFECYCLE_CITING if old.search((ROOT / page).read_text())]
    assert not citing, citing


def test_the_lifecycle_page_has_every_rule() -> None:
    text = (DOCS / "lifecycle.md").read_text()
    headings = re.findall(r"^## (L\d+) — ", text, flags=re.MULTILINE)
    assert headings == [f"L{n}" for n in range(11)]


def install_examples() -> list[dict[str, object]]:
    """The values files shown in install.md (its ```yaml blocks)."""
    text = (DOCS / "install.md").read_text()
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def test_the_install_values_examples_render_with_the_charts() -> None:
    examples = install_examples()
    runner_sets = [values for values in examples if "githubConfigUrl" in values]
    controllers = [values for values in examples if "githubConfigUrl" not in values]
    assert len(runner_sets) == 2
    assert len(controllers) == 1

    for values in controllers:
        objects = render(
            CHARTS / "scaleset-controller", values, name="arc", namespace="arc-systems"
        )
        names = {(o["kind"], o["metadata"]["name"]) for o in objects}
        assert ("Deployment", "arc-gha-rs-controller") in names
        assert ("ServiceAccount", "arc-gha-rs-controller") in names
        assert ("PodDisruptionBudget", "arc-gha-rs-controller") in names
    for values in runner_sets:
        # helm template renders without a cluster: the controller's ServiceAccount is given
        given = {"namespace": "arc-systems", "name": "arc-gha-rs-controller"}
        objects = render(
            CHARTS / "scaleset-runner-set",
            {**values, "controllerServiceAccount": given},
            name="arc-runner-set",
            namespace="arc-runners",
        )
        kinds = {o["kind"]: o for o in objects}
        assert kinds["AutoscalingRunnerSet"]["metadata"]["name"] == "arc-runner-set"
        secret = kinds["AutoscalingRunnerSet"]["spec"]["githubConfigSecret"]
        if isinstance(values["githubConfigSecret"], dict):
            assert secret == "arc-runner-set-gha-rs-github-secret"
        else:
            assert secret == values["githubConfigSecret"]


def labels_in_code() -> dict[str, tuple[str, ...]]:
    """Every metric the processes export, with its label names: each metrics holder built on a
    fresh registry (the listener with ARC's default metrics spec), read back from the registry."""
    from prometheus_client import CollectorRegistry

    from scaleset.controllers.autoscalinglistener.metrics import ListenerDecisionMetrics
    from scaleset.controllers.autoscalingrunnerset.metrics import ScaleSetDecisionMetrics
    from scaleset.controllers.ephemeralrunner.metrics import RunnerDecisionMetrics
    from scaleset.controllers.ephemeralrunnerset.metrics import RunnerSetMetrics
    from scaleset.controllers.registrationpass.metrics import PassDecisionMetrics
    from scaleset.listener.metrics import ListenerMetrics, ScaleSetIdentity

    registry = CollectorRegistry()
    RunnerSetMetrics(registry)
    for decisions in (
        ListenerDecisionMetrics,
        ScaleSetDecisionMetrics,
        RunnerDecisionMetrics,
        PassDecisionMetrics,
    ):
        decisions(registry)
    collectors = list(registry._collector_to_names)  # prometheus_client's index
    listener = ListenerMetrics(ScaleSetIdentity("s", "ns"))  # runtime and GitHub metrics too
    collectors += list(listener.registry._collector_to_names)
    found: dict[str, tuple[str, ...]] = {}
    for collector in collectors:
        name = getattr(collector, "_name", None)
        if isinstance(name, str):
            found[_base(name)] = tuple(getattr(collector, "_labelnames", ()))
    return found


def labels_in_doc() -> dict[str, tuple[str, ...]]:
    """The Labels column of docs/metrics.md per metric (``same``: the row above's)."""
    found: dict[str, tuple[str, ...]] = {}
    previous: tuple[str, ...] = ()
    for line in (DOCS / "metrics.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        text = cells[2]
        labels = (
            previous
            if text == "same"
            else tuple(label.strip(" `") for label in text.split(",") if label.strip(" `—-"))
        )
        for name in re.findall(r"`([a-z_]+)`", cells[0]):
            found[_base(name)] = labels
        previous = labels
    return found


def test_metrics_md_gives_each_metric_the_labels_the_code_gives_it() -> None:
    documented = labels_in_doc()
    wrong = {
        name: {"code": sorted(labels), "doc": sorted(documented.get(name, ()))}
        for name, labels in labels_in_code().items()
        if name in documented and sorted(labels) != sorted(documented[name])
    }
    assert not wrong, wrong
    assert len(labels_in_code()) > 20  # the holders above really were read


# --- README and install.md: for a new user -----------------------------------------------------


def test_readmes_first_sh_block_is_the_two_commands_ci_runs() -> None:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"^```sh\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)
    assert block is not None
    assert block.group(1).splitlines() == [
        "python3 -m venv .venv && .venv/bin/pip install -e '.[demo]' && .venv/bin/scaleset demo",
        "scripts/test",
    ]


def test_readme_says_how_to_install_without_a_published_image() -> None:
    text = " ".join((ROOT / "README.md").read_text().split())
    for words in (
        "No scaleset image and no chart is published",
        "scripts/build-image",
        "deploy/charts/scaleset-controller",
        "refuses to install while no image is set",
        "kubectl",
    ):
        assert words in text, words


ISSUE_CITATION = re.compile(r"\bissues?\s+#?\d+|(?<![\w/&])#\d{2,}\b", re.IGNORECASE)


@pytest.mark.parametrize(
    "page",
    ["README.md", "docs/install.md", "docs/status.md", "docs/lifecycle.md", "docs/metrics.md"],
)
def test_user_pages_cite_no_issue_numbers(page: str) -> None:
    cited = ISSUE_CITATION.findall((ROOT / page).read_text())
    assert not cited, f"{page}: {cited}"


def test_install_md_states_the_kubernetes_floor_the_charts_declare() -> None:
    text = " ".join((DOCS / "install.md").read_text().split())
    assert "Kubernetes 1.21 or newer" in text
    for chart in ("scaleset-controller", "scaleset-runner-set"):
        meta = yaml.safe_load((CHARTS / chart / "Chart.yaml").read_text())
        assert meta["kubeVersion"] == ">=1.21.0-0", chart
    budget = (CHARTS / "scaleset-controller" / "templates" / "poddisruptionbudget.yaml").read_text()
    assert "apiVersion: policy/v1\n" in budget  # served from Kubernetes 1.21 on
