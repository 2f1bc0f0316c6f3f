"""The doctor's checks on what serves the runners (pure): the CRDs, the controller and its
leader election, the AutoscalingRunnerSets' conditions, the listeners and their pods."""

from __future__ import annotations

from collections import defaultdict

from scaleset.api import keys
from scaleset.api.crds import installed_crd_gaps
from scaleset.doctor import controller_pods, fields
from scaleset.doctor.findings import Finding
from scaleset.doctor.inventory import Inventory, JsonObject, Thresholds

CRD_FIX = "scaleset crds | kubectl apply --server-side --force-conflicts -f -"
DEFAULT_LEASE_SECONDS = 15.0

BAD_CONDITIONS = {
    "Valid": "False",
    "ScaleSetRegistered": "False",
    "ControllerConflict": "True",
    "RunnerSetConflict": "True",
}
"""The AutoscalingRunnerSet conditions scaleset writes, and the status that means trouble."""
CONDITION_ACTIONS = {
    "Valid": "fix the values the message names and helm upgrade the scale set",
    "ScaleSetRegistered": "fix what the message names — the GitHub config Secret (token or "
    "App), the runner group, the githubConfigUrl; scaleset retries by itself with back-off",
    "ControllerConflict": "two controllers manage this scale set: scale ARC's controller "
    "Deployment to 0 (the message names its pod) or uninstall it",
    "RunnerSetConflict": "an EphemeralRunnerSet with this name belongs to something else: "
    "delete it (check it is not another release's first)",
}


