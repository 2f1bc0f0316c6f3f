"""What the EphemeralRunner reconciler knows when it decides: the runner, its pod, its JIT Secret
and what GitHub last answered in this reconcile — frozen, parsed once, no hidden state.

``PodView`` and ``SecretView`` are the parts of the pod and the Secret a decision reads (the
Secret's JIT config itself never enters here: only its runner id, name and scale set id).
``Feedback`` is what an action learned from GitHub that the next round of ``plan`` must see
(a name already registered, a busy registration, unusable GitHub settings); it lives for one
reconcile only — across reconciles everything needed is in the API server.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scaleset.api import EphemeralRunner, Problem, keys, parse_kube_time, validate
from scaleset.api.owned import string_map
from scaleset.controllers.access_error import GitHubProblem
from scaleset.controllers.ephemeralrunner.settings import Settings
from scaleset.kube.objects import KubeObject

IMAGE_WAITING_REASONS = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
)
"""The runner container waits on its image: it has never run (L5 proof)."""
CONFIG_WAITING_REASONS = frozenset({"CreateContainerConfigError", "CreateContainerError"})
"""The kubelet could not create the runner container: it has never run (L5 proof)."""
ADMISSION_REASONS = frozenset({"UnexpectedAdmissionError", "NodeAffinity", "NodeSelector"})
"""Pod reasons of a kubelet admission rejection besides ``OutOf<resource>``."""


@dataclass(frozen=True)
class ContainerView:
    """One container's status: its current state and whether it ever ran."""

    name: str
    state: str = ""
    """``waiting``, ``running``, ``terminated`` or ``""`` (no state reported)."""
    reason: str = ""
    exit_code: int | None = None
    ever_ran: bool = False
    """``running`` or ``terminated`` now, or any ``lastState``: the process was started."""

    @property
    def waiting_reason(self) -> str:
        return self.reason if self.state == "waiting" else ""


@dataclass(frozen=True)
class PodView:
    """The runner pod as decisions read it."""

    name: str
    uid: str
    phase: str = ""
    reason: str = ""
    message: str = ""
    deleting: bool = False
    created_at: datetime | None = None
    resource_version: str = ""
    """The version read: a deletion decided on what it shows is made only if the pod has not
    changed since (L5: the runner container may have started in between)."""
    ready: bool = False
    runner: ContainerView | None = None
    failed_init_container: str = ""
    """An init container (not a native sidecar) that terminated non-zero."""
    job_annotations: Mapping[str, str] = field(default_factory=dict, hash=False)
    """The pod's annotations among ``keys.JOB_ANNOTATIONS`` (the job it runs)."""

    @property
    def runner_started(self) -> bool:
        """The runner container has run (so it used its JIT config)."""
        return self.runner is not None and self.runner.ever_ran

    @property
    def runner_exit_code(self) -> int | None:
        runner = self.runner
        if runner is None or runner.state != "terminated":
            return None
        return runner.exit_code

    @property
    def finished(self) -> bool:
        """Phase Succeeded or Failed: nothing in it runs any more."""
        return self.phase in ("Succeeded", "Failed")

    @property
    def alive(self) -> bool:
        return not self.deleting and not self.finished

    @property
    def admission_rejected(self) -> bool:
        """The kubelet refused the pod at admission (``OutOf<resource>`` …)."""
        return self.phase == "Failed" and (
            self.reason.startswith("OutOf") or self.reason in ADMISSION_REASONS
        )


@dataclass(frozen=True)
class SecretView:
    """The JIT Secret: which registration it holds (never the JIT config itself)."""

    name: str
    uid: str
    runner_id: int = 0
    runner_name: str = ""
    scale_set_id: int = 0
    deleting: bool = False


@dataclass(frozen=True)
class NameTaken:
    """generatejitconfig said the runner's name is registered (AgentExists). ``found``: the
    lookup by name found that registration (``runner_id`` in ``scale_set_id``)."""

    found: bool
    runner_id: int = 0
    scale_set_id: int = 0


@dataclass(frozen=True)
class RegistrationBusy:
    """Removing a registration answered JobStillRunning."""

    runner_id: int


@dataclass(frozen=True)
class RegistrationRemoved:
    """This reconcile removed the runner's registration (or found it already gone)."""

    runner_id: int


@dataclass(frozen=True)
class PodRefused:
    """The API server refused the pod: ``quota`` (a ResourceQuota: retry later), ``invalid``
    (422, or a Forbidden that is not a quota: the template cannot work). ``message`` is the
    server's."""

    kind: str
    message: str


@dataclass(frozen=True)
class HookPodsDeleted:
    """The container-hook pods and Secrets of this runner were deleted in this reconcile."""


@dataclass(frozen=True)
class PodPatchForbidden:
    """The API server refused this controller ``patch`` on pods in the runner's namespace (a
    Role without it, e.g. ARC's runner-set chart): the job annotations are not written there.
    ``message`` is the server's; ``announced``: an earlier reconcile of this process already
    reported it (no call is made again until the controller restarts)."""

    message: str
    announced: bool = False


