"""The listener's desired runner count: GitHub's statistics in, ARC's replicas/patchID patch out.

Patched with the latest statistics when the queue is drained (an empty poll) or after a message
when ``patch_interval`` has passed since the last patch — never once per replayed message of a
backlog. A count left due because the interval had not passed yet is patched as soon as it has,
while the next poll is held open (``seconds_to_wake``): a long poll (about 50 s on GitHub) never
holds a job's scale-up back (a message arriving just after an empty poll's patch waited for the
next empty poll — bench/message_to_pod.py). The count goes together with the state annotation
(``SessionKeeper.save``), so the patch sequence keeps growing across restarts (``resume``). The
annotation also carries the latest ``totalRegisteredRunners`` and when it arrived (for the
registration pass, L6): no write of its own.

The stale-surplus cap (``scaler.StaleSurplusGuard``) is told when the statistics are carried
over from failed polls (GitHub down, ``polls_failed``): every failed poll patches the count
again, but those statistics are no evidence of stale jobs. Scheduled warm windows (``warm``):
each decision takes the minimum in force at the clock's ``now()``, and a window's edge wakes the
loop like a due count does, so the count changes at the edge with no message.

The decisions are ``scaler``'s and ``warm``'s (pure); this module holds what the listener
remembers between them and makes the one write.
"""

from __future__ import annotations

from dataclasses import replace

from scaleset.api.listener_state import ListenerState
from scaleset.clock import Clock
from scaleset.github import RunnerScaleSetStatistic
from scaleset.listener.config import ListenerConfig
from scaleset.listener.metrics import ListenerMetrics
from scaleset.listener.scaler import Scaler, StaleSurplusGuard, ers_patch
from scaleset.listener.session import SessionKeeper
from scaleset.listener.warm import WarmMinimum
from scaleset.logs import get_logger

log = get_logger(__name__)


