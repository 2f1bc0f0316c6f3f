"""Carry out ``plan``'s actions for one EphemeralRunnerSet; the only module that writes.

Each action maps to its API call(s):

- ``AddFinalizers`` / ``RemoveFinalizers``: one JSON patch writing the list the plan decided,
  with a ``test`` op on the list that was read (never drops a finalizer someone else added,
  L2); removing takes ours and the legacy one off together.
- ``WriteStatus``: one merge patch of the whole status on ``/status``, carrying the
  resourceVersion that was read; a conflict stops the pass (nothing after it acts on a stale
  read), the key is retried with back-off.
- ``CreateRunner``: creates run concurrently in slow-start batches (1, 2, 4, … capped by
  ``max_concurrent_creates``, as the ReplicaSet controller does): a refused create (quota,
  webhook, invalid template) costs one call, not a thousand, and a healthy burst finishes in
  log2 rounds. Each create is expected in the ledger before it is issued.
- ``DeleteRunner``: a terminal runner, deleted with its uid as precondition.
- ``RemoveRunner`` / ``ScaleDown``: the L3 removal — a fresh GET; the plan's check again on what
  the server holds now; the registration removed from GitHub (by runner id, or looked up by name
  when the id was never recorded; ``JobStillRunning`` keeps the runner, ``RunnerNotFound`` means
  already removed); then DELETE with the resourceVersion that was read. ``ScaleDown`` tries its
  candidates in order until enough are removed (a kept one is replaced by the next). A wave's
  removals run in a task group: one failing unexpectedly cancels the others (none runs on).
- ``EnsureProxySecret`` / ``DeleteProxySecret``: the runner proxy Secret (create or PUT; delete).
- ``EmitEvent``: an Event (never fails the pass). ``Requeue``: the pass's ``Result``.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from scaleset.api import EphemeralRunnerSet, keys, to_json
from scaleset.clock import Clock
from scaleset.controllers.ephemeralrunnerset.actions import (
    Action,
    AddFinalizers,
    CreateRunner,
    DeferStatus,
    DeleteProxySecret,
    DeleteRunner,
    EmitEvent,
    EnsureProxySecret,
    RemoveFinalizers,
    RemoveRunner,
    Requeue,
    ScaleDown,
    WriteStatus,
)
from scaleset.controllers.ephemeralrunnerset.ledger import Ledger
from scaleset.controllers.ephemeralrunnerset.metrics import RunnerSetMetrics
from scaleset.controllers.ephemeralrunnerset.observed import RunnerView, runner_view
from scaleset.controllers.ephemeralrunnerset.plan import removable_now, scale_down_ok
from scaleset.controllers.ephemeralrunnerset.proxy_secret import secret_body
from scaleset.controllers.ephemeralrunnerset.runner_body import expected_runner_spec, runner_body
from scaleset.controllers.ephemeralrunnerset.settings import ApplySettings
from scaleset.controllers.github_access import GitHubAccessError, GitHubClients, GitHubTarget
from scaleset.github import GitHubError, JobStillRunning, RunnerNotFound
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import AlreadyExists, Conflict, KubeError, NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.patches import set_finalizers
from scaleset.kube.resources import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET, SECRET
from scaleset.logs import get_logger
from scaleset.runtime.controller import Result
from scaleset.runtime.events import EventRecorder

log = get_logger(__name__)
_T = TypeVar("_T")


class Removal(enum.Enum):
    """How one L3 removal ended."""

    REMOVED = "removed"
    GONE = "gone"
    BUSY = "busy"
    """GitHub answered JobStillRunning: kept."""
    CHANGED = "changed"
    """The fresh read no longer allows it (a job landed, it is being deleted …): kept."""
    FAILED = "failed"
    """GitHub or the API server failed: kept, retried with back-off."""


@dataclass
class PassOutcome:
    """What one pass did (for the ``Result`` and for tests/logs)."""

    status_written: bool = False
    created: list[str] = field(default_factory=list)
    create_errors: list[str] = field(default_factory=list)
    removals: dict[str, Removal] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    failed: bool = False
    requeue_after: float | None = None

    def result(self) -> Result | None:
        if self.failed:
            return Result(requeue=True)
        if self.requeue_after is not None:
            return Result(requeue_after=self.requeue_after)
        return None


class Applier:
    """Runs the actions of one pass against the API server and GitHub."""

    def __init__(
        self,
        client: KubeClient,
        *,
        github: GitHubClients,
        events: EventRecorder,
        ledger: Ledger,
        clock: Clock,
        metrics: RunnerSetMetrics,
        settings: ApplySettings | None = None,
    ) -> None:
        self.client = client
        self.github = github
        self.events = events
        self.ledger = ledger
        self.clock = clock
        self.metrics = metrics
        self.settings = settings or ApplySettings()

    async def apply(
        self,
        runner_set: KubeObject,
        actions: Sequence[Action],
        *,
        runners: dict[str, KubeObject],
    ) -> PassOutcome:
        """Run ``actions`` in order for ``runner_set`` (``runners``: its cached runners by name,
        for Events)."""
        outcome = PassOutcome()
        creates = [a for a in actions if isinstance(a, CreateRunner)]
        for action in actions:
            if isinstance(action, AddFinalizers):
                await self._add_finalizers(runner_set, action)
                return outcome
            if isinstance(action, WriteStatus):
                if not await self._write_status(runner_set, action):
                    outcome.failed = True
                    return outcome
                outcome.status_written = True
            elif isinstance(action, EmitEvent):
                target = runners.get(action.runner) if action.runner else None
                note = action.note
                self.events.emit(
                    target or runner_set,
                    "Warning" if note.warning else "Normal",
                    note.reason,
                    note.message,
                )
            elif isinstance(action, DeleteRunner):
                await self._reap(runner_set, action, runners, outcome)
            elif isinstance(action, RemoveRunner):
                reason = action.note.reason
                check = scale_down_ok if reason == "ScaleDown" else removable_now
                result = await self.remove(runner_set, action.runner, reason, check)
                outcome.removals[action.runner.name] = result
            elif isinstance(action, ScaleDown):
                await self._scale_down(runner_set, action, outcome)
            elif isinstance(action, RemoveFinalizers):
                if not await self._remove_finalizers(runner_set, action):
                    outcome.failed = True
            elif isinstance(action, DeleteProxySecret):
                await self._delete_proxy_secret(runner_set, action.name)
            elif isinstance(action, EnsureProxySecret):
                if not await self._ensure_proxy_secret(runner_set, action):
                    outcome.failed = True
                    return outcome
            elif isinstance(action, (Requeue, DeferStatus)):
                earlier = outcome.requeue_after
                after = action.after
                outcome.requeue_after = after if earlier is None else min(earlier, after)
        if creates:
            await self._create(runner_set, creates[0].patch_id, len(creates), outcome)
        if any(r is Removal.FAILED for r in outcome.removals.values()):
            outcome.failed = True
        elif any(r in (Removal.BUSY, Removal.CHANGED) for r in outcome.removals.values()):
            # a kept runner may free up or a replacement candidate may appear: look again soon
            outcome.requeue_after = min(outcome.requeue_after or 5.0, 5.0)
        return outcome

    def _count(self, runner_set: KubeObject, reason: str, times: int = 1) -> None:
        """Decisions of this set, by reason (the runner set's counter is labelled by set)."""
        self.metrics.decisions.labels(runner_set.namespace, runner_set.name, reason).inc(times)

    # ------------------------------------------------------------------------ the set itself

    async def _add_finalizers(self, runner_set: KubeObject, action: AddFinalizers) -> None:
        ops = set_finalizers(runner_set, action.current, action.wanted)
        await self.client.patch_json(EPHEMERAL_RUNNER_SET, runner_set.key, ops)

    async def _remove_finalizers(self, runner_set: KubeObject, action: RemoveFinalizers) -> bool:
        ops = set_finalizers(runner_set, action.current, action.remaining)
        try:
            await self.client.patch_json(EPHEMERAL_RUNNER_SET, runner_set.key, ops)
        except NotFound:
            return True
        except Conflict:
            return False
        self.metrics.forget(runner_set.namespace, _scale_set_name(runner_set))
        return True

    async def _write_status(self, runner_set: KubeObject, action: WriteStatus) -> bool:
        try:
            await self.client.patch_with_lock(
                runner_set, {"status": to_json(action.status)}, status=True
            )
        except Conflict:
            log.debug("status write conflicted: the set changed, deciding again")
            return False
        except NotFound:
            return False
        for reason in action.newly_terminal:
            self.metrics.terminal.labels(runner_set.namespace, runner_set.name, reason).inc()
        paused = action.status.failure_streak is not None and (
            action.status.failure_streak.paused_until is not None
            and action.status.failure_streak.paused_until > self.clock.now()
        )
        self.metrics.creation_paused.labels(runner_set.namespace, runner_set.name).set(
            1 if paused else 0
        )
        return True

    async def _ensure_proxy_secret(self, runner_set: KubeObject, action: EnsureProxySecret) -> bool:
        body = secret_body(runner_set, action.name, action.data)
        try:
            if action.exists:
                await self.client.replace(SECRET, body)
            else:
                await self.client.create(SECRET, body)
        except (AlreadyExists, NotFound, Conflict):
            return False  # someone else wrote it meanwhile: read again, decide again
        self._count(runner_set, action.note.reason)
        return True

    async def _delete_proxy_secret(self, runner_set: KubeObject, name: str) -> None:
        with contextlib.suppress(NotFound):
            await self.client.delete(SECRET, ObjectKey(runner_set.namespace, name))

    # --------------------------------------------------------------------------- creating

    async def _create(
        self, runner_set: KubeObject, patch_id: int, count: int, outcome: PassOutcome
    ) -> None:
        """``count`` creates in slow-start batches; the first failing batch stops the rest."""
        uid = runner_set.uid
        body = runner_body(runner_set, patch_id)
        self.ledger.expect_creates(uid, count)
        remaining = count
        batch = 1
        while remaining > 0:
            size = min(batch, remaining, self.settings.max_concurrent_creates)
            remaining -= size
            results = await asyncio.gather(
                *(self._create_one(uid, body) for _ in range(size)), return_exceptions=True
            )
            errors = [r for r in results if isinstance(r, BaseException)]
            outcome.created.extend(r for r in results if isinstance(r, str))
            if errors:
                for _ in range(remaining):
                    self.ledger.create_failed(uid)
                first = errors[0]
                if not isinstance(first, Exception):
                    raise first
                outcome.create_errors.extend(str(e) for e in errors)
                outcome.failed = True
                self.events.emit(
                    runner_set,
                    "Warning",
                    "FailedCreate",
                    f"creating runners failed ({len(errors)} of {size}; "
                    f"{remaining} not attempted): {first}",
                )
                break
            batch *= 2
        if outcome.created:
            self._count(runner_set, "ScaleUp", len(outcome.created))

    async def _create_one(self, set_uid: str, body: dict[str, object]) -> str:
        try:
            created = await self.client.create(EPHEMERAL_RUNNER, body)
        except BaseException:
            self.ledger.create_failed(set_uid)
            raise
        self.ledger.created(set_uid, created.name)
        return created.name

    # --------------------------------------------------------------------------- deleting

    async def _reap(
        self,
        runner_set: KubeObject,
        action: DeleteRunner,
        runners: dict[str, KubeObject],
        outcome: PassOutcome,
    ) -> None:
        view = action.runner
        key = ObjectKey(runner_set.namespace, view.name)
        self.ledger.expect_delete(runner_set.uid, view.name)
        try:
            await self.client.delete(EPHEMERAL_RUNNER, key, uid=view.uid)
        except (NotFound, Conflict):
            return  # gone, or a different object now holds the name
        except KubeError as error:
            self.ledger.delete_failed(runner_set.uid, view.name)
            log.warning("could not reap a terminal runner", runner=view.name, error=str(error))
            outcome.failed = True
            return
        outcome.deleted.append(view.name)
        self._count(runner_set, action.note.reason)
        target = runners.get(view.name)
        if target is not None:
            self.events.emit(
                target,
                "Normal",
                "ReapedTerminalRunner",
                f"runner ended {view.phase} ({view.failure_reason}): recorded on "
                f"{runner_set.name} and deleted",
            )

    async def _scale_down(
        self, runner_set: KubeObject, action: ScaleDown, outcome: PassOutcome
    ) -> None:
        """Remove ``action.count`` runners, trying candidates in order; each wave removes at
        most what is still needed, so a kept runner is replaced by the next candidate."""
        needed = action.count
        queue = list(action.candidates)
        semaphore = asyncio.Semaphore(self.settings.max_concurrent_removals)

        async def one(view: RunnerView) -> Removal:
            async with semaphore:
                return await self.remove(runner_set, view, action.note.reason, scale_down_ok)

        while needed > 0 and queue:
            wave, queue = queue[:needed], queue[needed:]
            results = await _together([one(view) for view in wave])
            for view, result in zip(wave, results, strict=True):
                outcome.removals[view.name] = result
                if result in (Removal.REMOVED, Removal.GONE):
                    needed -= 1

    async def remove(
        self,
        runner_set: KubeObject,
        view: RunnerView,
        reason: str,
        check: Callable[[RunnerView], bool],
    ) -> Removal:
        """The L3 removal of one live runner (see the module docstring)."""
        key = ObjectKey(runner_set.namespace, view.name)
        expected = expected_runner_spec(runner_set)
        try:
            fresh = await self.client.get(EPHEMERAL_RUNNER, key)
        except NotFound:
            return Removal.GONE
        except KubeError as error:
            log.warning("removal: cannot read the runner", runner=view.name, error=str(error))
            return Removal.FAILED
        if fresh.uid != view.uid:
            return Removal.GONE
        current = self._view(fresh, expected)
        if not check(current):
            log.info("removal: runner changed, kept", runner=view.name, state=current.state.value)
            return Removal.CHANGED
        registration = await self._remove_registration(runner_set, fresh, current)
        if registration is not None:
            return registration
        self.ledger.expect_delete(runner_set.uid, view.name)
        for _attempt in range(3):
            try:
                await self.client.delete(
                    EPHEMERAL_RUNNER,
                    key,
                    uid=fresh.uid,
                    resource_version=fresh.resource_version,
                )
                break
            except NotFound:
                return Removal.GONE
            except Conflict:
                # changed between our read and our delete: read again, decide again
                try:
                    fresh = await self.client.get(EPHEMERAL_RUNNER, key)
                except NotFound:
                    return Removal.GONE
                except KubeError:
                    self.ledger.delete_failed(runner_set.uid, view.name)
                    return Removal.FAILED
                current = self._view(fresh, expected)
                if fresh.uid != view.uid:
                    return Removal.GONE
                if not check(current):
                    self.ledger.delete_failed(runner_set.uid, view.name)
                    self.events.emit(
                        fresh,
                        "Warning",
                        "RunnerChangedDuringRemoval",
                        "the runner changed after its registration was removed (a job landed?): "
                        "kept; it ends when its runner process does",
                    )
                    return Removal.CHANGED
            except KubeError as error:
                self.ledger.delete_failed(runner_set.uid, view.name)
                log.warning("removal: delete failed", runner=view.name, error=str(error))
                return Removal.FAILED
        else:
            self.ledger.delete_failed(runner_set.uid, view.name)
            return Removal.FAILED
        self._count(runner_set, reason)
        self.events.emit(fresh, "Normal", reason, _removal_message(reason, current))
        return Removal.REMOVED

    async def _remove_registration(
        self, runner_set: KubeObject, fresh: KubeObject, current: RunnerView
    ) -> Removal | None:
        """Remove the runner's registration; ``None`` when it is gone (go on and delete)."""
        model = EphemeralRunnerSet.model_validate(runner_set.raw)
        try:
            async with self.github.use(GitHubTarget.of_runner_set(model)) as client:
                runner_id = current.runner_id
                if runner_id == 0:
                    found = await client.get_runner_by_name(current.name)
                    runner_id = found.id if found is not None else 0
                if runner_id:
                    await client.remove_runner(runner_id)
        except JobStillRunning:
            self.events.emit(
                fresh,
                "Normal",
                "RunnerBusyOnGitHub",
                "GitHub says this runner runs a job: not removed",
            )
            return Removal.BUSY
        except RunnerNotFound:
            return None
        except GitHubAccessError as error:
            self.events.emit(runner_set, "Warning", error.reason, error.message)
            return Removal.FAILED
        except (GitHubError, KubeError) as error:
            log.warning(
                "removal: GitHub call failed, runner kept", runner=current.name, error=str(error)
            )
            return Removal.FAILED
        return None

    def _view(self, runner: KubeObject, expected: object) -> RunnerView:
        return runner_view(
            runner,
            expected_spec=expected if isinstance(expected, dict) else None,
            now=self.clock.now(),
            jit_settle_seconds=self.settings.jit_settle_seconds,
        )


async def _together(calls: list[Coroutine[Any, Any, _T]]) -> list[_T]:
    """Run ``calls`` at once and return their results in order. When one raises, the others
    are cancelled and awaited before its exception propagates (the first one's, as it was):
    nothing is left running detached beside the reconcile that failed, or its retry."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(call) for call in calls]
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return [task.result() for task in tasks]


def _removal_message(reason: str, view: RunnerView) -> str:
    what = "registration removed from GitHub and runner deleted"
    return {
        "ScaleDown": f"scaled down ({view.state.value}): {what}",
        "RunnerSpecChanged": f"built from an older runner spec ({view.state.value}): {what}",
        "RunnerSetDeleting": f"its set is being deleted ({view.state.value}): {what}",
    }.get(reason, what)


def _scale_set_name(runner_set: KubeObject) -> str:
    return runner_set.labels.get(keys.SCALE_SET_NAME_LABEL, runner_set.name)