Feedback = (
    NameTaken
    | RegistrationBusy
    | GitHubProblem
    | RegistrationRemoved
    | PodRefused
    | HookPodsDeleted
    | PodPatchForbidden
)


@dataclass(frozen=True)
class Observed:
    """Everything ``plan`` decides on."""

    runner: EphemeralRunner
    obj: KubeObject
    """The runner as read (its resourceVersion guards every status write)."""
    pod: PodView | None
    secret: SecretView | None
    problems: tuple[Problem, ...] = ()
    feedback: tuple[Feedback, ...] = ()
    settings: Settings = field(default_factory=Settings)

    @property
    def name(self) -> str:
        return self.runner.metadata.name

    def learned(self, kind: type[Feedback]) -> Feedback | None:
        """The latest feedback of ``kind`` from this reconcile."""
        return next((item for item in reversed(self.feedback) if isinstance(item, kind)), None)


# --- parsing --------------------------------------------------------------------------------


def observe_runner(obj: KubeObject) -> EphemeralRunner:
    return EphemeralRunner.model_validate(obj.raw)


def runner_problems(runner: EphemeralRunner) -> tuple[Problem, ...]:
    return tuple(validate(runner))


def observe_pod(obj: KubeObject) -> PodView:
    status = obj.status
    spec = obj.spec
    created = obj.metadata.get("creationTimestamp")
    return PodView(
        name=obj.name,
        uid=obj.uid,
        phase=_text(status.get("phase")),
        reason=_text(status.get("reason")),
        message=_text(status.get("message")),
        deleting=obj.is_deleting,
        created_at=_time(created),
        resource_version=obj.resource_version,
        ready=_ready(status),
        runner=_container(status.get("containerStatuses"), keys.RUNNER_CONTAINER),
        failed_init_container=_failed_init(spec, status.get("initContainerStatuses")),
        job_annotations=_job_annotations(obj.metadata.get("annotations")),
    )


def observe_secret(obj: KubeObject) -> SecretView:
    data = obj.raw.get("data")
    values = data if isinstance(data, dict) else {}
    return SecretView(
        name=obj.name,
        uid=obj.uid,
        runner_id=_int(_decoded(values.get(keys.JIT_RUNNER_ID_KEY))),
        runner_name=_decoded(values.get(keys.JIT_RUNNER_NAME_KEY)),
        scale_set_id=_int(_decoded(values.get(keys.JIT_SCALE_SET_ID_KEY))),
        deleting=obj.is_deleting,
    )


def _job_annotations(annotations: object) -> Mapping[str, str]:
    shown = string_map(annotations)
    return {key: shown[key] for key in keys.JOB_ANNOTATIONS if key in shown}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _time(value: object) -> datetime | None:
    try:
        return parse_kube_time(value)
    except ValueError:
        return None


def _ready(status: Mapping[str, Any]) -> bool:
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return False
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def _container(statuses: object, name: str) -> ContainerView | None:
    if not isinstance(statuses, list):
        return None
    for entry in statuses:
        if isinstance(entry, dict) and entry.get("name") == name:
            return _container_view(entry)
    return None


def _container_view(entry: Mapping[str, Any]) -> ContainerView:
    state = entry.get("state")
    kind, body = "", {}
    if isinstance(state, dict) and state:
        kind, raw = next(iter(state.items()))
        body = raw if isinstance(raw, dict) else {}
    last = entry.get("lastState")
    ran_before = isinstance(last, dict) and any(k in last for k in ("running", "terminated"))
    exit_code = body.get("exitCode") if kind == "terminated" else None
    return ContainerView(
        name=_text(entry.get("name")),
        state=str(kind),
        reason=_text(body.get("reason")),
        exit_code=exit_code if isinstance(exit_code, int) else None,
        ever_ran=kind in ("running", "terminated") or ran_before,
    )


def _failed_init(spec: Mapping[str, Any], statuses: object) -> str:
    """The first init container (not a native sidecar) that terminated non-zero."""
    sidecars = {
        container.get("name")
        for container in spec.get("initContainers") or []
        if isinstance(container, dict) and container.get("restartPolicy") == "Always"
    }
    if not isinstance(statuses, list):
        return ""
    for entry in statuses:
        if not isinstance(entry, dict) or entry.get("name") in sidecars:
            continue
        view = _container_view(entry)
        if view.state == "terminated" and view.exit_code not in (None, 0):
            return view.name
    return ""


def _decoded(value: object) -> str:
    if not isinstance(value, str):
        return ""
    try:
        return base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):  # ValueError: a non-ASCII str
        return ""


def _int(text: str) -> int:
    """A decimal number of ASCII digits, else 0 (``"²".isdigit()`` is true, ``int`` refuses
    it; so does ``int`` a string of more than 4,300 digits)."""
    stripped = text.strip()
    if not (stripped.isascii() and stripped.isdigit()):
        return 0
    try:
        return int(stripped)
    except ValueError:
        return 0
