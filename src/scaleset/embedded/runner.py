"""The simulated runner: what runs "inside" a runner pod under the simulated kubelet.

``run_runner(env)`` plays the runner container: it reads ``ACTIONS_RUNNER_INPUT_JITCONFIG`` from
the container's resolved environment, opens its session on the fake service's broker, takes one
job, runs it for the job's duration (on the injected ``scaleset.clock.Clock``, so tests advance
a ``ManualClock`` instead of waiting), reports start and completion (the fake turns them into
JobStarted and JobCompleted for the scale set's listener) and returns the container's exit code.

Exit codes follow the real image: the listener's return code goes through ``run.sh``'s mapping
(actions/runner ``run-helper.sh.template``) — 0 on success, 0 on a terminated error (bad config,
registration deleted), 0 after giving up on a session conflict, 7 for an outdated runner only when
``ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1`` (ARC sets it), 2 for retryable errors.

The two zombie modes of ARC #4588 come out of the fake's rules, not out of this module: a second
process started from a used JIT config meets 409 while the first session lives and retries every
``conflict_retry_seconds`` ("Retrying until reconnected"); once the registration is deleted it
meets "Registration … was not found" and exits. Faults: ``hang_after_completion`` (never exits),
``crash_mid_job`` (dies half-way through the job without reporting), ``outdated`` (exit 7).
Without the fault, a runner also exits as outdated when the fake refuses its version
(``RUNNER_VERSION``) on the message poll (``FakeControl.deprecate_runner_versions_below``).

Stopping: cancelling the task is a hard kill (no clean-up, like a vanished node); setting
``stop`` is SIGTERM: an idle runner closes its session and exits 0, a busy one reports its job
``failed`` first.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import json
import logging
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from scaleset.clock import Clock, SystemClock
from scaleset.embedded.actions.jitconfig import JitConfigError, JitRunnerConfig, decode_jit_config

JIT_CONFIG_ENV = "ACTIONS_RUNNER_INPUT_JITCONFIG"
DEPRECATED_EXIT_CODE_ENV = "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE"
EXTRA_USER_AGENT_ENV = "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT"
RUNNER_VERSION = "2.335.1"

log = logging.getLogger(__name__)


class ListenerCode(enum.IntEnum):
    """``Runner.Listener`` return codes (actions/runner ``Constants.Runner.ReturnCode``)."""

    SUCCESS = 0
    TERMINATED_ERROR = 1
    RETRYABLE_ERROR = 2
    SESSION_CONFLICT = 5
    VERSION_DEPRECATED = 7


def container_exit_code(code: ListenerCode, env: Mapping[str, str]) -> int:
    """What ``run.sh`` exits with for a listener return code (run-helper.sh mapping)."""
    if code is ListenerCode.VERSION_DEPRECATED:
        return 7 if env.get(DEPRECATED_EXIT_CODE_ENV) == "1" else 0
    if code is ListenerCode.RETRYABLE_ERROR:
        return 2
    return 0


class RunnerPhase(enum.StrEnum):
    """What the simulated runner is doing (reported through ``on_phase``)."""

    INVALID_CONFIG = "invalid-config"
    OUTDATED = "outdated"
    CONNECTING = "connecting"
    SESSION_CONFLICT = "session-conflict"
    REGISTRATION_DELETED = "registration-deleted"
    LISTENING = "listening"
    JOB_RECEIVED = "job-received"
    JOB_STARTED = "job-started"
    JOB_CANCELED = "job-canceled"
    JOB_COMPLETED = "job-completed"
    HANGING = "hanging"
    CRASHED = "crashed"
    STOPPING = "stopping"
    EXITED = "exited"


@dataclass(frozen=True)
class RunnerFaults:
    hang_after_completion: bool = False
    """Report completion, then never exit (the pod stays Running)."""
    crash_mid_job: bool = False
    """Die half-way through the job: no completion report, no session close."""
    crash_exit_code: int = 1
    outdated: bool = False
    """Refuse to run as a deprecated runner version (listener code 7)."""


@dataclass(frozen=True)
class RunnerJob:
    """The job a runner received."""

    runner_request_id: int
    job_id: str
    display_name: str
    duration_seconds: float
    planned_result: str


class _Refused(Exception):
    """The broker refused a call; ``type_name`` is the exception type from its JSON body."""

    def __init__(self, status: int, type_name: str) -> None:
        super().__init__(f"broker answered {status} {type_name}".strip())
        self.status = status
        self.type_name = type_name


PhaseCallback = Callable[[RunnerPhase], None]


class _Runner:
    """One simulated runner process; see the module docstring."""

    def __init__(
        self,
        env: Mapping[str, str],
        config: JitRunnerConfig,
        client: httpx2.AsyncClient,
        *,
        clock: Clock,
        faults: RunnerFaults,
        on_phase: PhaseCallback,
        stop: asyncio.Event,
        conflict_retry_seconds: float,
        session_conflict_give_up_seconds: float | None,
        transient_retry_seconds: float,
    ) -> None:
        self._env = env
        self._config = config
        self._client = client
        self._clock = clock
        self._faults = faults
        self._phase = on_phase
        self._stop = stop
        self._conflict_retry = conflict_retry_seconds
        self._conflict_give_up = session_conflict_give_up_seconds
        self._transient_retry = transient_retry_seconds
        self._session_id: str | None = None

    # -------------------------------------------------------------------------- calls

    async def _call(self, method: str, path: str, *, body: Any = None) -> httpx2.Response:
        """One broker call; retries transport errors and 5xx/429 forever (as the runner does),
        raises ``_Refused`` for any other refusal. The message poll names the runner's version,
        as the real runner's does."""
        url = self._config.broker_url + path
        params = {"sessionId": self._session_id} if self._session_id else {}
        if path == "message":
            params["runnerVersion"] = RUNNER_VERSION
        while True:
            try:
                response = await self._client.request(
                    method,
                    url,
                    params=params,
                    json=body,
                    headers={"Authorization": f"Bearer {self._config.credential}"},
                )
            except httpx2.TransportError as error:
                log.info("runner %s: broker unreachable (%s), retrying", self._name, type(error))
                await self._pause(self._transient_retry)
                continue
            if response.status_code >= 500 or response.status_code == 429:
                await self._pause(self._transient_retry)
                continue
            if response.status_code in (200, 202, 204):
                return response
            raise _Refused(response.status_code, _type_name(response))

    async def _pause(self, seconds: float) -> None:
        """Sleep on the injected clock, but wake for a stop request."""
        stop_wait = asyncio.ensure_future(self._stop.wait())
        nap = asyncio.ensure_future(self._clock.sleep(seconds))
        try:
            await asyncio.wait({stop_wait, nap}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await _cancel_and_wait(stop_wait, nap)

    @property
    def _name(self) -> str:
        return self._config.runner_name

    # --------------------------------------------------------------------------- life

    async def run(self) -> int:
        if self._faults.outdated:
            self._phase(RunnerPhase.OUTDATED)
            return self._exit(ListenerCode.VERSION_DEPRECATED)
        code = await self._connect()
        if code is not None:
            return self._exit(code)
        job = await self._wait_for_job()
        if job is None:
            return self._exit(await self._leave(ListenerCode.SUCCESS))
        if isinstance(job, ListenerCode):
            return self._exit(job)
        return await self._run_job(job)

    def _exit(self, code: ListenerCode) -> int:
        self._phase(RunnerPhase.EXITED)
        return container_exit_code(code, self._env)

    async def _connect(self) -> ListenerCode | None:
        """Open the runner session; ``None`` once connected, else the listener's exit code."""
        waited = 0.0
        while True:
            self._phase(RunnerPhase.CONNECTING)
            self._session_id = None
            try:
                response = await self._call("POST", "session", body={"version": RUNNER_VERSION})
            except _Refused as refused:
                if refused.status == 409:
                    self._phase(RunnerPhase.SESSION_CONFLICT)
                    log.info("runner %s: session conflict, retrying until reconnected", self._name)
                    if self._conflict_give_up is not None and waited >= self._conflict_give_up:
                        return ListenerCode.SESSION_CONFLICT
                    await self._pause(self._conflict_retry)
                    waited += self._conflict_retry
                    if self._stop.is_set():
                        return ListenerCode.SUCCESS
                    continue
                if refused.status == 404:
                    self._phase(RunnerPhase.REGISTRATION_DELETED)
                    log.info("runner %s: the registration has been deleted", self._name)
                else:
                    log.info("runner %s: cannot create a session (%s)", self._name, refused)
                return ListenerCode.TERMINATED_ERROR
            self._session_id = str(response.json()["sessionId"])
            self._phase(RunnerPhase.LISTENING)
            return None

    async def _wait_for_job(self) -> RunnerJob | ListenerCode | None:
        """Long-poll for the job; ``None`` when stopped while idle."""
        while not self._stop.is_set():
            poll = asyncio.ensure_future(self._call("GET", "message"))
            stop_wait = asyncio.ensure_future(self._stop.wait())
            try:
                await asyncio.wait({poll, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                # however the wait ends (an answer, a stop, a kill landing at any await here),
                # both are cancelled before anything is awaited: the long poll ends with us, not
                # after its client (a poll that answered keeps its answer)
                await _cancel_and_wait(poll, stop_wait)
            if poll.cancelled():
                return None
            try:
                response = poll.result()
            except _Refused as refused:
                if refused.status == 404 and "AgentNotFound" in refused.type_name:
                    self._phase(RunnerPhase.REGISTRATION_DELETED)
                    return ListenerCode.TERMINATED_ERROR
                if refused.status == 403 and "AccessDenied" in refused.type_name:
                    self._phase(RunnerPhase.OUTDATED)  # "Runner version … is deprecated"
                    log.info("runner %s: its version is deprecated, exiting", self._name)
                    return ListenerCode.VERSION_DEPRECATED
                if refused.status == 404:
                    code = await self._connect()  # the service dropped our session
                    if code is not None:
                        return code
                    continue
                raise
            if response.status_code == 200:
                body = json.loads(response.json()["body"])
                self._phase(RunnerPhase.JOB_RECEIVED)
                return RunnerJob(
                    runner_request_id=int(body["runnerRequestId"]),
                    job_id=str(body["jobId"]),
                    display_name=str(body["jobDisplayName"]),
                    duration_seconds=float(body["durationSeconds"]),
                    planned_result=str(body["plannedResult"]),
                )
        return None

    async def _run_job(self, job: RunnerJob) -> int:
        jobs = f"jobs/{job.runner_request_id}"
        try:
            await self._call("POST", f"{jobs}/start")
        except _Refused as refused:
            log.info("runner %s: the job could not start (%s)", self._name, refused)
            return self._exit(await self._leave(ListenerCode.TERMINATED_ERROR))
        self._phase(RunnerPhase.JOB_STARTED)
        if self._faults.crash_mid_job:
            await self._clock.sleep(job.duration_seconds / 2)
            self._phase(RunnerPhase.CRASHED)
            return self._faults.crash_exit_code
        result = await self._work(job)
        with contextlib.suppress(_Refused):
            await self._call("POST", f"{jobs}/complete", body={"result": result})
        self._phase(RunnerPhase.JOB_COMPLETED)
        if self._faults.hang_after_completion:
            self._phase(RunnerPhase.HANGING)
            await asyncio.Event().wait()
        return self._exit(await self._leave(ListenerCode.SUCCESS))

    async def _work(self, job: RunnerJob) -> str:
        """Run the job for its duration; stop early when it is cancelled or SIGTERM arrives."""
        work = asyncio.ensure_future(self._clock.sleep(job.duration_seconds))
        watch = asyncio.ensure_future(self._watch_cancellation(job))
        stop_wait = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({work, watch, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await _cancel_and_wait(work, watch, stop_wait)
        if work.done() and not work.cancelled():
            return job.planned_result
        if watch.done() and not watch.cancelled():
            if watch.result() == "canceled":
                self._phase(RunnerPhase.JOB_CANCELED)
                return "canceled"
            return "failed"  # the service no longer has the job on this runner
        self._phase(RunnerPhase.STOPPING)
        return "failed"

    async def _watch_cancellation(self, job: RunnerJob) -> str:
        """Returns ``canceled`` once the service cancels the job, ``lost`` if it drops it."""
        path = f"jobs/{job.runner_request_id}/cancellation"
        while True:
            try:
                response = await self._call("GET", path)
            except _Refused:
                return "lost"
            if response.status_code == 200 and response.json().get("canceled"):
                return "canceled"

    async def _leave(self, code: ListenerCode) -> ListenerCode:
        """Close the session (best effort: an ephemeral runner's registration may be gone)."""
        if self._session_id is not None:
            with contextlib.suppress(_Refused, httpx2.HTTPError):
                await self._call("DELETE", "session")
            self._session_id = None
        return code


async def _cancel_and_wait(*tasks: asyncio.Future[Any]) -> None:
    """Cancel the tasks still running and wait until all have ended, retrieving every outcome:
    no call is left running against a client about to close, none reported as never retrieved."""
    for task in tasks:
        task.cancel()  # at once, before the first await: a kill during it leaves none running
    await asyncio.gather(*tasks, return_exceptions=True)


def _type_name(response: httpx2.Response) -> str:
    try:
        body = json.loads(response.content.decode("utf-8-sig") or "null")
    except ValueError:
        return ""
    return str(body.get("typeName", "")) if isinstance(body, dict) else ""


async def run_runner(
    env: Mapping[str, str],
    *,
    clock: Clock | None = None,
    faults: RunnerFaults | None = None,
    verify: ssl.SSLContext | bool = True,
    on_phase: PhaseCallback | None = None,
    stop: asyncio.Event | None = None,
    conflict_retry_seconds: float = 30.0,
    session_conflict_give_up_seconds: float | None = None,
    transient_retry_seconds: float = 5.0,
    http_timeout_seconds: float = 120.0,
    client: httpx2.AsyncClient | None = None,
) -> int:
    """Run one simulated runner container to completion; returns its exit code.

    ``env`` is the container's resolved environment. Job durations and retry pauses run on
    ``clock`` (the simulation's ``ManualClock`` in tests; the system clock by default).
    ``verify`` is the TLS trust for an HTTPS fake.
    ``session_conflict_give_up_seconds=None`` retries a session conflict forever, as the
    broker-era runner does ("Retrying until reconnected"); a number gives up after that long
    (the older runner's 240 s, listener code 5, container exit 0). ``client`` lets many
    simulated runners share one HTTP client (it is not closed here); by default each run has
    its own.
    """
    phase = on_phase or (lambda _: None)
    encoded = env.get(JIT_CONFIG_ENV, "")
    try:
        config = decode_jit_config(encoded)
    except JitConfigError as error:
        log.warning("simulated runner: %s", error)
        phase(RunnerPhase.INVALID_CONFIG)
        phase(RunnerPhase.EXITED)
        return container_exit_code(ListenerCode.TERMINATED_ERROR, env)
    user_agent = f"GitHubActionsRunner-linux-x64/{RUNNER_VERSION}"
    if env.get(EXTRA_USER_AGENT_ENV):
        user_agent += f" {env[EXTRA_USER_AGENT_ENV]}"
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = await stack.enter_async_context(
                httpx2.AsyncClient(
                    verify=_default_tls() if verify is True else verify,
                    timeout=httpx2.Timeout(http_timeout_seconds, connect=10.0),
                    headers={"User-Agent": user_agent},
                    trust_env=False,
                )
            )
        runner = _Runner(
            env,
            config,
            client,
            clock=clock or SystemClock(),
            faults=faults or RunnerFaults(),
            on_phase=phase,
            stop=stop or asyncio.Event(),
            conflict_retry_seconds=conflict_retry_seconds,
            session_conflict_give_up_seconds=session_conflict_give_up_seconds,
            transient_retry_seconds=transient_retry_seconds,
        )
        return await runner.run()


@functools.cache
def _default_tls() -> ssl.SSLContext:
    """The system trust store, loaded once per process (loading it costs ~80 ms per client)."""
    return ssl.create_default_context()
