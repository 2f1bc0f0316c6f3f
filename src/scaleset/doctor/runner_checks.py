"""The doctor's checks on runners (pure): EphemeralRunners, their pods and their sets."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from scaleset.api import EphemeralRunner, RunnerState, classify, keys
from scaleset.doctor import fields
from scaleset.doctor.findings import Finding
from scaleset.doctor.inventory import Inventory, JsonObject, Thresholds

TERMINAL = ("Failed", "Succeeded", "Outdated")
OUTDATED = "Outdated"
DEPRECATED_MESSAGE = "is deprecated and cannot receive messages"
"""What the runner prints when GitHub's broker refuses its version."""


def _pods(inventory: Inventory) -> dict[tuple[str, str], JsonObject]:
    return {fields.key_of(pod): pod for pod in inventory.runner_pods}


def pod_newer_than_runner(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    pods = _pods(inventory)
    found = []
    for runner in inventory.runners:
        pod = pods.get(fields.key_of(runner))
        if pod is None or fields.deleting(runner):
            continue
        gap = fields.seconds(fields.created(pod), fields.created(runner))
        if gap is not None and gap > limits.pod_newer_than_runner:
            found.append(
                Finding(
                    "pod-newer-than-runner",
                    fields.target("EphemeralRunner", runner),
                    f"its pod was created {gap:.0f}s after the runner: recreated from a JIT "
                    "config an earlier pod already used (ARC #4588); it cannot take jobs",
                    f"replace the runner: {fields.delete_runner(runner)}",
                    "error",
                )
            )
    return found


def running_without_job(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    pods = _pods(inventory)
    found = []
    for runner in inventory.runners:
        if fields.deleting(runner) or fields.status(runner).get("phase") != "Running":
            continue
        if fields.has_job(runner) or fields.key_of(runner) not in pods:
            continue  # without its pod it is runner-pod-missing, after a minute
        age = fields.seconds(inventory.now, fields.created(runner))
        if age is not None and age > limits.running_without_job:
            found.append(
                Finding(
                    "running-without-job",
                    fields.target("EphemeralRunner", runner),
                    f"phase Running with no job for {age:.0f}s since creation: ARC's "
                    "'pod runs' Running — idle, or a zombie whose registration is gone",
                    "check the runner on GitHub (Settings > Actions > Runners); if it is "
                    f"offline or missing, {fields.delete_runner(runner)}",
                )
            )
    return found


def last_change(runner: JsonObject) -> datetime | None:
    """The latest moment the runner is known to have changed: its creation, a write by any
    manager (``managedFields``), a recorded pod failure, a condition's transition."""
    times = [fields.created(runner)]
    times += [fields.time(entry.get("time")) for entry in fields.dicts(_managed(runner))]
    failures = fields.status(runner).get("failures")
    if isinstance(failures, dict):
        times += [fields.time(value) for value in failures.values()]
    times += [fields.time(c.get("lastTransitionTime")) for c in fields.conditions(runner).values()]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _managed(runner: JsonObject) -> object:
    return fields.meta(runner).get("managedFields")


def runner_pod_missing(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    pods = _pods(inventory)
    found = []
    for runner in inventory.runners:
        phase = fields.status(runner).get("phase")
        if fields.deleting(runner) or phase not in ("Running", "Pending"):
            continue
        if fields.key_of(runner) in pods:
            continue
        quiet = fields.seconds(inventory.now, last_change(runner))
        if quiet is None or quiet <= limits.pod_missing:
            continue
        job = " with a job" if fields.has_job(runner) else ""
        found.append(
            Finding(
                "runner-pod-missing",
                fields.target("EphemeralRunner", runner),
                f"phase {phase}{job} and no pod, unchanged for {quiet:.0f}s: the pod is gone "
                "and no controller acted (ARC recreates it from the used JIT config, ARC "
                "#4588); it holds a slot and can never take a job",
                "check the controller runs (scaleset doctor's controller checks); then "
                f"replace the runner: {fields.delete_runner(runner)}",
                "error",
            )
        )
    return found


def stuck_deleting(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    found = []
    kinds = (("EphemeralRunner", inventory.runners), ("EphemeralRunnerSet", inventory.runner_sets))
    for kind, objects in kinds:
        for obj in objects:
            since = fields.seconds(
                inventory.now, fields.time(fields.meta(obj).get("deletionTimestamp"))
            )
            finalizers = fields.strings(fields.meta(obj).get("finalizers"))
            if since is None or since <= limits.deleting or not finalizers:
                continue
            found.append(
                Finding(
                    "stuck-deleting",
                    fields.target(kind, obj),
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
        phase = fields.status(runner).get("phase")
        # Outdated is runner-version-deprecated: deleting it only brings another one
        if phase not in TERMINAL or phase == OUTDATED or fields.deleting(runner):
            continue
        reason = fields.status(runner).get("reason") or "no reason recorded"
        found.append(
            Finding(
                "terminal-holding-slot",
                fields.target("EphemeralRunner", runner),
                f"phase {phase} ({reason}) and not deleted: it counts towards the set's size",
                f"delete it so the set can create a working runner: {fields.delete_runner(runner)}",
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
        age = fields.seconds(inventory.now, fields.created(runner))
        if state is RunnerState.IDLE and age is not None and age > limits.idle_age:
            found.append(
                Finding(
                    "idle-past-age",
                    fields.target("EphemeralRunner", runner),
                    f"idle and {age / 3600:.1f}h old (limit {limits.idle_age / 3600:.1f}h)",
                    f"replace it with a fresh runner: {fields.delete_runner(runner)} (scaleset "
                    "retires such runners itself with SCALESET_MAX_RUNNER_AGE)",
                )
            )
    return found


def _owner(obj: JsonObject, kind: str) -> str | None:
    for ref in fields.dicts(fields.meta(obj).get("ownerReferences")):
        if ref.get("kind") == kind and ref.get("name"):
            return str(ref["name"])
    return None


def _deprecated_exit(pod: JsonObject) -> bool:
    """The runner container ended because GitHub refused its version: exit 7 (ARC sets
    ``ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1``) or the runner's own words in the
    termination message."""
    for container in fields.container_statuses(pod):
        if container.get("name") != keys.RUNNER_CONTAINER:
            continue
        for when in ("state", "lastState"):
            state = container.get(when)
            ended = state.get("terminated") if isinstance(state, dict) else None
            if not isinstance(ended, dict):
                continue
            if ended.get("exitCode") == keys.RUNNER_DEPRECATED_EXIT_CODE:
                return True
            if DEPRECATED_MESSAGE in str(ended.get("message") or ""):
                return True
    return False


def runner_version_deprecated(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    """One finding per runner set (or scale set, or lone runner) with any sign that GitHub
    refuses the runner version (ARC #4601): runners Outdated, runner containers that exited 7,
    a set in phase Outdated. ARC reports the scale set healthy meanwhile."""
    runners = {fields.key_of(r): r for r in inventory.runners}
    evidence: dict[str, list[str]] = defaultdict(list)
    outdated: dict[str, list[str]] = defaultdict(list)

    def set_of(runner: JsonObject) -> str:
        owner = _owner(runner, "EphemeralRunnerSet")
        if owner is None:
            return fields.target("EphemeralRunner", runner)
        return f"EphemeralRunnerSet {fields.namespace_of(runner)}/{owner}"

    for runner in inventory.runners:
        state = fields.status(runner)
        if not fields.deleting(runner) and OUTDATED in (state.get("phase"), state.get("reason")):
            outdated[set_of(runner)].append(fields.name_of(runner))
    for where, names in outdated.items():
        evidence[where].append(f"{len(names)} runner(s) Outdated ({', '.join(sorted(names))})")
    exited: dict[str, list[str]] = defaultdict(list)
    for pod in inventory.runner_pods:
        if _deprecated_exit(pod):
            owner = runners.get(fields.key_of(pod))
            where = set_of(owner) if owner is not None else fields.target("Pod", pod)
            exited[where].append(fields.name_of(pod))
    for where, names in exited.items():
        evidence[where].append(
            f"{len(names)} runner pod(s) whose runner exited 7 ({', '.join(sorted(names))})"
        )
    for runner_set in inventory.runner_sets:
        if fields.status(runner_set).get("phase") == OUTDATED:
            evidence[fields.target("EphemeralRunnerSet", runner_set)].append(
                "the runner set's phase is Outdated"
            )
    for scale_set in inventory.scale_sets:
        if fields.status(scale_set).get("phase") == OUTDATED:
            evidence[fields.target("AutoscalingRunnerSet", scale_set)].append(
                "the scale set's phase is Outdated"
            )
    found = []
    for where, seen in sorted(evidence.items()):
        found.append(
            Finding(
                "runner-version-deprecated",
                where,
                "GitHub refuses the runner version ('Runner version … is deprecated and "
                f"cannot receive messages'): {'; '.join(seen)}. No runner of it can take a job",
                "rebuild the runner image on a current actions/runner release and roll it out "
                "(the template's image, helm upgrade); then delete the Outdated runners",
                "error",
            )
        )
    return found
