"""The doctor's checks (pure): each takes the ``Inventory`` and returns findings.

- ``pod-newer-than-runner`` — a runner pod created long after its EphemeralRunner: the pod was
  recreated from the runner's used JIT config (ARC #4588); it cannot connect and holds a slot.
- ``running-without-job`` — phase ``Running`` with no job fields for long: ARC's "pod runs"
  Running, an idle runner or a zombie (#4588, L1); busy/idle cannot be told apart.
- ``registration-missing`` — a registered runner (runner id set) with no job, not terminal,
  that GitHub does not list (needs GitHub credentials).
- ``stuck-deleting`` — being deleted for long, held by finalizers.
- ``terminal-holding-slot`` — ``Failed``/``Succeeded``/``Outdated`` and not deleted: it counts
  towards the set's size (ARC never reaps failed runners).
- ``idle-past-age`` — an idle runner older than the idle age.
- ``crd-outdated`` — a CRD missing, or lacking fields scaleset writes (ARC's CRDs still
  installed: the API server would drop those fields).
- ``listener-session-conflict`` — two listeners for one scale set: only one message session
  can exist, the other waits or fails.
- ``listener-crash-loop`` — a listener pod restarting, in CrashLoopBackOff, or Failed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime

from scaleset.api import EphemeralRunner, RunnerState, classify, parse_kube_time
from scaleset.api.crds import installed_crd_gaps
from scaleset.doctor.findings import Finding
from scaleset.doctor.inventory import Inventory, JsonObject, Thresholds

CRD_FIX = "scaleset crds | kubectl apply --server-side --force-conflicts -f -"
TERMINAL = ("Failed", "Succeeded", "Outdated")


def _meta(obj: JsonObject) -> JsonObject:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _status(obj: JsonObject) -> JsonObject:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def _spec(obj: JsonObject) -> JsonObject:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _time(value: object) -> datetime | None:
    if not value:
        return None
    try:
        return parse_kube_time(value)
    except ValueError:
        return None


def _target(kind: str, obj: JsonObject) -> str:
    meta = _meta(obj)
    return f"{kind} {meta.get('namespace', '')}/{meta.get('name', '')}"


def _delete_runner(obj: JsonObject) -> str:
    meta = _meta(obj)
    return f"kubectl delete ephemeralrunner -n {meta.get('namespace')} {meta.get('name')}"


def _has_job(obj: JsonObject) -> bool:
    status = _status(obj)
    return bool(status.get("jobId") or status.get("jobRequestId"))


def _seconds(later: datetime | None, earlier: datetime | None) -> float | None:
    if later is None or earlier is None:
        return None
    return (later - earlier).total_seconds()


def pod_newer_than_runner(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    pods = {(_meta(p).get("namespace"), _meta(p).get("name")): p for p in inventory.runner_pods}
    found = []
    for runner in inventory.runners:
        meta = _meta(runner)
        pod = pods.get((meta.get("namespace"), meta.get("name")))
        if pod is None or _meta(runner).get("deletionTimestamp"):
            continue
        gap = _seconds(
            _time(_meta(pod).get("creationTimestamp")), _time(meta.get("creationTimestamp"))
        )
        if gap is not None and gap > limits.pod_newer_than_runner:
            found.append(
                Finding(
                    "pod-newer-than-runner",
                    _target("EphemeralRunner", runner),
                    f"its pod was created {gap:.0f}s after the runner: recreated from a JIT "
                    "config an earlier pod already used (ARC #4588); it cannot take jobs",
                    f"replace the runner: {_delete_runner(runner)}",
                    "error",
                )
            )
    return found


def running_without_job(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    found = []
    for runner in inventory.runners:
        meta = _meta(runner)
        if meta.get("deletionTimestamp") or _status(runner).get("phase") != "Running":
            continue
        if _has_job(runner):
            continue
        age = _seconds(inventory.now, _time(meta.get("creationTimestamp")))
        if age is not None and age > limits.running_without_job:
            found.append(
                Finding(
                    "running-without-job",
                    _target("EphemeralRunner", runner),
                    f"phase Running with no job for {age:.0f}s since creation: ARC's "
                    "'pod runs' Running — idle, or a zombie whose registration is gone",
                    "check the runner on GitHub (Settings > Actions > Runners); if it is "
                    f"offline or missing, {_delete_runner(runner)}",
                )
            )
    return found


def registration_missing(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    if inventory.registered_ids is None:
        return []
    found = []
    for runner in inventory.runners:
        # a runner with a job loses its registration when the job ends (ephemeral): not a leak
        if _meta(runner).get("deletionTimestamp") or _has_job(runner):
            continue
        if _status(runner).get("phase") in TERMINAL:
            continue
        runner_id = _status(runner).get("runnerId")
        listed = inventory.registered_ids.get(str(_spec(runner).get("githubConfigUrl", "")))
        if not isinstance(runner_id, int) or not runner_id or listed is None:
            continue
        if runner_id not in listed:
            found.append(
                Finding(
                    "registration-missing",
                    _target("EphemeralRunner", runner),
                    f"GitHub does not list runner id {runner_id}: its registration is gone, "
                    "the runner can never take a job",
                    f"replace the runner: {_delete_runner(runner)}",
                    "error",
                )
            )
    return found


def stuck_deleting(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    found = []
    kinds = (("EphemeralRunner", inventory.runners), ("EphemeralRunnerSet", inventory.runner_sets))
    for kind, objects in kinds:
        for obj in objects:
            meta = _meta(obj)
            since = _seconds(inventory.now, _time(meta.get("deletionTimestamp")))
            finalizers = meta.get("finalizers") or []
            if since is None or since <= limits.deleting or not finalizers:
                continue
            found.append(
                Finding(
                    "stuck-deleting",
                    _target(kind, obj),
                    f"being deleted for {since:.0f}s, held by finalizers {', '.join(finalizers)}",
                    "look at the controller's log and Events for this object (a busy runner "
                    "waits for its job; GitHub errors retry); remove the finalizers by hand only "
                    "once its registration is gone on GitHub",
                )
            )
    return found


def terminal_holding_slot(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    found = []
    for runner in inventory.runners:
        phase = _status(runner).get("phase")
        if phase not in TERMINAL or _meta(runner).get("deletionTimestamp"):
            continue
        reason = _status(runner).get("reason") or "no reason recorded"
        found.append(
            Finding(
                "terminal-holding-slot",
                _target("EphemeralRunner", runner),
                f"phase {phase} ({reason}) and not deleted: it counts towards the set's size",
                f"delete it so the set can create a working runner: {_delete_runner(runner)}",
            )
        )
    return found


def idle_past_age(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    found = []
    for runner in inventory.runners:
        try:
            state = classify(EphemeralRunner.model_validate(runner))
        except ValueError:
            continue
        age = _seconds(inventory.now, _time(_meta(runner).get("creationTimestamp")))
        if state is RunnerState.IDLE and age is not None and age > limits.idle_age:
            found.append(
                Finding(
                    "idle-past-age",
                    _target("EphemeralRunner", runner),
                    f"idle and {age / 3600:.1f}h old (limit {limits.idle_age / 3600:.1f}h)",
                    f"replace it with a fresh runner: {_delete_runner(runner)} (scaleset "
                    "retires such runners itself with SCALESET_MAX_RUNNER_AGE)",
                )
            )
    return found


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
            fields = list(dict.fromkeys(".".join(p.split(".")[:2]) for p in gaps))
            shown = ", ".join(fields[:6]) + (
                f" (+{len(fields) - 6} more)" if len(fields) > 6 else ""
            )
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


def listener_session_conflict(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    by_scale_set: dict[tuple[str, int], list[JsonObject]] = defaultdict(list)
    for listener in inventory.listeners:
        spec = _spec(listener)
        scale_set_id = spec.get("runnerScaleSetId")
        if _meta(listener).get("deletionTimestamp") or not isinstance(scale_set_id, int):
            continue
        by_scale_set[(str(spec.get("githubConfigUrl", "")), scale_set_id)].append(listener)
    found = []
    for (url, scale_set_id), listeners in sorted(by_scale_set.items()):
        if len(listeners) < 2:
            continue
        names = ", ".join(sorted(_target("AutoscalingListener", item) for item in listeners))
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
        status = _status(pod)
        restarts = 0
        waiting = ""
        for container in status.get("containerStatuses") or []:
            restarts += int(container.get("restartCount") or 0)
            reason = ((container.get("state") or {}).get("waiting") or {}).get("reason")
            waiting = waiting or str(reason or "")
        failed = status.get("phase") == "Failed"
        if not failed and waiting != "CrashLoopBackOff" and restarts < limits.listener_restarts:
            continue
        detail = (
            f"phase Failed ({status.get('reason') or 'no reason'})"
            if failed
            else f"{restarts} restarts" + (f", {waiting}" if waiting else "")
        )
        found.append(
            Finding(
                "listener-crash-loop",
                _target("Pod", pod),
                f"listener pod {detail}: the scale set gets no jobs while it is down",
                f"read its last log: kubectl logs -n {_meta(pod).get('namespace')} "
                f"{_meta(pod).get('name')} --previous (credentials, network, session conflict)",
                "error",
            )
        )
    return found


Check = Callable[[Inventory, Thresholds], list[Finding]]

KUBERNETES_CHECKS: dict[str, Check] = {
    "pod-newer-than-runner": pod_newer_than_runner,
    "running-without-job": running_without_job,
    "stuck-deleting": stuck_deleting,
    "terminal-holding-slot": terminal_holding_slot,
    "idle-past-age": idle_past_age,
    "crd-outdated": crd_outdated,
    "listener-session-conflict": listener_session_conflict,
    "listener-crash-loop": listener_crash_loop,
}
GITHUB_CHECKS: dict[str, Check] = {"registration-missing": registration_missing}


def run_checks(inventory: Inventory, limits: Thresholds, names: Iterable[str]) -> list[Finding]:
    every = {**KUBERNETES_CHECKS, **GITHUB_CHECKS}
    return [finding for name in names for finding in every[name](inventory, limits)]
