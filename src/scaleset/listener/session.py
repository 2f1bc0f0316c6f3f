"""The listener's message session with GitHub, kept across restarts through the listener's state
on its own EphemeralRunnerSet (L7).

Opening: the session is owned by the pod name. On start the listener reads its state from its
EphemeralRunnerSet; a session it owned before a restart (or one its predecessor handed over) is
resumed by id (refreshed: a new queue token) and polled from the last message acknowledged, so
the job events still queued in it are not lost. A resume that fails transiently (GitHub down)
is tried again with back-off for up to ``resume_patience`` (soak seeds 1 and 6: giving up at
once deleted the session, and the job events in it, as soon as GitHub was back); only when
GitHub no longer knows the session, or patience runs out, is it deleted by id (a delete that
fails transiently is tried again on each 409 while creating) and a new one created and its id
stored. A new session polls from message id 0, and is stored with 0 in the write that records
its id: the service's rule for ``lastMessageId`` is not known (0 returns the first
available message), the scaleset library's listener polls every new session from 0, and the old
session's last id could skip the new one's first messages after a restart. A 409 (another
owner's session is active) is answered with jittered back-off until that session ends, reading
the state again each time (the other listener may hand its session over meanwhile). A new
session in place of one we had (not resumed) is noted in the state (``sessionReplacedAt``, the
same write as its id): job events queued in the old one may be lost, so the registration pass
runs at once (L6).

Ending: SIGTERM is every listener pod replacement (a config change, a controller upgrade, a
node drain), so on a graceful stop the session is kept and marked handed over in the state, for
the next listener to resume whatever its pod name. It is deleted only when the scale set is
going away: the EphemeralRunnerSet is gone (the AutoscalingRunnerSet's deletion removes it
before the listener, L10), seen as the NotFound of that hand-over write or as the reason the
listener exits. A kill (the task cancelled) ends without a word to anyone, like ``kill -9``.

State: what the listener must remember across restarts is ``scaleset.api.listener_state`` on its
own EphemeralRunnerSet (the annotation's contract with the registration pass is there). Every
write of it goes through ``SessionKeeper.save`` (the desired count rides on it): a missing
EphemeralRunnerSet or a refused write ends the process (``ListenerExit``). An unreadable state
is logged and the listener starts afresh, never crashes. The listener's Role needs ``get`` and
``patch`` on its one EphemeralRunnerSet.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from scaleset.api import keys
from scaleset.api.listener_state import ListenerState
from scaleset.backoff import Backoff
from scaleset.clock import Clock, run_with_deadline
from scaleset.github import (
    ActionsClient,
    GitHubApiError,
    GitHubError,
    MessageSessionClient,
    ScaleSetNotFound,
    SessionConflict,
    SessionNotFound,
)
from scaleset.kube import KubeClient, KubeError, KubeObject, NotFound, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER_SET
from scaleset.listener.exits import (
    EXIT_GITHUB_REFUSED,
    EXIT_KUBE_REFUSED,
    EXIT_RUNNER_SET_GONE,
    ListenerExit,
)
from scaleset.listener.metrics import ListenerMetrics
from scaleset.listener.waiting import Waiter, is_github_transient
from scaleset.logs import get_logger

log = get_logger(__name__)


def state_of(runner_set: KubeObject) -> ListenerState:
    """The listener's state on ``runner_set``; an unreadable one is logged and read as none."""
    text = runner_set.annotations.get(keys.LISTENER_STATE_ANNOTATION)
    state = ListenerState.parse(text)
    if state is None:
        if text:
            log.warning("listener state annotation unreadable; starting afresh")
        return ListenerState()
    return state


class StateStore:
    """Reads and writes the state annotation of one EphemeralRunnerSet."""

    def __init__(self, kube: KubeClient, key: ObjectKey) -> None:
        self.kube = kube
        self.key = key

    async def load(self) -> tuple[ListenerState, KubeObject]:
        runner_set = await self.kube.get(EPHEMERAL_RUNNER_SET, self.key)
        return state_of(runner_set), runner_set

    async def save(
        self, state: ListenerState, spec_patch: dict[str, Any] | None = None
    ) -> KubeObject:
        """Store ``state``, together with ``spec_patch`` (the desired count) when given."""
        body = state.annotation_patch()
        if spec_patch:
            body.update(spec_patch)
        return await self.kube.patch_merge(EPHEMERAL_RUNNER_SET, self.key, body)


