"""Field-for-field comparison of two sets of rendered objects, and the documented differences.

``flatten`` turns an object into ``{path: leaf}``: maps recurse; lists whose items are named
(containers, env, volumes, ports, ...) are keyed by name (``containers[manager]``); a container's
``args`` are keyed by flag (``args[--log-level]``, the values in order), so their order does not
matter; RBAC ``rules`` are keyed by API group and resource (``rules[apps/deployments]``); any
other list is one leaf. ``differences`` lists every path whose value differs between ARC's and
our objects (a missing object is the path ``""``).

``DIFFERENCES`` is the table of every way our chart's output may differ from ARC's, each with
its reason and a check of our value. A difference no row explains fails the test, and so does a
row that explains nothing in any case (a stale row).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.helm import SOURCE

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()
NAMED_LISTS = frozenset(
    {"containers", "initContainers", "env", "volumes", "volumeMounts", "ports", "imagePullSecrets"}
)


def object_key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{obj['kind']}/{meta.get('namespace', '')}/{meta.get('name', '')}"


def _flag(arg: str) -> tuple[str, str]:
    flag, _, value = arg.partition("=")
    return flag, value


def flatten(node: Any, path: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    if isinstance(node, dict) and node:
        for key, value in node.items():
            if key == SOURCE:
                continue
            child = f"{path}.{key}" if path else str(key)
            if key == "args" and isinstance(value, list):
                grouped: dict[str, list[str]] = {}
                for arg in value:
                    flag, flag_value = _flag(str(arg))
                    grouped.setdefault(flag, []).append(flag_value)
                for flag, values in grouped.items():
                    flat[f"{child}[{flag}]"] = values
            elif key == "rules" and isinstance(value, list):
                for rule in value:
                    for group in rule.get("apiGroups", []):
                        for resource in rule.get("resources", []):
                            # RBAC lists are sets: their order means nothing
                            rest = {
                                k: sorted(v) if isinstance(v, list) else v
                                for k, v in rule.items()
                                if k not in ("apiGroups", "resources")
                            }
                            flat.update(flatten(rest, f"{child}[{group}/{resource}]"))
            elif key in NAMED_LISTS and isinstance(value, list):
                for item in value:
                    flat.update(flatten(item, f"{child}[{item.get('name')}]"))
            else:
                flat.update(flatten(value, child))
        return flat
    flat[path] = node
    return flat


@dataclass(frozen=True)
class Diff:
    case: str
    obj: str
    path: str
    arc: Any
    ours: Any

    def __str__(self) -> str:
        where = self.path or "(object)"
        return f"[{self.case}] {self.obj} {where}: ARC {self.arc!r}, ours {self.ours!r}"


def differences(case: str, arc: list[dict[str, Any]], ours: list[dict[str, Any]]) -> list[Diff]:
    arc_by_key = {object_key(o): o for o in arc}
    ours_by_key = {object_key(o): o for o in ours}
    found: list[Diff] = []
    for key in sorted({*arc_by_key, *ours_by_key}):
        if key not in ours_by_key or key not in arc_by_key:
            found.append(
                Diff(case, key, "", arc_by_key.get(key, MISSING), ours_by_key.get(key, MISSING))
            )
            continue
        left, right = flatten(arc_by_key[key]), flatten(ours_by_key[key])
        for path in sorted({*left, *right}):
            a, o = left.get(path, MISSING), right.get(path, MISSING)
            if a != o:
                found.append(Diff(case, key, path, a, o))
    return found


# --- the documented differences ------------------------------------------------------------------

Check = Callable[[Diff, "Context"], bool]


@dataclass(frozen=True)
class Context:
    """What a row's check may use: the case's values as our chart merged them."""

    values: dict[str, Any]
    chart_version: str
    app_version: str


@dataclass(frozen=True)
class Difference:
    obj: str  # regex on "Kind/namespace/name"
    path: str  # regex on the flattened path ("" = the whole object)
    reason: str
    check: Check

    def explains(self, diff: Diff, context: Context) -> bool:
        return (
            re.fullmatch(self.obj, diff.obj) is not None
            and re.fullmatch(self.path, diff.path) is not None
            and self.check(diff, context)
        )


def _ours_only(diff: Diff, _: Context) -> bool:
    return diff.arc is MISSING and diff.ours is not MISSING


def _arc_only(diff: Diff, _: Context) -> bool:
    return diff.ours is MISSING


def _our_image(diff: Diff, context: Context) -> bool:
    # the user's build of scaleset's image (rendering.installable puts the test's in place of
    # ARC's image, which the chart refuses, and of none)
    image = context.values["image"]
    return bool(diff.ours == f"{image['repository']}:{image.get('tag') or context.app_version}")


def _leader_election_args(diff: Diff, context: Context) -> bool:
    # ARC passes them only when replicaCount > 1 (and then the same values)
    return diff.arc is MISSING and int(context.values.get("replicaCount") or 1) <= 1


def _merged_default(section: str, marker: str = "securityContext.") -> Check:
    def check(diff: Diff, context: Context) -> bool:
        # the key is ours only, and its value is the one our values.yaml gives the section
        # (so a key the user set always renders as ARC renders it)
        key = diff.path.split(marker, 1)[1]
        node: Any = context.values[section]
        for part in key.split("."):
            node = node[part]
        return diff.arc is MISSING and diff.ours == node

    return check


def _scaleset_env(diff: Diff, context: Context) -> bool:
    return diff.arc is MISSING and isinstance(diff.ours, str)


def _flag_value(value_of: Callable[[Context], Any]) -> Check:
    def check(diff: Diff, context: Context) -> bool:
        return diff.arc is MISSING and diff.ours == [str(value_of(context))]

    return check


RECONCILE_VALUES = {
    f"--{flag}-max-concurrent-reconciles": f"{value}MaxConcurrentReconciles"
    for flag, value in (
        ("default", "default"),
        ("autoscaling-runner-set", "autoscalingRunnerSet"),
        ("autoscaling-listener", "autoscalingListener"),
        ("ephemeral-runner-set", "ephemeralRunnerSet"),
        ("ephemeral-runner", "ephemeralRunner"),
    )
}
"""ARC 0.15's reconcile-count flags and the flags.* value each comes from."""