class DesiredCount:
    """The desired count of one listener: the latest statistics, whether a patch is due, and the
    patch (``patch``)."""

    def __init__(
        self,
        config: ListenerConfig,
        sessions: SessionKeeper,
        *,
        clock: Clock,
        metrics: ListenerMetrics,
        patch_interval: float,
        stale_window: float,
    ) -> None:
        self.config = config
        self.sessions = sessions
        self.clock = clock
        self.metrics = metrics
        self.patch_interval = patch_interval
        self.scaler = Scaler(config.min_runners, config.max_runners)
        self.warm = WarmMinimum(config.windows, config.min_runners, config.max_runners)
        self.guard = StaleSurplusGuard(window=stale_window)
        self.statistics = RunnerScaleSetStatistic()
        self.carried_over = False
        """True while polls fail: the statistics held are from before, no evidence of anything
        (lifecycle.md L7: they never count towards the stale-surplus cap)."""
        self.due = False
        """New statistics not patched yet."""
        self._registered: tuple[int, int] | None = None
        """GitHub's ``totalRegisteredRunners`` and when it arrived (unix seconds)."""
        self._last_patch_at: float | None = None

    def resume(self, state: ListenerState) -> None:
        """Go on from the patch sequence and target the state records."""
        self.scaler = Scaler(
            self.config.min_runners,
            self.config.max_runners,
            patch_seq=state.patch_seq,
            last_target=state.last_target,
        )

    def take(self, statistics: RunnerScaleSetStatistic, *, observed: bool = True) -> None:
        """New statistics (``observed``: GitHub sent them now, so their registered count is
        news for the registration pass)."""
        self.statistics = statistics
        self.carried_over = False
        if observed:
            self._registered = (statistics.total_registered_runners, int(self.clock.time()))
        self.metrics.arc.record_statistics(statistics)
        self.due = True

    def polls_failed(self) -> None:
        """A poll failed: the statistics held are carried over until one is answered again."""
        self.carried_over = True

    def poll_answered(self) -> None:
        self.carried_over = False

    def job_event(self) -> None:
        """A JobStarted or JobCompleted was handled (``Scaler.job_event``)."""
        self.scaler.job_event()

    def next_patch_id(self) -> int | None:
        """The patch id of the next patch, which a job completion records
        (``Scaler.next_patch_id``)."""
        return self.scaler.next_patch_id()

    # --- when -------------------------------------------------------------------------------

    def seconds_to_wake(self) -> float | None:
        """Seconds until the loop has to act without a message: a count due once
        ``patch_interval`` has passed, a warm window's edge; ``None``: neither."""
        waits = []
        if self.count_due():
            last = self._last_patch_at
            now = self.clock.monotonic()
            waits.append(0.0 if last is None else last + self.patch_interval - now)
        edge = self.warm.seconds_to_edge(self.clock.now())
        if edge is not None:
            waits.append(edge)
        return max(0.0, min(waits)) if waits else None

    def count_due(self) -> bool:
        """New statistics, or a minimum in force now that is not the scaler's (a warm window's
        edge passed, perhaps while a message was handled)."""
        return self.due or self.warm.changed(self.scaler, self.clock.now())

    def interval_passed(self) -> bool:
        return (
            self._last_patch_at is None
            or self.clock.monotonic() - self._last_patch_at >= self.patch_interval
        )

    # --- the patch --------------------------------------------------------------------------

    async def patch(self) -> None:
        """Patch replicas/patchID from the latest statistics, with the state annotation."""
        stats = self.statistics
        carried_over = self.carried_over
        # GitHub's idle count in carried-over statistics is as old as they are: only our own
        # runner set's count is looked at then
        idle = self._idle_runners()
        if not carried_over:
            idle = max(stats.total_idle_runners, idle)
        assigned = self.guard.effective_assigned(
            assigned=stats.total_assigned_jobs,
            running=stats.total_running_jobs,
            idle_runners=idle,
            now=self.clock.monotonic(),
            carried_over=carried_over,
        )
        held_back = stats.total_assigned_jobs - assigned
        self.metrics.stale_assigned.set(held_back)
        if held_back:
            log.warning(
                "assigned jobs stay unstarted while runners sit idle; not scaling for them",
                assigned=stats.total_assigned_jobs,
                running=stats.total_running_jobs,
                idle=idle,
                held_back=held_back,
            )
        self._take_warm_minimum()
        before = (self.scaler.patch_seq, self.scaler.last_target, self.scaler.dirty)
        decision = self.scaler.desired(assigned)
        state = replace(
            self.sessions.state,
            patch_seq=decision.patch_seq,
            last_target=decision.target,
            last_message_id=self.sessions.last_message_id,
        )
        if self._registered is not None:
            registered, at = self._registered
            state = replace(state, registered_runners=registered, registered_at=at)
        self.sessions.state = state
        try:
            await self.sessions.save(ers_patch(decision))
        except BaseException:
            self.scaler.patch_seq, self.scaler.last_target, self.scaler.dirty = before
            raise
        self.metrics.ers_patches.inc()
        self.metrics.arc.record_desired(decision.target)
        self.due = False
        self._last_patch_at = self.clock.monotonic()
        log.debug(
            "desired runners patched",
            replicas=decision.target,
            patch_id=decision.patch_id,
            assigned=stats.total_assigned_jobs,
        )

    def _take_warm_minimum(self) -> None:
        """The scaler moves to the minimum in force now (``warm``)."""
        minimum = self.scaler.min_runners
        self.scaler = self.warm.scaler_at(self.scaler, self.clock.now())
        if self.scaler.min_runners != minimum:
            window = self.warm.at(self.clock.now())[1]
            log.info(
                "minimum runners changed",
                min_runners=self.scaler.min_runners,
                window=window.describe() if window is not None else "none (min_runners)",
            )
            self.metrics.arc.record_static(self.scaler.min_runners, self.config.max_runners)

    def _idle_runners(self) -> int:
        runner_set = self.sessions.runner_set
        if runner_set is None:
            return 0
        value = runner_set.status.get("idleEphemeralRunners", 0)
        return value if isinstance(value, int) else 0
