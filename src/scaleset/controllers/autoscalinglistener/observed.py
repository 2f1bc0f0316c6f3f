"""What the AutoscalingListener reconciler knows when it decides: the listener, whether its scale
set exists, each of its objects as it is on the server, what the config needs (``Inputs``) or
why it cannot be written (``ConfigProblem``), and what an action just learned — frozen, parsed
once, no hidden state (the back-off lives in the listener's status).

Secrets enter only as digests (``SecretView``); credentials only inside ``Inputs``, whose repr
shows none.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

from scaleset.api import AutoscalingListener, Policy, Problem, keys, parse_kube_time, validate_under
from scaleset.controllers.autoscalinglistener.inputs import ConfigProblem, Inputs
from scaleset.controllers.autoscalinglistener.resources import content_digest
from scaleset.controllers.autoscalinglistener.settings import Settings
from scaleset.kube.objects import KubeObject

MESSAGE_LIMIT = 400
"""Longest termination or pod message kept in a condition, an Event or the status."""


@dataclass(frozen=True)
class MetadataFields:
    """What a decision reads of any object's metadata (each view below adds its own)."""

    name: str
    namespace: str
    uid: str
    deleting: bool
    labels: Mapping[str, str]
    annotations: Mapping[str, str]

    @classmethod
    def read(cls, obj: KubeObject, **rest: Any) -> Self:
        """The view of ``obj``: its metadata fields (the maps copied) and ``rest``."""
        return cls(
            name=obj.name,
            namespace=obj.namespace,
            uid=obj.uid,
            deleting=obj.is_deleting,
            labels=dict(obj.labels),
            annotations=dict(obj.annotations),
            **rest,
        )


@dataclass(frozen=True)
class ObjectView(MetadataFields):
    """A ServiceAccount, Role or RoleBinding as a decision reads it."""

    body: Mapping[str, Any] = field(repr=False)
    """The object's JSON (``rules``, ``roleRef``, ``subjects`` are read from here)."""


@dataclass(frozen=True)
class SecretView(MetadataFields):
    """A Secret as a decision reads it: its metadata and a digest of its content, never the
    content (``config.json`` is digested as the decoded JSON document, so spacing and key order
    do not count)."""

    owned: bool
    """Controlled by this listener (ours to rewrite and delete)."""
    digest: str


@dataclass(frozen=True)
class ContainerView:
    """The ``listener`` container's current state."""

    state: str = ""
    """``waiting``, ``running``, ``terminated`` or ``""`` (not reported yet)."""
    reason: str = ""
    message: str = ""
    exit_code: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    """When a terminated container ended (with ``started_at``: how long it ran)."""

    @property
    def ran_for(self) -> float | None:
        """Seconds a terminated container ran; None when the kubelet did not say."""
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


@dataclass(frozen=True)
class PodView(MetadataFields):
    """The listener pod as a decision reads it."""

    phase: str
    reason: str
    message: str
    listener: ContainerView | None
    unschedulable: str = ""
    """The scheduler's message while the pod cannot be placed (``PodScheduled=False``)."""

    @property
    def hash(self) -> str:
        return self.annotations.get(keys.LISTENER_POD_HASH_ANNOTATION, "")

    @property
    def evicted(self) -> bool:
        return self.reason == "Evicted"

    @property
    def ended(self) -> bool:
        """The listener will not run again in this pod: pod Failed/Succeeded (evicted, node
        lost, preempted), or the listener container terminated (``restartPolicy: Never``)."""
        if self.phase in ("Failed", "Succeeded") or self.evicted:
            return True
        return self.listener is not None and self.listener.state == "terminated"

    @property
    def running(self) -> bool:
        return not self.ended and self.listener is not None and self.listener.state == "running"


@dataclass(frozen=True)
class Refused:
    """Feedback: the API server refused to create an object: the pod (an invalid template, a
    forbidden field, a missing priority class), or the Role (the controller lacks a permission
    it would grant: the escalation check). ``reason`` is ``<Kind>Invalid`` or
    ``<Kind>Forbidden``."""

    kind: str
    reason: str
    message: str