def _reconcile_flag(diff: Diff, context: Context) -> bool:
    flag = diff.path.rsplit("[", 1)[-1].rstrip("]")
    value = context.values["flags"].get(RECONCILE_VALUES.get(flag, ""))
    return diff.arc is MISSING and value is not None and diff.ours == [str(value)]


def _probe_default(diff: Diff, context: Context) -> bool:
    # ARC probes only when flags.healthProbeBindAddress is set; ours defaults it to :8081
    return diff.arc is MISSING and context.values["flags"].get("healthProbeBindAddress") == ":8081"


def _versions(diff: Diff, context: Context) -> bool:
    return diff.ours in (
        f"gha-rs-controller-{context.chart_version}",
        context.chart_version,
        context.app_version,
    )


def _rule_added(verbs: list[str]) -> Check:
    def check(diff: Diff, _: Context) -> bool:
        return diff.arc is MISSING and diff.ours == verbs

    return check


def _verbs_plus(extra: str) -> Check:
    def check(diff: Diff, _: Context) -> bool:
        return isinstance(diff.arc, list) and sorted([*diff.arc, extra]) == diff.ours

    return check


KINDS = (
    "autoscalinglisteners",
    "autoscalingrunnersets",
    "ephemeralrunners",
    "ephemeralrunnersets",
)


def _without(
    removed: dict[str, frozenset[str]], added: dict[str, frozenset[str]] | None = None
) -> Check:
    """Our rule is ARC's without the ``removed`` verbs of its resource and with the ``added``
    ones (and is gone when none is left)."""
    extra = added or {}

    def check(diff: Diff, _: Context) -> bool:
        match = re.fullmatch(r"rules\[[^/]*/(.+)\]\.verbs", diff.path)
        if match is None or not isinstance(diff.arc, list):
            return False
        resource = match.group(1)
        if resource not in removed and resource not in extra:
            return False
        cut = removed.get(resource, frozenset())
        kept = sorted((set(diff.arc) - cut) | extra.get(resource, frozenset()))
        return diff.ours == (kept or MISSING)

    return check


