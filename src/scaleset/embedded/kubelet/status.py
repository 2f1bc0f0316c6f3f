"""Pod status in the shapes a real kubelet writes: container states, conditions, phase (pure).

Nothing here does I/O. The pod worker keeps one ``ContainerRecord`` per container and asks this
module for the ``status`` object to write through ``pods/status``. The rules are the kubelet's
(``pkg/kubelet/status/generate.go`` and ``getPhase`` in ``kubelet_pods.go``):

- **Phase**: Pending while an init container has not finished or a container is waiting; Failed
  when an init container failed and the pod's restartPolicy is Never; Running while a container
  runs; once every container has stopped: Succeeded if all exited 0, Failed under Never
  (Running under Always/OnFailure, which restart). A pod the kubelet terminated (eviction,
  deletion) is terminal: Succeeded if every container exited 0, else Failed. Native sidecars
  (init containers with ``restartPolicy: Always``) count as initialised once started and never
  decide the phase.
- **Conditions**, in the kubelet's order: ``Initialized`` (False ``ContainersNotInitialized``
  "containers with incomplete status: [...]"), ``Ready`` and ``ContainersReady`` (False
  ``ContainersNotReady`` "containers with unready status: [...]", or ``PodCompleted`` once the
  pod Succeeded), ``PodScheduled`` (True); ``lastTransitionTime`` moves only when a condition's
  status changes. Conditions owned by someone else are kept as they are.
- **Container statuses**: ``state`` is exactly one of waiting / running / terminated,
  ``lastState`` the previous termination after a restart, ``ready``, ``started``,
  ``restartCount``, ``image``, ``imageID`` and ``containerID`` once created.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

JsonObject = dict[str, Any]

ContainerRole = Literal["init", "sidecar", "main"]
"""``init``: runs to completion before the others; ``sidecar``: an init container with
``restartPolicy: Always`` (keeps running); ``main``: an entry of ``spec.containers``."""

# Waiting reasons and messages, as the kubelet spells them.
CONTAINER_CREATING = "ContainerCreating"
POD_INITIALIZING = "PodInitializing"
ERR_IMAGE_PULL = "ErrImagePull"
IMAGE_PULL_BACK_OFF = "ImagePullBackOff"
CREATE_CONTAINER_CONFIG_ERROR = "CreateContainerConfigError"
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"

# Termination reasons.
COMPLETED = "Completed"
ERROR = "Error"
OOM_KILLED = "OOMKilled"

# Condition types and reasons.
INITIALIZED = "Initialized"
READY = "Ready"
CONTAINERS_READY = "ContainersReady"
POD_SCHEDULED = "PodScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
KUBELET_CONDITIONS = (INITIALIZED, READY, CONTAINERS_READY, POD_SCHEDULED)
CONTAINERS_NOT_READY = "ContainersNotReady"
CONTAINERS_NOT_INITIALIZED = "ContainersNotInitialized"
POD_COMPLETED = "PodCompleted"

Phase = Literal["Pending", "Running", "Succeeded", "Failed"]


def timestamp(moment: datetime) -> str:
    """RFC 3339 with second precision, as ``metav1.Time`` serialises."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Waiting:
    reason: str
    message: str = ""

    def to_json(self) -> JsonObject:
        body: JsonObject = {"reason": self.reason}
        if self.message:
            body["message"] = self.message
        return {"waiting": body}


@dataclass(frozen=True)
class Running:
    started_at: datetime

    def to_json(self) -> JsonObject:
        return {"running": {"startedAt": timestamp(self.started_at)}}


@dataclass(frozen=True)
class Terminated:
    exit_code: int
    reason: str
    started_at: datetime | None
    finished_at: datetime
    container_id: str
    message: str = ""

    def to_json(self) -> JsonObject:
        body: JsonObject = {
            "exitCode": self.exit_code,
            "reason": self.reason,
            "startedAt": timestamp(self.started_at) if self.started_at else None,
            "finishedAt": timestamp(self.finished_at),
            "containerID": self.container_id,
        }
        if self.message:
            body["message"] = self.message
        return {"terminated": body}


ContainerState = Waiting | Running | Terminated


def exit_reason(exit_code: int) -> str:
    """The runtime's reason for a process that exited by itself (OOM kills say OOMKilled)."""
    return COMPLETED if exit_code == 0 else ERROR


