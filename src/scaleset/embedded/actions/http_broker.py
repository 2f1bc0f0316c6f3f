"""Runner side of the fake (the "broker"): what a runner process started from a JIT config calls.

The real runner's broker protocol is out of scope; these endpoints are the fake's own (ledger
assumption A-RUNNER), shaped after what public runner logs show: ``POST {broker}/session``
answering 409 ``TaskAgentSessionConflictException`` while another session of the same runner
lives, and 404 "Registration … was not found" once the registration is deleted (ARC #4588).
Authentication is ``Authorization: Bearer <credential from the JIT config>``.

    POST   /broker/session                                 open the runner's session
    DELETE /broker/session?sessionId=S                     close it
    GET    /broker/message?sessionId=S&runnerVersion=V     long poll: the job (200) or 202;
                                                           403 for a deprecated version
    POST   /broker/jobs/{requestId}/start?sessionId=S      the job started (-> JobStarted)
    GET    /broker/jobs/{requestId}/cancellation?sessionId=S   long poll: 200 once cancelled
    POST   /broker/jobs/{requestId}/complete?sessionId=S   {"result": ...} (-> JobCompleted)
"""

from __future__ import annotations

import json
from collections.abc import Callable

from scaleset.embedded.actions import errors
from scaleset.embedded.actions.context import FakeContext
from scaleset.embedded.actions.errors import ActionsError
from scaleset.embedded.actions.faults import Surface
from scaleset.embedded.actions.model import Job, Runner
from scaleset.embedded.actions.routing import Call, Reply, Router

RUNNER_JOB_MESSAGE = "RunnerJobRequest"


def _credential(call: Call) -> str:
    scheme, _, value = (call.header("Authorization") or "").strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _session_id(call: Call) -> str:
    session_id = call.query.get("sessionId")
    if not session_id:
        raise ActionsError(400, errors.INVALID_ARGUMENT, "sessionId is required.")
    return session_id


def _request_id(call: Call) -> int:
    try:
        return int(call.params["request"])
    except ValueError:
        raise ActionsError(404, errors.JOB_NOT_FOUND, "Unknown job.") from None


def job_payload(job: Job) -> dict[str, object]:
    """What the runner learns about its job (``durationSeconds`` is the simulation's knob)."""
    return {
        "runnerRequestId": job.id,
        "jobId": job.job_id,
        "jobDisplayName": job.display_name,
        "repository": f"{job.owner}/{job.repository}",
        "requestLabels": list(job.labels),
        "durationSeconds": job.duration_seconds,
        "plannedResult": job.planned_result,
    }


class BrokerApi:
    def __init__(self, context: FakeContext) -> None:
        self._ctx = context

    def register(self, router: Router) -> None:
        add, broker = router.add, Surface.BROKER
        add("POST", "/broker/session", self.open_session, broker)
        add("DELETE", "/broker/session", self.close_session, broker)
        add("GET", "/broker/message", self.next_job, broker)
        add("POST", "/broker/jobs/{request}/start", self.start, broker)
        add("GET", "/broker/jobs/{request}/cancellation", self.cancellation, broker)
        add("POST", "/broker/jobs/{request}/complete", self.complete, broker)

    def _runner(self, call: Call) -> Runner:
        return self._ctx.service.runner_in_session(_credential(call), _session_id(call))

    async def open_session(self, call: Call) -> Reply:
        runner, session = self._ctx.service.open_runner_session(_credential(call))
        return Reply.of(
            200,
            {
                "sessionId": session.id,
                "runnerId": runner.id,
                "runnerName": runner.name,
                "runnerScaleSetId": runner.scale_set_id,
            },
        )

    async def close_session(self, call: Call) -> Reply:
        self._ctx.service.close_runner_session(_credential(call), _session_id(call))
        return Reply.empty(204)

    async def _hold(self, call: Call, ready: Callable[[Runner], Reply | None]) -> Reply:
        """Long poll on the runner's session until ``ready`` has an answer or the hold ends."""
        runner = self._runner(call)
        session = runner.session
        assert session is not None
        session.active_polls += 1
        try:
            reply = await self._ctx.hold(
                self._ctx.runner_poll_hold_seconds,
                lambda: ready(runner),
                lambda: runner.session is session,
            )
        finally:
            session.active_polls -= 1
            self._ctx.service.touch_runner(session)
        return reply if reply is not None else Reply.empty(202)

    async def next_job(self, call: Call) -> Reply:
        self._runner(call)  # the session first: a stranger learns nothing about versions
        self._ctx.service.refuse_deprecated_version(call.query.get("runnerVersion") or "")

        def ready(runner: Runner) -> Reply | None:
            job = self._ctx.service.dispatch_job(runner)
            if job is None:
                return None
            return Reply.of(
                200, {"messageType": RUNNER_JOB_MESSAGE, "body": json.dumps(job_payload(job))}
            )

        return await self._hold(call, ready)

    async def start(self, call: Call) -> Reply:
        job = self._ctx.service.job_started(self._runner(call), _request_id(call))
        return Reply.of(200, {"runnerRequestId": job.id, "state": job.state.value})

    async def cancellation(self, call: Call) -> Reply:
        request_id = _request_id(call)

        def ready(runner: Runner) -> Reply | None:
            if runner.job_request_id != request_id:
                raise ActionsError(
                    404, errors.JOB_NOT_FOUND, f"Job {request_id} is not assigned to this runner."
                )
            job = self._ctx.service.jobs[request_id]
            return Reply.of(200, {"canceled": True}) if job.cancel_requested else None

        return await self._hold(call, ready)

    async def complete(self, call: Call) -> Reply:
        body = await call.json(allow_empty=True)
        result = body.get("result") if isinstance(body, dict) else None
        if result is not None and not isinstance(result, str):
            raise ActionsError(400, errors.INVALID_ARGUMENT, "result must be a string.")
        job = self._ctx.service.job_completed(self._runner(call), _request_id(call), result or "")
        return Reply.of(200, {"runnerRequestId": job.id, "result": job.result})