LEAST_PRIVILEGE = (
    "least privilege: scaleset's code never makes this request "
    "(tests/deploy/test_rbac_matches_code.py)"
)
ROLES_PATCH = (
    "patch on roles cluster-wide (the only Role it patches is a listener's, in a runner "
    "namespace, and the runner set chart's manager Role grants that, ARC's too)"
)
UPDATE = frozenset({"update"})
LIST_WATCH = frozenset({"list", "watch"})
STATUS_AND_FINALIZERS = {
    **{f"{kind}/status": frozenset({"get", "update"}) for kind in KINDS},
    **{f"{kind}/finalizers": frozenset({"patch"}) for kind in KINDS},
}
MANAGER_RULES_CUT = {
    "autoscalingrunnersets": frozenset({"create", "delete", "update"}),
    "autoscalinglisteners": UPDATE,
    "ephemeralrunnersets": UPDATE,
    "ephemeralrunners": UPDATE,
    **STATUS_AND_FINALIZERS,
    "serviceaccounts": LIST_WATCH,
    "roles": frozenset({"patch"}),
}
"""ARC's manager rules (ClusterRole, the namespace-limited Role of each watched namespace) minus
ours, by resource: ServiceAccounts are watched in the controller namespace only (listener Role);
Roles and RoleBindings are watched where they live, as ARC does."""
WATCH_ROLE_CUT = {**MANAGER_RULES_CUT, "autoscalinglisteners": LIST_WATCH}
CONTROLLER_NAMESPACE_ROLE_CUT = {
    **MANAGER_RULES_CUT,
    "rolebindings": LIST_WATCH,
    "roles": LIST_WATCH | {"patch"},
}
"""ARC's namespace-limited Role in the controller namespace minus ours: no listener Role or
RoleBinding lives there (they live in the scale sets' namespaces)."""
LISTENER_ROLE_CUT = {
    "pods/status": frozenset({"get"}),
    "secrets": UPDATE,
    "serviceaccounts": UPDATE,
}
LISTENER_ROLE_ADDED = {"serviceaccounts": LIST_WATCH, "secrets": LIST_WATCH}
LEASES_CUT = {"leases": frozenset({"delete", "list", "watch"})}


def _rules_path(resources: dict[str, frozenset[str]]) -> str:
    names = "|".join(re.escape(resource) for resource in sorted(resources))
    return rf"rules\[[^/]*/({names})\]\.verbs"


CRD_NAMES = sorted(f"{plural}.actions.github.com" for plural in KINDS)
MANAGER = r"Deployment/[^/]+/[^/]+"
CONTAINER = r"spec\.template\.spec\.containers\[manager\]"
SCALESET_FLAGS = {
    "--sync-period": lambda c: c.values["scaleset"]["syncPeriod"],
    "--lease-duration": lambda c: c.values["scaleset"]["leaderElection"]["leaseDuration"],
    "--renew-deadline": lambda c: c.values["scaleset"]["leaderElection"]["renewDeadline"],
    "--retry-period": lambda c: c.values["scaleset"]["leaderElection"]["retryPeriod"],
    "--graceful-shutdown-timeout": lambda c: c.values["scaleset"]["gracefulShutdownTimeout"],
}

