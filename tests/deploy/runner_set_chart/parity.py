"""How the runner scale set chart's output is compared with ARC 0.14.2's: loading the goldens,
normalising what is only spelling, and the documented differences.

``DIFFERENCES`` is the complete list of ways our rendered objects differ from ARC's for the same
values. Each is a transformation of ARC's object into ours, with the reason; the parity test
applies them all to ARC's golden output and then requires equality, field for field.
``ERROR_DIFFERENCES`` lists the values our chart refuses while ARC's renders something.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from tests.deploy.runner_set_chart.cases import CHART, GOLDENS
from tests.support.helm import SOURCE

CHART_VERSION = str(yaml.safe_load((CHART / "Chart.yaml").read_text())["version"])
VALUES_HASH = "actions.github.com/values-hash"
HASH_FORMAT = re.compile(r"^[0-9a-f]{63}$")

Obj = dict[str, Any]


def load_golden(case: str) -> list[Obj]:
    text = (GOLDENS / f"{case}.yaml").read_text()
    return [document for document in yaml.safe_load_all(text) if document]


def normalised(obj: Any) -> Any:
    """``obj`` without what only differs in spelling: ``null`` fields are dropped (the API server
    stores ``annotations: null`` and no annotations alike), and so are empty
    ``metadata.labels``/``metadata.annotations`` maps. Empty lists and maps elsewhere are kept:
    ``volumes: []`` and ``emptyDir: {}`` mean something."""
    if isinstance(obj, dict):
        result = {key: normalised(value) for key, value in obj.items() if value is not None}
        result.pop(SOURCE, None)
        metadata = result.get("metadata")
        if isinstance(metadata, dict):
            for key in ("labels", "annotations"):
                if metadata.get(key) == {}:
                    del metadata[key]
        return result
    if isinstance(obj, list):
        return [normalised(item) for item in obj]
    return obj


def key_of(obj: Obj) -> tuple[str, str]:
    return str(obj["kind"]), str(obj["metadata"]["name"])


# --- documented differences ---------------------------------------------------------------------


def _chart_label(arc: Obj, ours: Obj) -> None:
    labels = arc["metadata"].get("labels", {})
    if labels.get("helm.sh/chart") == "gha-rs-0.14.2":
        labels["helm.sh/chart"] = f"scaleset-runner-set-{CHART_VERSION}"


def _values_hash(arc: Obj, ours: Obj) -> None:
    annotations = arc["metadata"].get("annotations", {})
    if arc["kind"] == "AutoscalingRunnerSet":
        mine = ours["metadata"].get("annotations", {}).get(VALUES_HASH, "")
        assert HASH_FORMAT.match(annotations[VALUES_HASH])
        assert HASH_FORMAT.match(mine), f"our {VALUES_HASH} is {mine!r}"
        annotations[VALUES_HASH] = mine


EVENTS_RULE = {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}


def _manager_role_events(arc: Obj, ours: Obj) -> None:
    if arc["kind"] == "Role" and arc["metadata"]["name"].endswith("-gha-rs-manager"):
        arc["rules"].append(copy.deepcopy(EVENTS_RULE))


MANAGER_ROLE_CUT: dict[tuple[str, str], frozenset[str]] = {
    ("", "pods/status"): frozenset({"get"}),
    ("", "serviceaccounts"): frozenset({"create", "delete", "list", "update"}),
    ("rbac.authorization.k8s.io", "rolebindings"): frozenset({"update"}),
    ("rbac.authorization.k8s.io", "roles"): frozenset({"update"}),
}
"""ARC's manager Role rules minus ours, by (API group, resource)."""


def _manager_role_least_privilege(arc: Obj, ours: Obj) -> None:
    if arc["kind"] != "Role" or not arc["metadata"]["name"].endswith("-gha-rs-manager"):
        return
    rules = []
    for rule in arc["rules"]:
        removed = MANAGER_ROLE_CUT.get((rule["apiGroups"][0], rule["resources"][0]), frozenset())
        assert removed <= set(rule["verbs"]), f"ARC's rule changed: {rule}"
        kept = [verb for verb in rule["verbs"] if verb not in removed]
        if kept:
            rules.append({**rule, "verbs": kept})
    arc["rules"] = rules


