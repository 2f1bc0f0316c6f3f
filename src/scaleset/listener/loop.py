"""The listener's loop: one message session, long polls, side effects, acknowledgements.

The message session — resumed or created, handed over on a graceful stop, deleted only when the
scale set is going away — and the state that keeps it across restarts are ``session``'s (L7);
waiting that a stop cuts short, and what counts as a transient failure, are ``waiting``'s.

Messages (L7, L8), in order:

1. a message that cannot be decoded (outer type not RunnerScaleSetJobMessages, or a batch that
   is malformed with no decodable entry) is not acknowledged: it is polled again, up to
   ``poison_cap`` times, then acknowledged with a Warning Event on the EphemeralRunnerSet and a
   counter — never dropped silently. Entries of a job type we do not know are ignored and
   counted: a batch of only those is handled (acknowledged) at once, so a new type from GitHub
   never blocks the queue (L8);
2. otherwise the side effects are applied first: JobAvailable jobs acquired while every
   JobStarted / JobCompleted is written to its runner (runners in parallel, each runner's events
   in message order, runners whose job ended first: ``handlers.write_chains``). Side effects are
   idempotent, so a message handled twice is harmless;
3. only then is the message acknowledged (deliberately not ARC's ack-first order, which loses
   JobStarted/JobCompleted when the process dies in between); a desired count that is due goes
   out before the acknowledgement too, so a scale-up does not wait for GitHub's answer to it.
   A side effect that fails is retried with the message: transient failures (network, 5xx,
   429) indefinitely with back-off, others up to the poison cap.
4. the acknowledgement is not waited for before the next poll: the poll goes out at once with
   ``lastMessageId`` = the message just handled (the queue answers the oldest undeleted message
   after it) while the acknowledgement is out, and is settled before the next message is handled
   — at most one is out. A backlog (a successor after a blackout) drains at one GitHub round
   trip per message, not two. When the acknowledgement fails, what that poll brought is dropped
   (unless it is that message again) and the poll goes back to the unacknowledged message
   (delivered and handled again). The state stores only acknowledged message ids, so a restart
   in between polls the message again (harmless).

Desired count: ``desired_count`` decides when it is patched (after a message once
``patch_interval`` has passed, on an empty poll, at a warm window's edge while a poll is held
open) and writes it with the state annotation; the loop tells it what arrived (statistics, job
events, failed polls) and wakes when it asks. A 200 answer with an empty (or undecodable) body
is "no message" with back-off (ARC #4285, #4470 crash on it).

Runner cache: while it runs, the listener lists and watches the EphemeralRunners of its
namespace (metadata and status only) and handles a JobStarted on the cached runner first
(``handlers``: a promotion locked on the cached resourceVersion, a fresh read after a 409), so a
JobStarted costs one request instead of a GET and a PATCH. Not waiting for the cache: until it
has listed (or while the watch is refused, e.g. by a Role without list/watch) every runner is
read afresh, as without it. ``LoopSettings.watch_runners=False`` turns it off. The cache's own
timers (re-watch after a silent stream, back-off after an error) run on real time, not on the
listener's clock: they are connection upkeep, and a test's virtual clock jumping to the next
deadline would otherwise re-open the watch, and move the loop's time, at every step.

The process exits (``ListenerExit``) only when a restart is what is needed: the scale set is
gone on GitHub, GitHub refuses the credentials, or the EphemeralRunnerSet is gone.
"""

from __future__ import annotations

import asyncio
import enum
import random
from collections.abc import Sequence
from dataclasses import dataclass