class SessionKeeper:
    """Opens, resumes, hands over and deletes our message session; reads and writes the state."""

    def __init__(
        self,
        actions: ActionsClient,
        store: StateStore,
        *,
        scale_set_id: int,
        owner: str,
        clock: Clock,
        waiter: Waiter,
        metrics: ListenerMetrics,
        rng: random.Random,
        on_load: Callable[[ListenerState], None],
        resume_patience: float,
        conflict_initial: float,
        conflict_max: float,
        close_timeout: float,
    ) -> None:
        self.actions = actions
        self.store = store
        self.scale_set_id = scale_set_id
        self.owner = owner
        self.clock = clock
        self.waiter = waiter
        self.metrics = metrics
        self._rng = rng
        self._on_load = on_load
        """Told every state read from the EphemeralRunnerSet (the desired count resumes from
        its patch sequence)."""
        self._resume_patience = resume_patience
        self._conflict_initial = conflict_initial
        self._conflict_max = conflict_max
        self._close_timeout = close_timeout
        self.state = ListenerState()
        self.session: MessageSessionClient | None = None
        self.runner_set: KubeObject | None = None
        """The EphemeralRunnerSet as the last read or write returned it."""
        self.last_message_id = 0
        """The last message acknowledged in ``session``."""

    # ------------------------------------------------------------------------- state

    async def load(self, *, again: bool = False) -> None:
        """Read the state (and the EphemeralRunnerSet) afresh."""
        try:
            state, runner_set = await self.waiter.retrying(
                "reading the EphemeralRunnerSet", self.store.load
            )
        except NotFound:
            raise ListenerExit(
                EXIT_RUNNER_SET_GONE, f"EphemeralRunnerSet {self.store.key} does not exist"
            ) from None
        except KubeError as error:
            raise ListenerExit(
                EXIT_KUBE_REFUSED, f"cannot read EphemeralRunnerSet {self.store.key}: {error}"
            ) from None
        self.state, self.runner_set = state, runner_set
        self._on_load(state)
        (log.debug if again else log.info)(
            "listener state loaded",
            runner_set=str(self.store.key),
            previous_session=state.session_id or None,
            previous_owner=state.owner or None,
            previous_last_message_id=state.last_message_id,
            handed_over=state.handed_over,
            patch_seq=state.patch_seq,
        )

    async def save(self, spec_patch: dict[str, Any] | None = None) -> None:
        """Store ``state``, with ``spec_patch`` (the desired count) in the same write; retried
        while it fails transiently (a 409 too: it is an unconditional merge patch)."""
        try:
            self.runner_set = await self.waiter.retrying(
                "writing the EphemeralRunnerSet",
                lambda: self.store.save(self.state, spec_patch),
                conflicts_transient=True,
            )
        except NotFound:
            raise ListenerExit(
                EXIT_RUNNER_SET_GONE, f"EphemeralRunnerSet {self.store.key} is gone"
            ) from None
        except KubeError as error:
            raise ListenerExit(
                EXIT_KUBE_REFUSED, f"cannot write EphemeralRunnerSet {self.store.key}: {error}"
            ) from None

    # ------------------------------------------------------------------------ opening

    async def open(self) -> MessageSessionClient:
        """Resume our session, or create a new one (see the module docstring)."""
        had_session = bool(self.state.session_id)
        resumed = await self._resume_patiently()
        if resumed is not None:
            return resumed
        await self._delete_stale()
        conflicts = Backoff(self._conflict_initial, self._conflict_max, rng=self._rng)
        failures = self.waiter.backoff()
        while True:
            try:
                session = await self.waiter.until_stopped(
                    MessageSessionClient.open(self.actions, self.scale_set_id, self.owner)
                )
                break
            except SessionConflict:
                self.metrics.sessions.labels("conflict").inc()
                # the listener before us may have handed its session over meanwhile (a rollout
                # starts the new pod before the old one has stopped), and its patches moved the
                # sequence on: read both again
                await self.load(again=True)
                if self.state.session_id:
                    # The conflicting session may be our own one that could not be resumed or
                    # deleted (GitHub was failing): try again rather than wait for it to expire.
                    resumed = await self._resume()
                    if resumed is not None:
                        return resumed
                    await self._delete_stale()
                delay = conflicts.next()
                log.warning(
                    "another message session is active for the scale set; waiting for it to end",
                    scale_set_id=self.scale_set_id,
                    retry_in=round(delay, 2),
                )
                await self.waiter.pause(delay)
            except ScaleSetNotFound:
                raise ListenerExit(
                    EXIT_GITHUB_REFUSED, f"scale set {self.scale_set_id} not found on GitHub"
                ) from None
            except GitHubApiError as error:
                if error.status in (401, 403, 404):
                    raise ListenerExit(
                        EXIT_GITHUB_REFUSED, f"GitHub refused the credentials: {error}"
                    ) from None
                await self.waiter.pause(
                    self.waiter.retry_delay("creating the message session", error, failures)
                )
            except GitHubError as error:
                await self.waiter.pause(
                    self.waiter.retry_delay("creating the message session", error, failures)
                )
        self.session = session
        self.metrics.sessions.labels("created").inc()
        # a new session is polled from 0 (its first message), and recorded so in the same write
        # as its id: the old session's last id may skip the new one's messages
        self.state = replace(
            self.state,
            session_id=str(session.session.session_id),
            owner=self.owner,
            last_message_id=0,
        )
        if had_session:
            # the events queued in the old session may be lost: the registration pass runs now
            self.state = replace(self.state, session_replaced_at=math.ceil(self.clock.time()))
            log.warning("created a new message session in place of ours; job events may be lost")
        self.last_message_id = 0
        await self.save()
        return session

    async def _resume_patiently(self) -> MessageSessionClient | None:
        """``_resume``, tried again with back-off while it fails transiently, for up to
        ``resume_patience``: GitHub being down is no reason to give up the job events queued
        in our session (L7)."""
        failures = self.waiter.backoff()
        give_up_at = self.clock.monotonic() + self._resume_patience
        while True:
            try:
                return await self._resume(raise_transient=True)
            except GitHubError as error:
                delay = failures.next()
                if self.clock.monotonic() + delay > give_up_at:
                    log.warning(
                        "could not resume our message session; giving it up", error=str(error)
                    )
                    return None
                log.warning(
                    "resuming our message session failed; retrying",
                    error=str(error),
                    retry_in=round(delay, 2),
                )
                await self.waiter.pause(delay)

    def _is_ours(self) -> bool:
        """The stored session is ours to resume or delete: we owned it (the same pod name), or
        its owner stopped gracefully and handed it over."""
        return bool(self.state.session_id) and (
            self.state.owner == self.owner or self.state.handed_over
        )

    async def _resume(self, *, raise_transient: bool = False) -> MessageSessionClient | None:
        """Take over our own session from before a restart (or one handed over to us),
        refreshed by id, and poll it from the last message acknowledged: the job events still
        queued in it are handled instead of deleted with it (L7, found by the chaos soak).
        None when there is none to resume; with ``raise_transient``, a transient failure is
        raised instead of answered None."""
        stale = self.state.session_id
        if not self._is_ours():
            return None
        try:
            session_id = uuid.UUID(stale)
        except ValueError:
            return None
        try:
            session = await self.waiter.until_stopped(
                MessageSessionClient.resume(self.actions, self.scale_set_id, session_id)
            )
        except (SessionNotFound, ScaleSetNotFound):
            self.state = replace(self.state, session_id="")  # gone: nothing to delete either
            return None
        except GitHubError as error:
            if raise_transient and is_github_transient(error):
                raise
            log.warning("could not resume our message session", error=str(error))
            return None
        self.session = session
        self.metrics.sessions.labels("resumed").inc()
        self.last_message_id = self.state.last_message_id
        self.state = replace(self.state, owner=self.owner, handed_over=False)
        log.info(
            "resumed our message session", session_id=stale, last_message_id=self.last_message_id
        )
        await self.save()
        return session

    async def _delete_stale(self) -> None:
        stale = self.state.session_id
        if not self._is_ours():
            return
        try:
            session_id = uuid.UUID(stale)
        except ValueError:
            return
        try:
            await self.waiter.until_stopped(
                self.actions.delete_message_session(self.scale_set_id, session_id)
            )
            self.metrics.sessions.labels("stale_deleted").inc()
            log.info("deleted our stale message session", session_id=stale)
        except (SessionNotFound, ScaleSetNotFound):
            pass  # already gone (ScaleSetNotFound surfaces when the session is created)
        except GitHubError as error:
            log.warning("could not delete our stale message session", error=str(error))
            if is_github_transient(error):
                return  # kept: deleted again when creating a session conflicts
        self.state = replace(self.state, session_id="")

    # ------------------------------------------------------------------------- ending

    async def end(self, *, runner_set_gone: bool) -> None:
        """On the way out: the session is handed over to the next listener, which resumes it with
        the job events queued in it (L7: a rollout, a config change or a node drain loses
        nothing) — unless the scale set is going away. That is the one case where the listener
        stops for good: the AutoscalingRunnerSet's deletion removes its EphemeralRunnerSet
        first and the listener only once that is gone (L10). So the hand-over is written on the
        EphemeralRunnerSet, and a NotFound there (or an exit because it is gone) deletes the
        session instead. A hand-over that cannot be written keeps the session too: the same pod
        resumes it, another one waits for GitHub to expire it."""
        session, self.session = self.session, None
        if session is None:
            return
        if not runner_set_gone:
            runner_set_gone = not await self._hand_over()
        if not runner_set_gone:
            return
        try:
            await run_with_deadline(self.clock, self._close_timeout, session.close())
            self.metrics.sessions.labels("closed").inc()
            log.info("deleted the message session: the scale set is going away")
        except (GitHubError, TimeoutError) as error:
            log.warning("could not delete the message session", error=str(error))

    async def _hand_over(self) -> bool:
        """Mark the session handed over in the state; False when the EphemeralRunnerSet is gone.
        Written once, bounded by ``close_timeout`` (stop is already requested, so not through
        the waiter's retries)."""
        self.state = replace(self.state, handed_over=True, last_message_id=self.last_message_id)
        try:
            await run_with_deadline(self.clock, self._close_timeout, self.store.save(self.state))
        except NotFound:
            return False
        except (KubeError, TimeoutError) as error:
            log.warning(
                "could not hand the message session over; it is kept for the next listener",
                error=str(error),
            )
            return True
        self.metrics.sessions.labels("handed_over").inc()
        log.info(
            "handed the message session over to the next listener",
            session_id=self.state.session_id,
            last_message_id=self.last_message_id,
        )
        return True