def _manager_role_adds(resource: str, verb: str) -> Callable[[Obj, Obj], None]:
    """ARC's manager Role with ``verb`` added to its core-group ``resource`` rule (which must
    not grant it already)."""

    def apply(arc: Obj, ours: Obj) -> None:
        if arc["kind"] != "Role" or not arc["metadata"]["name"].endswith("-gha-rs-manager"):
            return
        for rule in arc["rules"]:
            if rule["apiGroups"] == [""] and rule["resources"] == [resource]:
                assert verb not in rule["verbs"], f"ARC's rule changed: {rule}"
                rule["verbs"] = [*rule["verbs"], verb]

    return apply


NO_PERMISSION_ACCOUNT_SUFFIX = "-gha-rs-no-permission"


def _runner_token_not_mounted(arc: Obj, ours: Obj) -> None:
    if arc["kind"] != "AutoscalingRunnerSet":
        return
    spec = arc["spec"]["template"]["spec"]
    # ARC's chart names its no-permission ServiceAccount exactly in the default and dind modes
    # when the template names none: the runner there never calls the Kubernetes API
    if (
        str(spec.get("serviceAccountName", "")).endswith(NO_PERMISSION_ACCOUNT_SUFFIX)
        and "automountServiceAccountToken" not in spec
    ):
        spec["automountServiceAccountToken"] = False


@dataclass(frozen=True)
class Difference:
    name: str
    reason: str
    apply: Callable[[Obj, Obj], None]
    """Turns ARC's object (first argument, changed in place) into ours (second, read only)."""


DIFFERENCES: tuple[Difference, ...] = (
    # | what | ARC 0.14.2 | this chart | why |
    Difference(
        "helm.sh/chart label",
        # ARC: gha-rs-0.14.2; ours: scaleset-runner-set-<chart version>.
        "The label names the chart that made the object; every other label is ARC's, including "
        "app.kubernetes.io/version=0.14.2 on the AutoscalingRunnerSet (ARC's controller deletes "
        "a scale set whose version label differs from its own in major.minor, so a rollback to "
        "ARC keeps the scale sets this chart made).",
        _chart_label,
    ),
    Difference(
        "actions.github.com/values-hash annotation",
        # ARC: sha256 of ARC's values; ours: sha256 of ours (63 hex digits either way).
        "The hash covers the whole values tree, and ours has keys ARC's values.yaml leaves "
        'commented out (proxy: {}, runnerGroup: "" ...), so the digest differs for the same '
        "input. Nothing reads it: ARC's controller stopped using it after 0.14.2 and scaleset's "
        "never did.",
        _values_hash,
    ),
    Difference(
        "manager Role grants events create/patch",
        # ARC: no events rule; ours: {"": events: [create, patch]} appended.
        "scaleset's controllers record an Event for each decision on the scale set, runner set "
        "and runners in this namespace, and the listener Role the controller creates here grants "
        "events create/patch, which kube-apiserver only lets it grant if it holds them itself.",
        _manager_role_events,
    ),
    Difference(
        "manager Role without ARC's grants scaleset never uses",
        # ARC: pods/status get; serviceaccounts create/delete/get/list/patch/update;
        # roles, rolebindings create/delete/get/patch/update. Ours: no pods/status rule;
        # serviceaccounts get/patch; roles, rolebindings create/delete/get/patch.
        "Least privilege: scaleset's code never makes this request "
        "(tests/deploy/test_rbac_matches_code.py). The controller only reads and releases this "
        "chart's ServiceAccounts, patches the listener's Role and RoleBinding, and reads runner "
        "pods themselves. Secrets keep ARC's verbs: list finds a kube-mode runner's hook Pods' "
        "Secrets by label, update rewrites the runner set's proxy Secret.",
        _manager_role_least_privilege,
    ),
    Difference(
        "manager Role grants pods patch",
        # ARC: pods create/delete/get; ours: pods create/delete/get/patch.
        "scaleset's EphemeralRunner controller writes the job a runner took (repository, "
        "workflow, job name, run and job ids, recorded by the listener on the EphemeralRunner) "
        "onto the runner pod's scaleset.dev/job-* annotations, once per job; ARC keeps them on "
        "the EphemeralRunner only. The listener's own Role stays without pod access.",
        _manager_role_adds("pods", "patch"),
    ),
    Difference(
        "manager Role grants secrets watch",
        # ARC: secrets create/delete/get/list/patch/update; ours: the same and watch.
        "scaleset's controller watches the scale set's GitHub config Secret and proxy credential "
        "Secrets one by one (a field selector on each name), so a rotated credential reaches the "
        "listener at once and the periodic resync sends no request for them; ARC reads them with "
        "a GET at every pass. With ARC's Role it reads them with a GET, as ARC does.",
        _manager_role_adds("secrets", "watch"),
    ),
    Difference(
        "runner pods mount no ServiceAccount token in the default and dind modes",
        # ARC: no automountServiceAccountToken (the no-permission ServiceAccount's token is
        # mounted); ours: automountServiceAccountToken: false, unless the template sets it or
        # names its own serviceAccountName.
        "The runner of these modes never calls the Kubernetes API; a token in its pod is one "
        "more credential a job can take. The kubernetes modes keep it (their container hooks "
        "create the job's pods). A template that sets automountServiceAccountToken: true gets "
        "ARC's pod back.",
        _runner_token_not_mounted,
    ),
)