from scaleset.backoff import Backoff
from scaleset.clock import Clock, SystemClock
from scaleset.github import (
    ActionsClient,
    GitHubApiError,
    GitHubError,
    JobCompleted,
    JobStarted,
    MessageQueueTokenExpired,
    MessageSessionClient,
    RunnerScaleSetMessage,
    RunnerScaleSetStatistic,
    SessionNotFound,
    UnexpectedResponse,
)
from scaleset.github.models import JOB_MESSAGES_TYPE, JobMessage
from scaleset.kube import KubeClient, KubeError, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER
from scaleset.listener.config import ListenerConfig
from scaleset.listener.desired_count import DesiredCount
from scaleset.listener.exits import EXIT_GITHUB_REFUSED, EXIT_RUNNER_SET_GONE, ListenerExit
from scaleset.listener.handlers import (
    JobEventHandler,
    JobMessageOutcome,
    decision_view,
    write_chains,
)
from scaleset.listener.metrics import ListenerMetrics
from scaleset.listener.session import SessionKeeper, StateStore
from scaleset.listener.waiting import Stopped, Waiter, cancel_and_wait, is_transient
from scaleset.logs import get_logger
from scaleset.runtime.events import EventRecorder
from scaleset.runtime.informer import Informer

log = get_logger(__name__)

POISON_EVENT_REASON = "PoisonMessage"


class _SessionLost(Exception):
    """The service no longer knows our session: create a new one."""


class _Verdict(enum.Enum):
    """What handling a message came to."""

    HANDLED = "handled"
    """Its side effects are applied: acknowledge it."""
    POISONED = "poisoned"
    """It cannot be handled and has reached the poison cap: acknowledge it anyway."""
    RETRY = "retry"
    """Not acknowledged: it is delivered again."""


@dataclass(frozen=True)
class _PendingAck:
    """An acknowledgement sent and not yet settled."""

    message: RunnerScaleSetMessage
    received: float
    poisoned: bool
    previous: int
    """The poll's ``lastMessageId`` before this message: where the poll goes back to when the
    acknowledgement fails."""
    task: asyncio.Task[float]


@dataclass(frozen=True)
class LoopSettings:
    """Tunables of the loop (seconds are on the injected clock)."""

    patch_interval: float = 0.3
    """Most often the desired count is patched while messages keep coming."""
    poison_cap: int = 5
    """Deliveries of a message that cannot be handled before it is acknowledged anyway."""
    retry_initial: float = 1.0
    retry_max: float = 30.0
    session_conflict_initial: float = 5.0
    session_conflict_max: float = 60.0
    stale_window: float = 180.0
    """How long assigned-but-not-running jobs may coexist with idle runners (ARC #4397)."""
    max_parallel: int = 16
    """Runners whose job events are written at the same time (at most the API client's 20
    kept-alive connections: more only adds connection set-ups, bench/listener_jobstarted.py)."""
    close_timeout: float = 10.0
    event_attempts: int = 4
    """Writes of one job event tried at once while the API server fails transiently, before
    the message is left unacknowledged (to be delivered again after the poll back-off)."""
    event_retry_initial: float = 0.1
    event_retry_max: float = 1.0
    resume_patience: float = 300.0
    """How long a resume of our own session that fails transiently (GitHub down, 5xx, 429,
    network) is tried again before the session is given up: deleting it would drop the job
    events queued in it. GitHub ends an idle session itself meanwhile (then: 404, a new one)."""
    watch_runners: bool = True
    """Keep a watch cache of the namespace's runners as the first read of a JobStarted."""


def undecodable_reason(message: RunnerScaleSetMessage) -> str | None:
    """Why ``message`` cannot be handled as it is, or None.

    The client skips entries it cannot decode (logging them) and counts them in two kinds. A
    batch that yielded no job while some of it was malformed (the body is not a JSON array, or
    a known type's fields do not validate) is undecodable: retried, then acknowledged with an
    Event, never dropped silently. Entries of a type we do not know are not: a new type from
    GitHub must never block the queue (L8), so they are ignored and the message acknowledged.
    """
    if message.message_type != JOB_MESSAGES_TYPE:
        return f"unsupported message type {message.message_type[:60]!r}"
    if message.malformed and not message.jobs:
        return f"no decodable job in the batch ({message.malformed} entries skipped)"
    return None