@dataclass(frozen=True)
class ContainerRecord:
    """What the kubelet knows about one container of a pod."""

    name: str
    image: str
    role: ContainerRole
    state: ContainerState
    last_state: Terminated | None = None
    restart_count: int = 0
    ready: bool = False
    container_id: str = ""

    @property
    def running(self) -> bool:
        return isinstance(self.state, Running)

    @property
    def terminated(self) -> Terminated | None:
        return self.state if isinstance(self.state, Terminated) else None

    def to_json(self) -> JsonObject:
        status: JsonObject = {
            "name": self.name,
            "state": self.state.to_json(),
            "lastState": self.last_state.to_json() if self.last_state else {},
            "ready": self.ready,
            "restartCount": self.restart_count,
            "image": normalize_image(self.image),
            "imageID": image_id(self.image) if self.container_id else "",
            "started": self.running,
        }
        if self.container_id:
            status["containerID"] = self.container_id
        return status


def waiting(name: str, image: str, role: ContainerRole, *, has_init: bool) -> ContainerRecord:
    """A container the kubelet has not created yet (its first status)."""
    reason = POD_INITIALIZING if has_init else CONTAINER_CREATING
    return ContainerRecord(name, image, role, Waiting(reason))


def started(record: ContainerRecord, *, at: datetime, pod_uid: str) -> ContainerRecord:
    """The container was created and started; a restart moves the last termination to
    ``lastState`` and counts in ``restartCount``. Init containers are ready only once done."""
    last_state = record.last_state
    restart_count = record.restart_count
    if record.container_id:  # it ran before: this is a restart
        last_state = record.terminated or record.last_state
        restart_count += 1
    return replace(
        record,
        state=Running(at),
        last_state=last_state,
        restart_count=restart_count,
        ready=record.role != "init",
        container_id=container_id(pod_uid, record.name, restart_count),
    )


def exited(
    record: ContainerRecord, *, exit_code: int, reason: str, at: datetime, message: str = ""
) -> ContainerRecord:
    """The container's process ended; an init container that exited 0 is ready."""
    started_at = record.state.started_at if isinstance(record.state, Running) else None
    state = Terminated(exit_code, reason, started_at, at, record.container_id, message)
    ready = record.role == "init" and exit_code == 0
    return replace(record, state=state, ready=ready)


def held(record: ContainerRecord, state: Waiting) -> ContainerRecord:
    """The container waits (pull, config error, back-off); a termination moves to ``lastState``."""
    last_state = record.terminated or record.last_state
    return replace(record, state=state, last_state=last_state, ready=False)


def container_id(pod_uid: str, name: str, restart_count: int) -> str:
    """A stable, containerd-shaped container ID."""
    digest = hashlib.sha256(f"{pod_uid}/{name}/{restart_count}".encode()).hexdigest()
    return f"containerd://{digest}"


def normalize_image(image: str) -> str:
    """The fully qualified reference a runtime reports (``busybox`` ->
    ``docker.io/library/busybox:latest``)."""
    name, sep, digest = image.partition("@")
    first, slash, _ = name.partition("/")
    if not slash:
        name = f"docker.io/library/{name}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{name}"
    last = name.rsplit("/", 1)[-1]
    if not sep and ":" not in last:
        name = f"{name}:latest"
    return f"{name}{sep}{digest}"


def image_id(image: str) -> str:
    """A repository digest reference for ``image`` (stable per image)."""
    reference = normalize_image(image)
    repository = reference.split("@", 1)[0]
    last = repository.rsplit("/", 1)
    if ":" in last[-1]:
        repository = repository.rsplit(":", 1)[0]
    digest = hashlib.sha256(reference.encode()).hexdigest()
    return f"{repository}@sha256:{digest}"


# ------------------------------------------------------------------------------------- phase


def pod_phase(
    restart_policy: str,
    init: Sequence[ContainerRecord],
    main: Sequence[ContainerRecord],
    *,
    terminal: bool = False,
) -> Phase:
    """The pod phase from its container records (the kubelet's ``getPhase``)."""
    pending_init = 0
    failed_init = 0
    for record in init:
        if record.role == "sidecar":
            if not record.running and record.terminated is None and record.restart_count == 0:
                pending_init += 1  # not started yet
            continue
        done = record.terminated
        if done is not None:
            if done.exit_code != 0:
                failed_init += 1
        elif isinstance(record.state, Waiting) and record.last_state is not None:
            if record.last_state.exit_code != 0:
                failed_init += 1
        else:
            pending_init += 1
    running = waiting_count = stopped = succeeded = 0
    for record in main:
        if record.running:
            running += 1
        elif (done := record.terminated) is not None:
            stopped += 1
            succeeded += done.exit_code == 0
        elif record.last_state is not None:
            stopped += 1
            succeeded += record.last_state.exit_code == 0
        else:
            waiting_count += 1
    if terminal:
        all_succeeded = succeeded == len(main) and stopped == len(main) and not failed_init
        return "Succeeded" if all_succeeded and main else "Failed"
    if failed_init and restart_policy == "Never":
        return "Failed"
    if pending_init or waiting_count:
        return "Pending"
    if running:
        return "Running"
    if stopped:
        if restart_policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if restart_policy == "Never":
            return "Failed"
        return "Running"
    return "Pending"