ERROR_DIFFERENCES: dict[str, str] = {
    "min-a-string": (
        "ARC renders no minRunners when the value is not a number (e.g. --set-string), so the "
        "scale set silently runs with 0; we refuse it, naming the value."
    ),
    "max-a-fraction": (
        "ARC truncates 2.5 to 2 without a word; we refuse a count that is not a whole number."
    ),
    "dind-without-runner": (
        "ARC renders a container named runner with no image (and an init container without one), "
        "so every runner pod is refused at creation; we refuse the values, saying why."
    ),
    "kubernetes-without-runner": "Same as dind-without-runner, for the kubernetes container mode.",
    "no-runner-container": (
        "Without a container named runner nothing gets the runner's JIT config: ARC renders the "
        "template, scaleset's controller would mark the scale set invalid; we say so at install."
    ),
    "restart-policy-on-failure": (
        "ARC keeps the user's restartPolicy; a restarted runner container would reuse its "
        "single-use JIT config, so scaleset's controller refuses any policy but Never (L5), and "
        "so does the chart."
    ),
    "proxy-without-url": (
        "ARC renders the proxy with url: null; scaleset's controller would refuse it (url is "
        "required when a proxy is set)."
    ),
    "tls-without-config-map-key": (
        "ARC renders githubServerTLS without the ConfigMap key (and, with runnerMountPath, a "
        "volume item with no key); scaleset's controller would refuse it."
    ),
    "kubernetes-without-work-volume": (
        "ARC renders the work volume as an ephemeral claim with spec: null, which no pod can "
        "use; its values file says the claim is required in this mode, and we enforce it."
    ),
}


def expected_from_arc(arc: list[Obj], ours: list[Obj]) -> dict[tuple[str, str], Obj]:
    """ARC's objects with every documented difference applied, by (kind, name)."""
    mine = {key_of(obj): normalised(obj) for obj in ours}
    expected: dict[tuple[str, str], Obj] = {}
    for original in arc:
        obj = normalised(original)
        key = key_of(obj)
        for difference in DIFFERENCES:
            difference.apply(obj, mine.get(key, {"metadata": {}}))
        expected[key] = obj
    return expected


def diff(expected: Obj, actual: Obj) -> str:
    """A unified diff of two objects as sorted YAML."""
    return "\n".join(
        difflib.unified_diff(
            yaml.safe_dump(expected, sort_keys=True).splitlines(),
            yaml.safe_dump(actual, sort_keys=True).splitlines(),
            "ARC 0.14.2 (with the documented differences)",
            "scaleset-runner-set",
            lineterm="",
        )
    )


def golden_path(case: str) -> Path:
    return GOLDENS / f"{case}.yaml"