class Listener:
    """One scale set's listener (see the module docstring)."""

    def __init__(
        self,
        config: ListenerConfig,
        actions: ActionsClient,
        kube: KubeClient,
        *,
        owner: str,
        clock: Clock,
        metrics: ListenerMetrics,
        events: EventRecorder | None = None,
        settings: LoopSettings | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.actions = actions
        self.kube = kube
        self.owner = owner
        self.clock = clock
        self.metrics = metrics
        self.events = events
        self.settings = settings or LoopSettings()
        self._rng = rng or random.Random()  # noqa: S311 - jitter
        self.waiter = Waiter(
            clock,
            retry_initial=self.settings.retry_initial,
            retry_max=self.settings.retry_max,
            rng=self._rng,
        )
        self.sessions = SessionKeeper(
            actions,
            StateStore(
                kube,
                ObjectKey(config.ephemeral_runner_set_namespace, config.ephemeral_runner_set_name),
            ),
            scale_set_id=config.runner_scale_set_id,
            owner=owner,
            clock=clock,
            waiter=self.waiter,
            metrics=metrics,
            rng=self._rng,
            on_load=lambda state: self.count.resume(state),
            resume_patience=self.settings.resume_patience,
            conflict_initial=self.settings.session_conflict_initial,
            conflict_max=self.settings.session_conflict_max,
            close_timeout=self.settings.close_timeout,
        )
        self.runners: Informer | None = None
        if self.settings.watch_runners:
            self.runners = Informer(
                kube,
                EPHEMERAL_RUNNER,
                namespaces=(config.ephemeral_runner_set_namespace,),
                projection=decision_view,
                clock=SystemClock(),
                metrics=metrics.runtime,
                rng=self._rng,
            )
        self.handler = JobEventHandler(
            kube,
            config.ephemeral_runner_set_namespace,
            clock=clock,
            runtime_metrics=metrics.runtime,
            rng=self._rng,
            cached=self.runners.get if self.runners is not None else None,
        )
        self.count = DesiredCount(
            config,
            self.sessions,
            clock=clock,
            metrics=metrics,
            patch_interval=self.settings.patch_interval,
            stale_window=self.settings.stale_window,
        )
        self._deliveries: dict[int, int] = {}
        self._cursor = 0
        """The ``lastMessageId`` of the next poll: the last message handled, whose
        acknowledgement may still be out (``sessions.last_message_id`` is the last one
        acknowledged, what the state stores)."""
        self._pending_ack: _PendingAck | None = None

    # ------------------------------------------------------------------------------ run

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Serve until ``stop`` is set or ``ListenerExit``; then the session is handed over to
        the next listener, or deleted when the EphemeralRunnerSet is gone (``SessionKeeper.end``).
        Cancelled (a kill), it ends without a word to GitHub or the API server."""
        self.waiter.stop = stop or asyncio.Event()
        self.metrics.arc.record_static(self.config.min_runners, self.config.max_runners)
        watching = (
            asyncio.create_task(self.runners.run(), name=f"{self.runners!r}")
            if self.runners is not None
            else None
        )
        try:
            try:
                await self.sessions.load()
                while not self.waiter.stop.is_set():
                    session = await self.sessions.open()
                    self._deliveries.clear()
                    try:
                        await self._serve(session)
                    except _SessionLost as lost:
                        self.metrics.sessions.labels("lost").inc()
                        log.warning("message session lost; creating a new one", reason=str(lost))
            except Stopped:
                pass
            except ListenerExit as exit_:
                await self.sessions.end(runner_set_gone=exit_.code == EXIT_RUNNER_SET_GONE)
                raise
            await self.sessions.end(runner_set_gone=False)
        finally:
            if watching is not None:
                await cancel_and_wait(watching)
        log.info("listener stopped")

    # ------------------------------------------------------------------------ the loop

    async def _serve(self, session: MessageSessionClient) -> None:
        initial = session.session.statistics
        if initial is None:
            log.warning("the session came without statistics; assuming none")
            self.count.take(RunnerScaleSetStatistic(), observed=False)
        else:
            self.count.take(initial)
        self._cursor = self.sessions.last_message_id
        try:
            await self.count.patch()
            await self._serve_messages(session)
        finally:
            await self._drop_acknowledgement()

    async def _serve_messages(self, session: MessageSessionClient) -> None:
        backoff = self.waiter.backoff()
        while not self.waiter.stop.is_set():
            if self.handler.deferred:
                await self._retry_deferred()
            message = await self._poll_patching_when_due(session, backoff)
            failed = await self._settle_acknowledgement()
            if failed is not None and (message is None or message.message_id != failed):
                # the poll goes back to the unacknowledged message; what this poll brought
                # comes after it and is delivered again after it
                await self.waiter.pause(backoff.next())
                continue
            if message is None:
                await self.count.patch()
                continue
            received = self.clock.monotonic()
            verdict = await self._handle(session, message, received)
            if verdict is _Verdict.RETRY:
                await self.waiter.pause(backoff.next())
                continue
            self._acknowledge(session, message, received, poisoned=verdict is _Verdict.POISONED)
            backoff.reset()
            if self.count.due and self.count.interval_passed():
                await self.count.patch()

    async def _poll(
        self, session: MessageSessionClient, backoff: Backoff
    ) -> RunnerScaleSetMessage | None:
        """The next message, or None: an empty poll, or a failed one (the statistics held are
        then carried over, ``DesiredCount.polls_failed``, until a poll is answered again)."""
        try:
            message = await self.waiter.until_stopped(
                session.get_message(self._cursor, self.config.max_runners)
            )
        except (SessionNotFound, MessageQueueTokenExpired) as error:
            raise _SessionLost(str(error)) from None
        except UnexpectedResponse as error:
            self.count.polls_failed()
            if error.status != 200:
                await self.waiter.pause(
                    self.waiter.retry_delay("polling the message queue", error, backoff)
                )
                return None
            self.metrics.empty_replies.inc()
            delay = backoff.next()
            log.warning(
                "the message queue answered 200 without a message; treated as no message",
                detail=error.detail,
                retry_in=round(delay, 2),
            )
            await self.waiter.pause(delay)
            return None
        except GitHubApiError as error:
            if error.status in (401, 403):
                raise ListenerExit(
                    EXIT_GITHUB_REFUSED, f"GitHub refused the credentials: {error}"
                ) from None
            self.count.polls_failed()
            await self.waiter.pause(
                self.waiter.retry_delay("polling the message queue", error, backoff)
            )
            return None
        except GitHubError as error:
            self.count.polls_failed()
            await self.waiter.pause(
                self.waiter.retry_delay("polling the message queue", error, backoff)
            )
            return None
        self.count.poll_answered()
        return message

    async def _poll_patching_when_due(
        self, session: MessageSessionClient, backoff: Backoff
    ) -> RunnerScaleSetMessage | None:
        """``_poll``; a desired count still due is patched once ``patch_interval`` has passed,
        and a warm window's new minimum at its edge, without waiting for the poll to return."""
        if self.count.seconds_to_wake() is None:
            return await self._poll(session, backoff)
        poll = asyncio.ensure_future(self._poll(session, backoff))
        try:
            while (wake := self.count.seconds_to_wake()) is not None:
                timer = asyncio.ensure_future(self.clock.sleep(wake))
                try:
                    await asyncio.wait({poll, timer}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    await cancel_and_wait(timer)
                if poll.done():
                    break
                if self.count.count_due() and self.count.interval_passed():
                    await self.count.patch()
            return await poll
        finally:
            # the poll has ended and its outcome is retrieved, however this ends (a patch that
            # raised while the poll failed too would otherwise leave the poll's error unseen)
            await cancel_and_wait(poll)

    # ------------------------------------------------------------------- one message

    async def _handle(
        self, session: MessageSessionClient, message: RunnerScaleSetMessage, received: float
    ) -> _Verdict:
        """Side effects (and a desired count that is due): whether the message may be
        acknowledged now."""
        message_id = message.message_id
        deliveries = self._deliveries.get(message_id, 0) + 1
        self._deliveries[message_id] = deliveries
        problem = undecodable_reason(message)
        transient = False
        if problem is None:
            try:
                await self._apply(session, message, received)
            except (KubeError, GitHubError) as error:
                if isinstance(error, (SessionNotFound, MessageQueueTokenExpired)):
                    raise _SessionLost(str(error)) from None
                problem = f"side effects failed: {error}"
                transient = is_transient(error)
        if problem is not None:
            if transient:
                self._deliveries[message_id] = deliveries - 1  # not counted towards the cap
            if transient or deliveries < self.settings.poison_cap:
                self.metrics.messages.labels("retried").inc()
                log.warning(
                    "message not acknowledged; it will be delivered again",
                    message_id=message_id,
                    delivery=deliveries,
                    problem=problem,
                )
                return _Verdict.RETRY
            self._poison(message, problem, deliveries)
            return _Verdict.POISONED
        if self.count.due and self.count.interval_passed():
            # the new count is a side effect too: written before the acknowledgement's round
            # trip to GitHub, not after it (the state it stores still names the last message
            # acknowledged, so a restart in between polls this one again: harmless)
            await self.count.patch()
        return _Verdict.HANDLED

    # ----------------------------------------------------------------- acknowledgements

    def _acknowledge(
        self,
        session: MessageSessionClient,
        message: RunnerScaleSetMessage,
        received: float,
        *,
        poisoned: bool,
    ) -> None:
        """Send the acknowledgement of a message whose side effects are applied, and move the
        poll on past it at once: the next poll goes out while the acknowledgement is out (at
        most one is), and it is settled before the next message is handled."""
        assert self._pending_ack is None, "the previous acknowledgement was not settled"
        task = asyncio.create_task(
            self._send_acknowledgement(session, message.message_id),
            name=f"acknowledge message {message.message_id}",
        )
        self._pending_ack = _PendingAck(message, received, poisoned, self._cursor, task)
        self._cursor = message.message_id

    async def _send_acknowledgement(self, session: MessageSessionClient, message_id: int) -> float:
        """Delete (acknowledge) the message; when it was acknowledged (the loop's clock)."""
        await session.delete_message(message_id)
        return self.clock.monotonic()

    async def _settle_acknowledgement(self) -> int | None:
        """Wait for the acknowledgement still out, if any; the id of its message when it
        failed: the poll goes back to that message, delivered (and handled, idempotently)
        again."""
        pending, self._pending_ack = self._pending_ack, None
        if pending is None:
            return None
        message_id = pending.message.message_id
        try:
            await pending.task
        except (SessionNotFound, MessageQueueTokenExpired) as error:
            self._cursor = pending.previous
            raise _SessionLost(str(error)) from None
        except GitHubError as error:
            self._cursor = pending.previous
            self.metrics.messages.labels("retried").inc()
            log.warning("acknowledging the message failed", message_id=message_id, error=str(error))
            return message_id
        self._acknowledged(pending)
        return None

    async def _drop_acknowledgement(self) -> None:
        """The loop ends (a stop, a kill, a lost session): an acknowledgement that already
        succeeded counts; one still out is cancelled (its message is delivered again)."""
        pending, self._pending_ack = self._pending_ack, None
        if pending is None:
            return
        if not pending.task.done():
            await cancel_and_wait(pending.task)
        if not pending.task.cancelled() and pending.task.exception() is None:
            self._acknowledged(pending)

    def _acknowledged(self, pending: _PendingAck) -> None:
        message = pending.message
        self.sessions.last_message_id = message.message_id
        self._deliveries.pop(message.message_id, None)
        if not pending.poisoned:
            self._record(message)
            self.metrics.unknown_jobs.inc(message.unknown)
            self.metrics.messages.labels("handled").inc()
        self.metrics.message_seconds.observe(pending.task.result() - pending.received)

    def _poison(self, message: RunnerScaleSetMessage, problem: str, deliveries: int) -> None:
        reason = "side_effects" if undecodable_reason(message) is None else "undecodable"
        self.metrics.poison.labels(reason).inc()
        self.metrics.messages.labels("poison").inc()
        text = (
            f"message {message.message_id} acknowledged without being handled after "
            f"{deliveries} deliveries: {problem}"
        )
        log.error("poison message acknowledged", message_id=message.message_id, problem=problem)
        runner_set = self.sessions.runner_set
        if self.events is not None and runner_set is not None:
            self.events.emit(runner_set, "Warning", POISON_EVENT_REASON, text)

    async def _apply(
        self, session: MessageSessionClient, message: RunnerScaleSetMessage, received: float
    ) -> None:
        available = [job.runner_request_id for job in message.job_available]

        async def acquire() -> None:
            if available:
                acquired = await session.acquire_jobs(available)
                log.info("acquired jobs", offered=len(available), acquired=len(acquired))

        # acquiring (GitHub) and the job events (the API server) are independent: neither
        # waits for the other's round trips
        outcomes = await asyncio.gather(
            acquire(), self._write_job_events(message.jobs, received), return_exceptions=True
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        if message.job_started or message.job_completed:
            self.count.job_event()
        if message.statistics is not None:
            self.count.take(message.statistics)

    async def _write_job_events(self, jobs: Sequence[JobMessage], received: float) -> None:
        """JobStarted/JobCompleted: each runner's events in order, runners in parallel, those
        whose job has ended first (``write_chains``)."""
        chains = write_chains(jobs)
        if not chains:
            return
        limit = asyncio.Semaphore(self.settings.max_parallel)

        async def one_runner(events: list[JobStarted | JobCompleted]) -> None:
            async with limit:
                for event in events:
                    await self._write_job_event(event, received)

        results = await asyncio.gather(
            *(one_runner(events) for events in chains), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _write_job_event(self, event: JobStarted | JobCompleted, received: float) -> None:
        """One event, its write retried at once while the API server fails transiently (a 5xx,
        429 or network error) up to ``event_attempts`` times: the writes are idempotent, and
        failing the whole message instead sends it back behind the poll back-off that grows to
        ``retry_max`` — the chaos soak's 2 % failing writes held later job events 20-30 s
        (seeds 9 and 17). Each runner's events keep their order: the next waits for this one."""
        delays = Backoff(
            self.settings.event_retry_initial, self.settings.event_retry_max, rng=self._rng
        )
        for attempt in range(1, self.settings.event_attempts + 1):
            try:
                await self._write_job_event_once(event, received)
                return
            except KubeError as error:
                if attempt == self.settings.event_attempts or not is_transient(error):
                    raise
                delay = delays.next()
                log.info(
                    "writing a job event failed; retrying",
                    runner=event.runner_name,
                    error=str(error),
                    retry_in=round(delay, 2),
                )
                await self.waiter.pause(delay)

    async def _write_job_event_once(
        self, event: JobStarted | JobCompleted, received: float
    ) -> None:
        if isinstance(event, JobStarted):
            outcome = await self.handler.job_started(event)
            self.metrics.job_events.labels("JobStarted", outcome.value).inc()
            if outcome is JobMessageOutcome.DEFERRED:
                self.metrics.phase_deferred.inc()
            self.metrics.started_to_running_seconds.observe(self.clock.monotonic() - received)
        else:
            outcome = await self.handler.job_completed(event, self.count.next_patch_id())
            self.metrics.job_events.labels("JobCompleted", outcome.value).inc()

    def _record(self, message: RunnerScaleSetMessage) -> None:
        """ARC's job metrics, once per acknowledged message."""
        for started in message.job_started:
            self.metrics.arc.record_job_started(started)
            self.metrics.record_queue_duration(started)
        for completed in message.job_completed:
            self.metrics.arc.record_job_completed(completed)

    async def _retry_deferred(self) -> None:
        try:
            results = await self.handler.retry_deferred()
        except (KubeError, GitHubError) as error:
            log.warning("retrying deferred Running phases failed", error=str(error))
            return
        for outcome in results.values():
            self.metrics.job_events.labels("JobStarted", outcome.value).inc()