Feedback = Refused


@dataclass(frozen=True)
class Observed:
    """Everything one decision reads."""

    listener: AutoscalingListener
    obj: KubeObject = field(repr=False)
    settings: Settings
    problems: tuple[Problem, ...] = ()
    scale_set_exists: bool = True
    service_account: ObjectView | None = None
    role: ObjectView | None = None
    role_binding: ObjectView | None = None
    config_secret: SecretView | None = None
    proxy_secret: SecretView | None = None
    pod: PodView | None = None
    inputs: Inputs | ConfigProblem | None = None
    """None while deleting (nothing is read for a listener on its way out)."""
    feedback: tuple[Feedback, ...] = ()


# --- parsing ---------------------------------------------------------------------------------


def observe_listener(
    obj: KubeObject, policy: Policy | None = None
) -> tuple[AutoscalingListener, tuple[Problem, ...]]:
    """The listener and its problems (``validate_under`` the controller's policy)."""
    listener = AutoscalingListener.model_validate(obj.raw)
    return listener, tuple(validate_under(listener, policy))


def observe_object(obj: KubeObject) -> ObjectView:
    return ObjectView.read(obj, body=obj.raw)


def _decoded(raw: Mapping[str, Any]) -> dict[str, Any]:
    data = raw.get("data")
    decoded: dict[str, Any] = {}
    if not isinstance(data, Mapping):
        return decoded
    for key, value in data.items():
        if not isinstance(value, str):
            continue
        try:
            text = base64.b64decode(value, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):  # ValueError: a non-ASCII str
            text = f"<undecodable:{len(value)}>"
        decoded[str(key)] = text
    return decoded


def config_document_of(raw: Mapping[str, Any]) -> Any:
    """The decoded ``config.json`` of a config Secret (None when absent or not JSON)."""
    text = _decoded(raw).get(keys.LISTENER_CONFIG_KEY)
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        return None


def observe_secret(obj: KubeObject, owner_uid: str, *, config: bool) -> SecretView:
    owner = obj.controller_owner
    content = config_document_of(obj.raw) if config else _decoded(obj.raw)
    return SecretView.read(
        obj,
        owned=owner is not None and owner.uid == owner_uid,
        digest=content_digest(content),
    )


def _short(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    stripped: str = text.strip()
    return stripped if len(stripped) <= MESSAGE_LIMIT else "…" + stripped[-MESSAGE_LIMIT:]


def _time(value: Any) -> datetime | None:
    try:
        return parse_kube_time(value)
    except ValueError:
        return None


def _container(status: Mapping[str, Any]) -> ContainerView:
    state = status.get("state")
    if not isinstance(state, Mapping):
        return ContainerView()
    for name in ("terminated", "running", "waiting"):
        detail = state.get(name)
        if isinstance(detail, Mapping):
            exit_code = detail.get("exitCode")
            return ContainerView(
                state=name,
                reason=str(detail.get("reason") or ""),
                message=_short(detail.get("message")),
                exit_code=exit_code if isinstance(exit_code, int) else None,
                started_at=_time(detail.get("startedAt")),
                finished_at=_time(detail.get("finishedAt")),
            )
    return ContainerView()


def observe_pod(obj: KubeObject) -> PodView:
    status = obj.raw.get("status") if isinstance(obj.raw.get("status"), Mapping) else {}
    assert isinstance(status, Mapping)
    listener: ContainerView | None = None
    for entry in status.get("containerStatuses") or []:
        if isinstance(entry, Mapping) and entry.get("name") == keys.LISTENER_CONTAINER:
            listener = _container(entry)
    unschedulable = ""
    for condition in status.get("conditions") or []:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
        ):
            unschedulable = _short(condition.get("message")) or str(condition.get("reason") or "")
    return PodView.read(
        obj,
        unschedulable=unschedulable,
        phase=str(status.get("phase") or ""),
        reason=str(status.get("reason") or ""),
        message=_short(status.get("message")),
        listener=listener,
    )
