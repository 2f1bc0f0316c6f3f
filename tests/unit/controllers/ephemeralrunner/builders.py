"""Builders for ``plan`` tests: a runner, its pod view, its Secret view, and the observed state,
with everything a healthy runner has unless a test says otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from scaleset.api import EphemeralRunner, format_kube_time, keys
from scaleset.controllers.decisions import notes_of
from scaleset.controllers.ephemeralrunner.actions import Action, Note, Wait
from scaleset.controllers.ephemeralrunner.observed import (
    ContainerView,
    Feedback,
    Observed,
    PodView,
    SecretView,
    runner_problems,
)
from scaleset.controllers.ephemeralrunner.plan import job_annotations
from scaleset.controllers.ephemeralrunner.settings import Settings
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import EPHEMERAL_RUNNER

NOW = datetime(2027, 1, 15, 8, 0, 0, tzinfo=UTC)
NAME = "arc-runner-abc"
UID = "runner-uid-1"
POD_UID = "pod-uid-1"
POD_VERSION = "700"
SECRET_UID = "secret-uid-1"
RUNNER_ID = 42
SCALE_SET_ID = 7
FINALIZERS = [keys.EPHEMERAL_RUNNER_FINALIZER, keys.EPHEMERAL_RUNNER_REGISTRATION_FINALIZER]


def template(**spec: Any) -> dict[str, Any]:
    return {
        "containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner:2.335.1"}],
        **spec,
    }


def runner(
    *,
    finalizers: list[str] | None = None,
    deleting: bool = False,
    spec: dict[str, Any] | None = None,
    created: datetime | None = None,
    **status: Any,
) -> dict[str, Any]:
    """A runner as JSON (``status`` keys are the JSON names)."""
    metadata: dict[str, Any] = {
        "name": NAME,
        "namespace": "ns",
        "uid": UID,
        "resourceVersion": "100",
        "creationTimestamp": format_kube_time(created or NOW - timedelta(seconds=60)),
        "finalizers": FINALIZERS if finalizers is None else finalizers,
    }
    if deleting:
        metadata["deletionTimestamp"] = format_kube_time(NOW - timedelta(seconds=1))
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "EphemeralRunner",
        "metadata": metadata,
        "spec": {
            "githubConfigUrl": "https://github.com/acme",
            "githubConfigSecret": "github-config",
            "runnerScaleSetId": SCALE_SET_ID,
            "spec": template(),
            **(spec or {}),
        },
        "status": status,
    }


def registered(**status: Any) -> dict[str, Any]:
    """Status of a runner whose pod was created (runner id known, phase Pending)."""
    return {"phase": "Pending", "runnerId": RUNNER_ID, "runnerName": NAME, **status}


def busy(**status: Any) -> dict[str, Any]:
    """Status of a registered runner that started 100 s ago and runs a job (``status`` wins)."""
    return registered(
        **{
            "phase": "Running",
            "ready": True,
            "jobId": "j1",
            "jobRequestId": 5,
            "workflowRunId": 9,
            "runnerStartedAt": format_kube_time(NOW - timedelta(seconds=100)),
            **status,
        }
    )


def container(
    state: str = "running", reason: str = "", exit_code: int | None = None, ran: bool | None = None
) -> ContainerView:
    return ContainerView(
        name="runner",
        state=state,
        reason=reason,
        exit_code=exit_code,
        ever_ran=state in ("running", "terminated") if ran is None else ran,
    )


def pod(
    *,
    phase: str = "Running",
    runner_container: ContainerView | None = None,
    ready: bool = False,
    reason: str = "",
    deleting: bool = False,
    created: datetime | None = None,
    failed_init: str = "",
    uid: str = POD_UID,
    message: str = "",
    resource_version: str = POD_VERSION,
    job_annotations: Mapping[str, str] | None = None,
) -> PodView:
    return PodView(
        name=NAME,
        uid=uid,
        phase=phase,
        reason=reason,
        message=message,
        deleting=deleting,
        created_at=created or NOW - timedelta(seconds=30),
        ready=ready,
        runner=runner_container,
        failed_init_container=failed_init,
        resource_version=resource_version,
        job_annotations=dict(job_annotations or {}),
    )


def annotated_for(raw: dict[str, Any]) -> dict[str, str]:
    """The job annotations a pod of runner ``raw`` carries once the controller wrote them."""
    return job_annotations(EphemeralRunner.model_validate(raw))


def secret(runner_id: int = RUNNER_ID) -> SecretView:
    return SecretView(
        name=NAME, uid=SECRET_UID, runner_id=runner_id, runner_name=NAME, scale_set_id=7
    )


def observed(
    raw: dict[str, Any] | None = None,
    *,
    pod: PodView | None = None,
    secret: SecretView | None = None,
    feedback: tuple[Feedback, ...] = (),
    settings: Settings | None = None,
) -> Observed:
    raw = raw if raw is not None else runner()
    model = EphemeralRunner.model_validate(raw)
    return Observed(
        runner=model,
        obj=KubeObject(EPHEMERAL_RUNNER, raw),
        pod=pod,
        secret=secret,
        problems=runner_problems(model),
        feedback=feedback,
        settings=settings or Settings(),
    )


def kinds(actions: list[Action]) -> list[str]:
    return [type(action).__name__ for action in actions]


def reasons(actions: list[Action]) -> list[str]:
    return [note.reason for action in actions for note in notes_of(action)]


def notes(actions: list[Action]) -> list[Note]:
    return [note for action in actions for note in notes_of(action)]


def wait_of(actions: list[Action]) -> Wait:
    waits = [action for action in actions if isinstance(action, Wait)]
    assert len(waits) <= 1, actions
    assert not waits or actions[-1] is waits[0], actions
    return waits[0] if waits else Wait()