# -------------------------------------------------------------------------------- conditions


@dataclass(frozen=True)
class Condition:
    type: str
    status: Literal["True", "False"]
    reason: str = ""
    message: str = ""


def _unready_condition(kind: str, reason: str, message: str) -> Condition:
    return Condition(kind, "False", reason, message)


def initialized_condition(init: Sequence[ContainerRecord], phase: Phase) -> Condition:
    incomplete = [r.name for r in init if not (r.ready or (r.role == "sidecar" and r.running))]
    if phase == "Succeeded":
        return Condition(INITIALIZED, "True", POD_COMPLETED)
    if incomplete:
        return _unready_condition(
            INITIALIZED,
            CONTAINERS_NOT_INITIALIZED,
            f"containers with incomplete status: [{' '.join(incomplete)}]",
        )
    return Condition(INITIALIZED, "True")


def containers_ready_condition(main: Sequence[ContainerRecord], phase: Phase) -> Condition:
    if phase == "Succeeded":
        return Condition(CONTAINERS_READY, "False", POD_COMPLETED)
    unready = [r.name for r in main if not r.ready]
    if unready:
        return _unready_condition(
            CONTAINERS_READY,
            CONTAINERS_NOT_READY,
            f"containers with unready status: [{' '.join(unready)}]",
        )
    return Condition(CONTAINERS_READY, "True")


def ready_condition(containers_ready: Condition) -> Condition:
    return replace(containers_ready, type=READY)


def kubelet_conditions(
    init: Sequence[ContainerRecord], main: Sequence[ContainerRecord], phase: Phase
) -> list[Condition]:
    """Initialized, Ready, ContainersReady and PodScheduled, in the kubelet's order."""
    containers_ready = containers_ready_condition(main, phase)
    return [
        initialized_condition(init, phase),
        ready_condition(containers_ready),
        containers_ready,
        Condition(POD_SCHEDULED, "True"),
    ]


def merge_conditions(
    computed: Iterable[Condition],
    previous: Sequence[Mapping[str, Any]],
    now: datetime,
    *,
    extra: Iterable[Condition] = (),
) -> list[JsonObject]:
    """Conditions as JSON: ours (with ``lastTransitionTime`` kept while the status holds) and
    then every condition of ``previous`` that we do not own, unchanged."""
    by_type = {str(c.get("type")): c for c in previous if isinstance(c, Mapping)}
    ours = [*computed, *extra]
    owned = {c.type for c in ours}
    result: list[JsonObject] = []
    for condition in ours:
        before = by_type.get(condition.type)
        if before is None or before.get("status") != condition.status:
            transition = timestamp(now)
        else:
            transition = before.get("lastTransitionTime") or timestamp(now)
        body: JsonObject = {
            "type": condition.type,
            "status": condition.status,
            "lastProbeTime": None,
            "lastTransitionTime": transition,
        }
        if condition.reason:
            body["reason"] = condition.reason
        if condition.message:
            body["message"] = condition.message
        result.append(body)
    result.extend(dict(c) for t, c in by_type.items() if t not in owned)
    return result


# ------------------------------------------------------------------------------------ status


@dataclass(frozen=True)
class PodView:
    """Everything the status of one pod is computed from."""

    restart_policy: str
    init: Sequence[ContainerRecord]
    main: Sequence[ContainerRecord]
    host_ip: str
    pod_ip: str
    start_time: datetime
    terminal: bool = False
    reason: str = ""
    message: str = ""
    extra_conditions: Sequence[Condition] = field(default_factory=tuple)


def phase_of(view: PodView) -> Phase:
    return pod_phase(view.restart_policy, view.init, view.main, terminal=view.terminal)


def pod_status(view: PodView, previous: Mapping[str, Any], now: datetime) -> JsonObject:
    """The ``status`` to write for ``view``; ``previous`` is the status last observed."""
    phase = phase_of(view)
    previous_conditions = previous.get("conditions")
    conditions = merge_conditions(
        kubelet_conditions(view.init, view.main, phase),
        previous_conditions if isinstance(previous_conditions, list) else [],
        now,
        extra=view.extra_conditions,
    )
    status: JsonObject = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": view.host_ip,
        "startTime": timestamp(view.start_time),
        "containerStatuses": [record.to_json() for record in view.main],
    }
    if view.pod_ip:
        status["podIP"] = view.pod_ip
        status["podIPs"] = [{"ip": view.pod_ip}]
    if view.init:
        status["initContainerStatuses"] = [record.to_json() for record in view.init]
    if view.reason:
        status["reason"] = view.reason
    if view.message:
        status["message"] = view.message
    return status
