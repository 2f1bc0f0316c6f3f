"""Builders for the AutoscalingListener ``plan`` tests: a listener, its objects as views, the
inputs of its config and the observed state — everything a healthy listener has unless a test
says otherwise."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from scaleset.api import format_kube_time, keys
from scaleset.controllers.autoscalinglistener import resources
from scaleset.controllers.autoscalinglistener.actions import Action, Note
from scaleset.controllers.autoscalinglistener.inputs import ConfigProblem, Credentials, Inputs
from scaleset.controllers.autoscalinglistener.observed import (
    ContainerView,
    Feedback,
    ObjectView,
    Observed,
    PodView,
    SecretView,
    observe_listener,
)
from scaleset.controllers.autoscalinglistener.settings import Settings
from scaleset.controllers.decisions import notes_of
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import AUTOSCALING_LISTENER

NOW = datetime(2027, 3, 1, 9, 0, 0, tzinfo=UTC)
NAME = "arc-7d8c9b5f-listener"
NAMESPACE = "arc-systems"
SCALE_SET_NAMESPACE = "arc-runners"
UID = "listener-uid-1"
POD_UID = "pod-uid-1"
PAT = "ghp_listenerPlanUnitTests0123456789abcd"
SETTINGS = Settings()
INPUTS = Inputs(credentials=Credentials(token=PAT))


def listener(
    *,
    finalizers: list[str] | None = None,
    deleting: bool = False,
    status: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A listener as JSON (``spec`` and ``status`` keys are the JSON names)."""
    metadata: dict[str, Any] = {
        "name": NAME,
        "namespace": NAMESPACE,
        "uid": UID,
        "resourceVersion": "100",
        "generation": 1,
        "labels": {
            "app.kubernetes.io/component": "runner-scale-set-listener",
            keys.SCALE_SET_NAME_LABEL: "arc",
            keys.SCALE_SET_NAMESPACE_LABEL: SCALE_SET_NAMESPACE,
            **(labels or {}),
        },
        "finalizers": ([keys.AUTOSCALING_LISTENER_FINALIZER] if finalizers is None else finalizers),
    }
    if deleting:
        metadata["deletionTimestamp"] = format_kube_time(NOW - timedelta(seconds=1))
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "AutoscalingListener",
        "metadata": metadata,
        "spec": {
            "githubConfigUrl": "https://github.com/acme",
            "githubConfigSecret": "github-config",
            "runnerScaleSetId": 7,
            "autoscalingRunnerSetNamespace": SCALE_SET_NAMESPACE,
            "autoscalingRunnerSetName": "arc",
            "ephemeralRunnerSetName": "arc",
            "minRunners": 0,
            "maxRunners": 10,
            "image": "ghcr.io/scaleset/scaleset:1.0.0",
            **spec,
        },
        "status": status or {},
    }


def _obj(raw: dict[str, Any]) -> KubeObject:
    return KubeObject(AUTOSCALING_LISTENER, raw)


def view(body: Mapping[str, Any], uid: str = "uid-x", *, deleting: bool = False) -> ObjectView:
    """An ObjectView of a body the controller built (as the server would return it)."""
    metadata = body["metadata"]
    return ObjectView(
        name=metadata["name"],
        namespace=metadata["namespace"],
        uid=uid,
        deleting=deleting,
        labels=dict(metadata.get("labels") or {}),
        annotations=dict(metadata.get("annotations") or {}),
        body=body,
    )


def secret_view(
    name: str,
    digest: str,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    uid: str = "secret-uid",
    deleting: bool = False,
) -> SecretView:
    return SecretView(
        name=name,
        namespace=NAMESPACE,
        uid=uid,
        deleting=deleting,
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        owned=True,
        digest=digest,
    )


def pod_view(
    *,
    pod_hash: str,
    uid: str = POD_UID,
    phase: str = "Running",
    reason: str = "",
    message: str = "",
    deleting: bool = False,
    labels: Mapping[str, str] | None = None,
    container: ContainerView | None = None,
) -> PodView:
    return PodView(
        name=NAME,
        namespace=NAMESPACE,
        uid=uid,
        phase=phase,
        reason=reason,
        message=message,
        deleting=deleting,
        labels=dict(labels or {}),
        annotations={keys.LISTENER_POD_HASH_ANNOTATION: pod_hash},
        listener=container,
    )


def running(started: datetime | None = None) -> ContainerView:
    return ContainerView(state="running", started_at=started or NOW - timedelta(seconds=30))


def exited(
    code: int,
    message: str = "",
    reason: str = "Error",
    *,
    ran: float | None = None,
) -> ContainerView:
    """A terminated listener container; ``ran``: seconds it ran before it ended at NOW."""
    started = None if ran is None else NOW - timedelta(seconds=ran)
    finished = None if ran is None else NOW
    return ContainerView(
        state="terminated",
        exit_code=code,
        reason=reason,
        message=message,
        started_at=started,
        finished_at=finished,
    )


def observed(
    raw: dict[str, Any] | None = None,
    *,
    settings: Settings = SETTINGS,
    inputs: Inputs | ConfigProblem | None = INPUTS,
    complete: bool = False,
    feedback: tuple[Feedback, ...] = (),
    **parts: Any,
) -> Observed:
    """The observed state; ``complete``: every object exists as the controller would write it
    (with a running, current pod), unless ``parts`` say otherwise."""
    obj = _obj(raw or listener())
    model, problems = observe_listener(obj)
    base = Observed(
        listener=model,
        obj=obj,
        settings=settings,
        problems=problems,
        inputs=inputs,
        feedback=feedback,
    )
    if complete:
        base = dataclasses.replace(base, **complete_parts(base))
    return dataclasses.replace(base, **parts)


def desired(o: Observed) -> dict[str, Any]:
    """What the controller would write for ``o`` (digests and bodies)."""
    inputs = o.inputs if isinstance(o.inputs, Inputs) else INPUTS
    document = resources.config_document(o.listener, inputs, o.settings)
    config_digest = resources.content_digest(document)
    proxy_digest = resources.content_digest(dict(inputs.proxy) if inputs.proxy else None)
    pod = resources.listener_pod(o.listener, o.settings, config_digest, proxy_digest)
    return {
        "config_digest": config_digest,
        "proxy_digest": proxy_digest,
        "pod": pod,
        "pod_hash": pod["metadata"]["annotations"][keys.LISTENER_POD_HASH_ANNOTATION],
    }


def complete_parts(o: Observed) -> dict[str, Any]:
    want = desired(o)
    config_labels = resources.config_secret_labels(o.listener, o.settings)
    parts: dict[str, Any] = {
        "service_account": view(resources.service_account(o.listener, o.settings), "sa-uid"),
        "role": view(resources.role(o.listener, o.settings), "role-uid"),
        "role_binding": view(resources.role_binding(o.listener, o.settings), "rb-uid"),
        "config_secret": secret_view(f"{NAME}-config", want["config_digest"], labels=config_labels),
        "pod": pod_view(
            pod_hash=want["pod_hash"],
            labels=want["pod"]["metadata"]["labels"],
            container=running(),
        ),
    }
    return parts


def kinds(actions: list[Action]) -> list[str]:
    return [type(action).__name__ for action in actions]


def reasons(actions: list[Action]) -> list[str]:
    return [note.reason for action in actions for note in notes_of(action)]


def events(actions: list[Action]) -> list[Note]:
    return [note for action in actions for note in notes_of(action) if note.message]