DIFFERENCES: tuple[Difference, ...] = (
    # --- what runs ---
    Difference(
        MANAGER,
        rf"{CONTAINER}\.image|{CONTAINER}\.env\[CONTROLLER_MANAGER_CONTAINER_IMAGE\]\.value",
        "scaleset's image, which the user builds and names in image.repository (ARC's image "
        "is refused: it cannot run scaleset; an empty image.tag means our appVersion); the same "
        "value feeds CONTROLLER_MANAGER_CONTAINER_IMAGE, as in ARC",
        _our_image,
    ),
    Difference(
        MANAGER,
        rf"{CONTAINER}\.command",
        "the image runs `scaleset controller` (ARC: /manager); args are ARC's flags",
        lambda d, _: d.ours == ["scaleset", "controller"],
    ),
    Difference(
        MANAGER,
        rf"{CONTAINER}\.args\[--update-strategy\]",
        "flags.updateStrategy is ignored with a warning (see NOTES): scaleset updates runner "
        "sets in place and never deletes a busy runner; its CLI has no such flag",
        _arc_only,
    ),
    Difference(
        MANAGER,
        rf"{CONTAINER}\.(args\[--pprof-addr\]|ports\[pprof\]\..*)",
        "pprof.addr is ignored with a warning: scaleset has no pprof endpoint, so no flag and "
        "no port that nothing would listen on",
        _arc_only,
    ),
    Difference(
        MANAGER,
        rf"{CONTAINER}\.args\[(--enable-leader-election|--leader-election-id)\]",
        "leader election is always on (ARC: only with replicaCount > 1); same Lease name",
        _leader_election_args,
    ),
    Difference(
        MANAGER,
        rf"{CONTAINER}\.(args\[--health-probe-bind-address\]|(livenessProbe|readinessProbe)\..*)",
        "probes are on by default (flags.healthProbeBindAddress defaults to :8081; ARC's "
        'values leave it unset, so ARC\'s pod has no probes); set it to "" to turn them off',
        _probe_default,
    ),
    *(
        Difference(
            MANAGER,
            rf"{CONTAINER}\.args\[{re.escape(flag)}\]",
            f"scaleset's own setting, from values scaleset.* ({flag}; ARC has no such flag)",
            _flag_value(value_of),
        )
        for flag, value_of in SCALESET_FLAGS.items()
    ),
    Difference(
        MANAGER,
        rf"{CONTAINER}\.args\[--[a-z-]+-max-concurrent-reconciles\]",
        "ARC 0.15.0's per-controller reconcile counts (flags.*MaxConcurrentReconciles), added "
        "to ARC's chart after the master snapshot the 0.15 goldens come from: rendered as ARC "
        "0.15.0's flags, which our controller takes",
        _reconcile_flag,
    ),
    Difference(
        MANAGER,
        rf"{CONTAINER}\.env\[SCALESET_[A-Z_]+\]\.(name|value)",
        "scaleset's own settings (job-completion grace, registration pass, runner set "
        "tuning), from values scaleset.*, read from the environment by the controllers",
        _scaleset_env,
    ),
    # --- hardening ---
    Difference(
        MANAGER,
        r"spec\.template\.spec\.securityContext\..+",
        "Pod Security 'restricted' by default: runAsNonRoot, a non-root uid/gid and the "
        "RuntimeDefault seccomp profile (ARC: no pod security context); keys the user sets are "
        "merged over these and render as in ARC",
        _merged_default("podSecurityContext"),
    ),
    Difference(
        MANAGER,
        rf"{CONTAINER}\.securityContext\..+",
        "Pod Security 'restricted' by default: no privilege escalation, read-only root "
        "filesystem, all capabilities dropped, RuntimeDefault seccomp (ARC: none); keys the "
        "user sets are merged over these and render as in ARC",
        _merged_default("securityContext"),
    ),
    Difference(
        MANAGER,
        rf"{CONTAINER}\.resources\..+",
        "memory and CPU requests and limits by default, well above what the controller uses "
        "(ARC: none); keys the user sets are merged over these and render as in ARC",
        _merged_default("resources", "resources."),
    ),
    Difference(
        MANAGER,
        r"spec\.template\.spec\.terminationGracePeriodSeconds",
        "in-flight reconciles get scaleset.gracefulShutdownTimeout (20 s) after SIGTERM and the "
        "Lease is released; ARC's 10 s would SIGKILL first",
        lambda d, c: d.ours == c.values["terminationGracePeriodSeconds"],
    ),
    # --- versions ---
    Difference(
        r".*",
        r"(metadata\.labels|spec\.template\.metadata\.labels)\."
        r"(helm\.sh/chart|app\.kubernetes\.io/version)",
        "our chart's version and appVersion (ARC: 0.14.2) in the same labels",
        _versions,
    ),
    # --- objects and RBAC ---
    Difference(
        r"PodDisruptionBudget/.*",
        "",
        "a PodDisruptionBudget for the controller pods (podDisruptionBudget.*; ARC has none)",
        _ours_only,
    ),
    Difference(
        r"(Role|RoleBinding)/[^/]+/[^/]+-leader-election",
        "",
        "the leader-election Role and binding are always rendered, since election always is "
        "(ARC: only with replicaCount > 1; then identical)",
        lambda d, c: _ours_only(d, c) and int(c.values.get("replicaCount") or 1) <= 1,
    ),
    Difference(
        r"ClusterRole/[^/]*/[^/]+",
        r"rules\[/events\]\.verbs",
        "Events in every namespace; and the listener Role the controller creates grants "
        "events, which the RBAC escalation check lets it grant only if it holds them",
        _rule_added(["create", "patch"]),
    ),
    Difference(
        r"Role/[^/]+/[^/]+-single-namespace-watch",
        r"rules\[/events\]\.verbs",
        "the same events rule in each watched namespace (namespace-limited mode)",
        _rule_added(["create", "patch"]),
    ),
    Difference(
        r"ClusterRole/[^/]*/[^/]+",
        r"rules\[apiextensions\.k8s\.io/customresourcedefinitions\]\.(verbs|resourceNames)",
        "get on the four actions.github.com CRDs: the start-up check that they are "
        "scaleset's, not ARC's older ones",
        lambda d, _: d.arc is MISSING and d.ours in (["get"], CRD_NAMES),
    ),
    Difference(
        r"(ClusterRole|ClusterRoleBinding)//[^/]+-crd-check",
        "",
        "namespace-limited mode: that CRD rule needs a ClusterRole of its own (CRDs are "
        "cluster-scoped)",
        _ours_only,
    ),
    Difference(
        r"Role/[^/]+/[^/]+-listener",
        r"rules\[/pods\]\.verbs",
        "patch on pods in the controller namespace: scaleset updates a listener pod's labels "
        "and annotations in place instead of recreating it",
        _verbs_plus("patch"),
    ),
    # --- least privilege: ARC's grants scaleset's code never uses ---
    Difference(
        r"ClusterRole//[^/]+",
        _rules_path(MANAGER_RULES_CUT),
        f"{LEAST_PRIVILEGE}: create/delete on autoscalingrunnersets (users and the runner set "
        "chart make them), update on the four kinds and their status (the controller patches), "
        "get on their status, patch on their finalizers (blockOwnerDeletion needs update "
        "there), list/watch on serviceaccounts (watched in the controller namespace only, "
        f"through the listener Role), {ROLES_PATCH}",
        _without(MANAGER_RULES_CUT),
    ),
    Difference(
        r"Role/[^/]+/[^/]+-single-namespace-watch",
        _rules_path(WATCH_ROLE_CUT),
        f"{LEAST_PRIVILEGE}: the same cuts in each watched namespace (namespace-limited mode; "
        "patch on roles comes with the runner set chart's manager Role there), and list/watch "
        "on autoscalinglisteners there (they live in the controller namespace, where the "
        "controller watches them)",
        _without(WATCH_ROLE_CUT),
    ),
    Difference(
        r"Role/[^/]+/[^/]+-single-namespace",
        _rules_path(CONTROLLER_NAMESPACE_ROLE_CUT),
        f"{LEAST_PRIVILEGE}: in the controller namespace (namespace-limited mode), update on "
        "autoscalinglisteners and their status, get on their status, patch on their "
        "finalizers, list/watch on serviceaccounts (granted by the listener Role), roles and "
        "rolebindings (none lives there)",
        _without(CONTROLLER_NAMESPACE_ROLE_CUT),
    ),
    Difference(
        r"Role/[^/]+/[^/]+-listener",
        _rules_path(LISTENER_ROLE_CUT),
        f"{LEAST_PRIVILEGE}: get on pods/status, update on secrets and serviceaccounts in the "
        "controller namespace (the listener's Secrets and ServiceAccount are patched); beyond "
        "ARC, list/watch on serviceaccounts and secrets: the listeners' ServiceAccounts and "
        "their config and proxy Secrets are watched here (ARC grants list/watch on "
        "ServiceAccounts cluster-wide, in its ClusterRole, and reads Secrets uncached)",
        _without(LISTENER_ROLE_CUT, LISTENER_ROLE_ADDED),
    ),
    Difference(
        r"Role/[^/]+/[^/]+-leader-election",
        _rules_path(LEASES_CUT),
        f"{LEAST_PRIVILEGE}: delete, list and watch on leases (the Lease is read, created and "
        "renewed by name)",
        _without(LEASES_CUT),
    ),
)
"""Every way our chart's output differs from ARC 0.14.2's for the same values, and why."""


def unexplained(diffs: list[Diff], context: Context) -> tuple[list[Diff], set[int]]:
    """The diffs no row explains, and the indexes of the rows that explained any."""
    used: set[int] = set()
    left: list[Diff] = []
    for diff in diffs:
        rows = [i for i, row in enumerate(DIFFERENCES) if row.explains(diff, context)]
        used.update(rows)
        if not rows:
            left.append(diff)
    return left, used