def crd_outdated(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    found = []
    for name, crd in sorted(inventory.crds.items()):
        if crd is None:
            found.append(
                Finding(
                    "crd-outdated",
                    f"CustomResourceDefinition {name}",
                    "not installed",
                    f"install scaleset's CRDs: {CRD_FIX}",
                    "error",
                )
            )
            continue
        gaps = installed_crd_gaps(crd)
        if gaps:
            paths = list(dict.fromkeys(".".join(p.split(".")[:2]) for p in gaps))
            shown = ", ".join(paths[:6]) + (f" (+{len(paths) - 6} more)" if len(paths) > 6 else "")
            found.append(
                Finding(
                    "crd-outdated",
                    f"CustomResourceDefinition {name}",
                    f"lacks {shown}: ARC's or an older CRD; the API server drops these fields",
                    f"install the current CRDs (Helm never upgrades them): {CRD_FIX}",
                    "error",
                )
            )
    return found


def scale_set_condition(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    found = []
    for scale_set in inventory.scale_sets:
        if fields.deleting(scale_set):
            continue
        conditions = fields.conditions(scale_set)
        for kind, bad in BAD_CONDITIONS.items():
            condition = conditions.get(kind)
            if condition is None or condition.get("status") != bad:
                continue
            reason = condition.get("reason") or "no reason"
            message = condition.get("message") or "no message"
            found.append(
                Finding(
                    "scale-set-condition",
                    fields.target("AutoscalingRunnerSet", scale_set),
                    f"{kind}={bad} ({reason}): {message}",
                    CONDITION_ACTIONS[kind],
                    "error",
                )
            )
    return found


def _pod_state(pod: JsonObject) -> str:
    waiting = [
        str(state["waiting"].get("reason") or "Waiting")
        for container in fields.container_statuses(pod)
        if isinstance(state := container.get("state"), dict)
        and isinstance(state.get("waiting"), dict)
    ]
    phase = str(fields.status(pod).get("phase") or "no phase")
    return f"{fields.name_of(pod)}: {', '.join(waiting) or phase}"


def controller_missing(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    """A namespace with scale sets and no ready controller pod serving it."""
    by_namespace: dict[str, list[str]] = defaultdict(list)
    for scale_set in inventory.scale_sets:
        if not fields.deleting(scale_set):
            by_namespace[fields.namespace_of(scale_set)].append(fields.name_of(scale_set))
    found = []
    for namespace, names in sorted(by_namespace.items()):
        serving = [
            pod
            for pod in inventory.controller_pods
            if controller_pods.live(pod) and controller_pods.serves(pod, namespace)
        ]
        if any(fields.pod_ready(pod) for pod in serving):
            continue
        ages = [fields.seconds(inventory.now, fields.created(pod)) for pod in serving]
        if any(age is None or age <= limits.settling for age in ages):
            continue  # starting: give it time
        if serving:
            states = "; ".join(_pod_state(pod) for pod in serving)
            what = f"its controller pods are not ready ({states})"
            action = (
                "read the controller's log: kubectl logs -n "
                f"{fields.namespace_of(serving[0])} {fields.name_of(serving[0])} --previous"
            )
        else:
            what = (
                "no controller pod (labelled "
                f"{controller_pods.CONTROLLER_POD_SELECTOR}) serves this namespace"
            )
            action = (
                "install or scale up the controller (helm upgrade --install of the controller "
                "chart; with --watch-single-namespace or namespaces set, include this namespace)"
            )
        shown = ", ".join(sorted(names)[:5]) + (" …" if len(names) > 5 else "")
        found.append(
            Finding(
                "controller-missing",
                f"Namespace {namespace}",
                f"{len(names)} scale set(s) ({shown}) and {what}: nothing creates runners, "
                "replaces failed ones or runs listeners",
                action,
                "error",
            )
        )
    return found


def controller_not_leading(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    """Controller pods that run and are ready, but whose leader-election Lease nobody holds:
    every controller waits as a candidate and nothing is reconciled."""
    by_lease: dict[tuple[str, str], list[JsonObject]] = defaultdict(list)
    for pod in inventory.controller_pods:
        key = controller_pods.lease_key(pod)
        if key is not None and fields.pod_ready(pod):
            by_lease[key].append(pod)
    found = []
    for key, pods in sorted(by_lease.items()):
        if key not in inventory.leases:
            continue
        running_for = max(
            (fields.seconds(inventory.now, fields.created(pod)) or 0.0) for pod in pods
        )
        if running_for <= limits.settling:
            continue
        lease = inventory.leases[key]
        if lease is None:
            why = "does not exist"
        else:
            spec = fields.spec(lease)
            holder = str(spec.get("holderIdentity") or "")
            duration = spec.get("leaseDurationSeconds")
            duration = (
                float(duration) if isinstance(duration, int | float) else DEFAULT_LEASE_SECONDS
            )
            quiet = fields.seconds(inventory.now, fields.time(spec.get("renewTime")))
            if holder and quiet is not None and quiet <= duration + limits.lease_grace:
                continue
            why = (
                "has no holder"
                if not holder
                else f"was last renewed {quiet:.0f}s ago by {holder} (duration {duration:.0f}s)"
                if quiet is not None
                else f"names {holder} but was never renewed"
            )
        namespace, name = key
        names = ", ".join(sorted(fields.name_of(pod) for pod in pods))
        found.append(
            Finding(
                "controller-not-leading",
                f"Lease {namespace}/{name}",
                f"controller pod(s) {names} run but none leads: the Lease {why}; nothing is "
                "reconciled",
                f"read the controller's log: kubectl logs -n {namespace} "
                f"{fields.name_of(pods[0])} (can it reach the API server and update leases in "
                f"{namespace}?); restart it: kubectl delete pod -n {namespace} {names}",
                "error",
            )
        )
    return found


def _listener_of(inventory: Inventory) -> dict[tuple[str, str], JsonObject]:
    found: dict[tuple[str, str], JsonObject] = {}
    for listener in inventory.listeners:
        spec = fields.spec(listener)
        key = (
            str(spec.get("autoscalingRunnerSetNamespace") or ""),
            str(spec.get("autoscalingRunnerSetName") or ""),
        )
        if not fields.deleting(listener) or key not in found:
            found[key] = listener
    return found


def _troubled(scale_set: JsonObject) -> bool:
    conditions = fields.conditions(scale_set)
    return any(
        conditions.get(kind, {}).get("status") == bad for kind, bad in BAD_CONDITIONS.items()
    )


def listener_missing(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    """A registered scale set without an AutoscalingListener, or a listener without its pod:
    no message session, so no job reaches the scale set."""
    listeners = _listener_of(inventory)
    pods = {fields.key_of(pod) for pod in inventory.listener_pods}
    found = []
    for scale_set in inventory.scale_sets:
        scale_set_id = fields.annotations_of(scale_set).get(keys.RUNNER_SCALE_SET_ID_ANNOTATION)
        if fields.deleting(scale_set) or not scale_set_id or _troubled(scale_set):
            continue  # not registered yet, or scale-set-condition says why
        listener = listeners.get(fields.key_of(scale_set))
        if listener is None:
            age = fields.seconds(inventory.now, fields.created(scale_set))
            if age is not None and age > limits.settling:
                found.append(
                    Finding(
                        "listener-missing",
                        fields.target("AutoscalingRunnerSet", scale_set),
                        f"registered on GitHub (scale set {scale_set_id}) but it has no "
                        "AutoscalingListener: no message session, no job reaches it",
                        "check the controller runs and read its log for this scale set; "
                        "kubectl describe autoscalingrunnerset -n "
                        f"{fields.namespace_of(scale_set)} {fields.name_of(scale_set)}",
                        "error",
                    )
                )
            continue
        if fields.deleting(listener) or fields.key_of(listener) in pods:
            continue
        age = fields.seconds(inventory.now, fields.created(listener))
        if age is None or age <= limits.settling:
            continue
        running = fields.conditions(listener).get("ListenerRunning") or {}
        why = (
            f" (ListenerRunning={running.get('status')}, {running.get('reason')}: "
            f"{running.get('message') or 'no message'})"
            if running
            else ""
        )
        found.append(
            Finding(
                "listener-missing",
                fields.target("AutoscalingListener", listener),
                f"no listener pod{why}: no message session, no job reaches scale set "
                f"{fields.namespace_of(scale_set)}/{fields.name_of(scale_set)}",
                "kubectl describe autoscalinglistener -n "
                f"{fields.namespace_of(listener)} {fields.name_of(listener)} (its Events say why "
                "the pod is not created or when the next one comes); check the controller runs",
                "error",
            )
        )
    return found


def listener_session_conflict(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    by_scale_set: dict[tuple[str, int], list[JsonObject]] = defaultdict(list)
    for listener in inventory.listeners:
        spec = fields.spec(listener)
        scale_set_id = spec.get("runnerScaleSetId")
        if fields.deleting(listener) or not isinstance(scale_set_id, int):
            continue
        by_scale_set[(str(spec.get("githubConfigUrl", "")), scale_set_id)].append(listener)
    found = []
    for (url, scale_set_id), listeners in sorted(by_scale_set.items()):
        if len(listeners) < 2:
            continue
        names = ", ".join(sorted(fields.target("AutoscalingListener", item) for item in listeners))
        found.append(
            Finding(
                "listener-session-conflict",
                names,
                f"{len(listeners)} listeners for scale set {scale_set_id} of {url}: GitHub "
                "allows one message session, the others wait in SessionConflict",
                "keep one controller per scale set (two controllers, or ARC and scaleset, "
                "manage it); delete the extra AutoscalingRunnerSet or stop the other controller",
                "error",
            )
        )
    return found


def listener_crash_loop(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    found = []
    for pod in inventory.listener_pods:
        state = fields.status(pod)
        restarts = 0
        waiting = ""
        for container in fields.container_statuses(pod):
            restarts += int(container.get("restartCount") or 0)
            current = container.get("state")
            reason = (
                (current.get("waiting") or {}).get("reason") if isinstance(current, dict) else None
            )
            waiting = waiting or str(reason or "")
        failed = state.get("phase") == "Failed"
        if not failed and waiting != "CrashLoopBackOff" and restarts < limits.listener_restarts:
            continue
        detail = (
            f"phase Failed ({state.get('reason') or 'no reason'})"
            if failed
            else f"{restarts} restarts" + (f", {waiting}" if waiting else "")
        )
        found.append(
            Finding(
                "listener-crash-loop",
                fields.target("Pod", pod),
                f"listener pod {detail}: the scale set gets no jobs while it is down",
                f"read its last log: kubectl logs -n {fields.namespace_of(pod)} "
                f"{fields.name_of(pod)} --previous (credentials, network, session conflict)",
                "error",
            )
        )
    return found
