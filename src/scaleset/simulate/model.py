"""The discrete-event model: one scale set on virtual time, driving the real pure decisions.

What is real (imported, not copied): the listener's ``Scaler`` (through the policy) and its
``StaleSurplusGuard``, and the EphemeralRunnerSet controller's ``plan`` — fed the same views
(``RunnerSetView``, ``RunnerView``) the controller builds from its cache, its status written
back as the controller writes it (so finished-runner slots, the force-state scale-down and the
L3 scale-down ranking behave as in production). What is modelled, with latencies as
``Parameters``:

- GitHub: a job is assigned to the scale set when queued and counted in
  ``totalAssignedJobs`` until it completes; the oldest queued job goes to an idle runner
  (``pickup`` seconds); job events reach the listener ``message_latency`` later; a long poll
  with no message returns after ``poll_timeout``; ``generatejitconfig`` is rate-limited to
  ``jit_rate`` calls a second (GitHub's ceiling).
- The listener: statistics with each message, a patch at most every ``patch_interval`` while
  messages come, one on every empty poll, and one whenever the policy asks to be woken (a warm
  window's edge).
- Kubernetes: a change reaches the EphemeralRunnerSet controller ``reconcile_latency`` later;
  each new runner gets its JIT config, then a pod that runs the runner ``pod_start`` seconds
  after it has a node; with ``runners_per_node`` set, nodes are added on demand (ready after
  ``node_scale_up``) and removed after ``node_idle`` seconds empty; a finished or removed
  runner's pod is gone ``delete_latency`` later.

The run begins ``warmup`` seconds (an hour) before the trace, and the accounts begin with the
trace: a minimum in force at the start is already warm, and no policy pays for the warm-up.

Why a model and not the whole embedded system on the manual clock: docs/simulate.md gives the
measurement (the embedded system costs tens of CPU milliseconds per job; a day of 2,000 jobs
for four policies must fit in a minute).
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from scaleset.api import EphemeralRunnerSetStatus, RunnerPhase, RunnerState
from scaleset.controllers.ephemeralrunnerset.actions import (
    AddFinalizers,
    CreateRunner,
    DeleteRunner,
    RemoveRunner,
    Requeue,
    ScaleDown,
    WriteStatus,
)
from scaleset.controllers.ephemeralrunnerset.observed import (
    Observed,
    RunnerFacts,
    RunnerSetView,
    RunnerView,
    jit_in_flight,
    view_of,
)
from scaleset.controllers.ephemeralrunnerset.plan import plan
from scaleset.listener.loop import LoopSettings
from scaleset.listener.scaler import StaleSurplusGuard
from scaleset.simulate.policies import Policy
from scaleset.simulate.trace import Job


@dataclass(frozen=True)
class Parameters:
    """The latencies and limits of the modelled world (seconds)."""

    max_runners: int = 100
    pod_start: float = 60.0
    """A runner pod on a ready node until its runner is online (image pull, start, register)."""
    node_scale_up: float = 0.0
    """A new node is ready after this (used with ``runners_per_node``)."""
    runners_per_node: int = 0
    """Runner pods a node holds; 0: no node model, every pod has a node at once."""
    node_idle: float = 600.0
    """An empty node is removed after this."""
    jit_rate: float = 3.0
    """``generatejitconfig`` calls a second (GitHub's ceiling)."""
    jit_latency: float = 0.5
    message_latency: float = 0.5
    poll_timeout: float = 50.0
    patch_interval: float = LoopSettings.patch_interval
    stale_window: float = LoopSettings.stale_window
    """The listener's pacing and stale-surplus window: its own defaults."""
    reconcile_latency: float = 0.5
    """A change reaches the EphemeralRunnerSet controller (changes within it are one pass)."""
    pickup: float = 2.0
    """An idle runner to its job running."""
    delete_latency: float = 2.0


@dataclass
class _Runner:
    name: str
    created: float
    created_at: datetime
    patch_id: int
    state: str = "jit"  # jit, pod, idle, busy, finished, deleting
    runner_id: int = 0
    pod_at: float | None = None
    online_at: float | None = None
    node: int | None = None
    view: RunnerView | None = None


@dataclass
class _Node:
    ready_at: float
    pods: set[str] = field(default_factory=set)
    empty_since: float | None = None


@dataclass
class Sample:
    """The world at one instant (seconds after the start), for the curves."""

    at: float
    queued: int
    starting: int
    idle: int
    busy: int
    desired: int


@dataclass
class PolicyOutcome:
    """What one policy did with the trace."""

    policy: str
    queue_times: list[float]
    """Seconds from queued to running, for every job that started."""
    not_started: int
    runner_seconds: float
    """Runner pods alive (starting, idle, busy, finishing), summed over time."""
    idle_seconds: float
    """Runners online with no job, summed over time."""
    jit_configs: int
    patches: int
    plan_calls: int
    samples: list[Sample]
    span: float


class Simulation:
    """One run of one policy over one trace (``run()`` once)."""

    def __init__(
        self,
        jobs: Sequence[Job],
        policy: Policy,
        parameters: Parameters,
        *,
        start: datetime,
        end: datetime,
        warmup: float = 3600.0,
    ) -> None:
        self.jobs = sorted(jobs)
        self.policy = policy
        self.p = parameters
        self.start = start
        self.end = (end - start).total_seconds()
        self.now = -warmup
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.guard = StaleSurplusGuard(window=parameters.stale_window)
        # GitHub
        self.waiting: deque[int] = deque()  # jobs queued, not yet with a runner
        self.running = 0
        self.queue_times: list[float] = []
        self.jit_next = self.now
        self.jit_configs = 0
        # listener
        self.replicas = 0
        self.patch_id = 0
        self.patches = 0
        self.last_patch = -1e9
        self.decision_due = False
        self.last_message = self.now
        # EphemeralRunnerSet
        self.runners: dict[str, _Runner] = {}
        self.idle: dict[str, None] = {}  # insertion order: first online first
        self.status = EphemeralRunnerSetStatus()
        self.finalizers: tuple[str, ...] = ()
        self.seen_finished: set[str] = set()
        self.reconcile_due = False
        self.plan_calls = 0
        self._names = itertools.count(1)
        self._runner_ids = itertools.count(1)
        # nodes
        self.nodes: dict[int, _Node] = {}
        self._node_ids = itertools.count(1)
        # accounting
        self.pods = 0
        self.online_idle = 0
        self.starting = 0
        self.runner_seconds = 0.0
        self.idle_seconds = 0.0
        self._accounted = 0.0
        self.samples: list[Sample] = []

    # --- the event loop ------------------------------------------------------------------------

    def at(self, when: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._events, (when, next(self._seq), action))

    def run(self) -> PolicyOutcome:
        for index, job in enumerate(self.jobs):
            self.at((job.queued_at - self.start).total_seconds(), partial(self._queued, index))
        self.at(self.now, self._decide)
        self.at(self.now + self.p.poll_timeout, self._poll_timeout)
        self.at(0.0, lambda: None)  # the first sample, at the start
        self._wake_policy()
        while self._events:
            when, _, action = heapq.heappop(self._events)
            if when > self.end:
                break
            self._account(when)
            self.now = when
            action()
            self._sample()
        self._account(self.end)
        return PolicyOutcome(
            policy=self.policy.name,
            queue_times=self.queue_times,
            not_started=len(self.jobs) - len(self.queue_times),
            runner_seconds=self.runner_seconds,
            idle_seconds=self.idle_seconds,
            jit_configs=self.jit_configs,
            patches=self.patches,
            plan_calls=self.plan_calls,
            samples=self.samples,
            span=self.end,
        )

    def _datetime(self, seconds: float) -> datetime:
        return self.start + timedelta(seconds=seconds)

    def _account(self, when: float) -> None:
        """Add the runner time up to ``when`` (nothing before the start: the warm-up is free)."""
        step = when - self._accounted
        if step > 0:
            self.runner_seconds += self.pods * step
            self.idle_seconds += self.online_idle * step
            self._accounted = when

    def _sample(self) -> None:
        if self.now < 0:
            return
        sample = Sample(
            self.now,
            len(self.waiting),
            self.starting,
            self.online_idle,
            self.running,
            self.replicas,
        )
        last = self.samples[-1] if self.samples else None
        if last is not None and (
            last.queued,
            last.starting,
            last.idle,
            last.busy,
            last.desired,
        ) == (sample.queued, sample.starting, sample.idle, sample.busy, sample.desired):
            return
        if last is not None and last.at == sample.at:
            self.samples[-1] = sample
        else:
            self.samples.append(sample)

    # --- GitHub --------------------------------------------------------------------------------

    def _queued(self, index: int) -> None:
        self.waiting.append(index)
        self.policy.job_assigned(self._datetime(self.now))
        self._message(job_event=False)
        self._dispatch()

    def _dispatch(self) -> None:
        while self.waiting and self.idle:
            name = next(iter(self.idle))
            runner = self.runners[name]
            index = self.waiting.popleft()
            self._set_idle(runner, False)
            runner.state = "busy"
            runner.view = None
            self.at(self.now + self.p.pickup, partial(self._job_started, runner, index))

    def _job_started(self, runner: _Runner, index: int) -> None:
        job = self.jobs[index]
        self.queue_times.append(self.now - (job.queued_at - self.start).total_seconds())
        self.running += 1
        self._message(job_event=True)
        self.at(self.now + job.duration, lambda: self._job_completed(runner))

    def _job_completed(self, runner: _Runner) -> None:
        self.running -= 1
        runner.state = "finished"
        runner.view = None
        self.seen_finished.add(runner.name)
        self._message(job_event=True)
        self._reconcile_soon()

    def _jit(self, runner: _Runner) -> None:
        slot = max(self.now, self.jit_next)
        self.jit_next = slot + 1.0 / self.p.jit_rate
        self.at(slot + self.p.jit_latency, lambda: self._jit_done(runner))

    def _jit_done(self, runner: _Runner) -> None:
        if runner.state != "jit":
            return
        self.jit_configs += 1
        runner.runner_id = next(self._runner_ids)
        runner.state = "pod"
        runner.view = None
        runner.pod_at = self.now
        self.pods += 1
        self.starting += 1
        ready = self._place(runner)
        self.at(ready + self.p.pod_start, lambda: self._online(runner))
        self._reconcile_soon()

    # --- nodes ---------------------------------------------------------------------------------

    def _place(self, runner: _Runner) -> float:
        """Put the pod on a node; when the node is (or will be) ready."""
        per_node = self.p.runners_per_node
        if per_node <= 0:
            return self.now
        candidates = [
            (max(node.ready_at, self.now), node_id)
            for node_id, node in self.nodes.items()
            if len(node.pods) < per_node
        ]
        if candidates:
            ready, node_id = min(candidates)
        else:
            node_id, ready = next(self._node_ids), self.now + self.p.node_scale_up
            self.nodes[node_id] = _Node(ready_at=ready)
        node = self.nodes[node_id]
        node.pods.add(runner.name)
        node.empty_since = None
        runner.node = node_id
        return ready

    def _unplace(self, runner: _Runner) -> None:
        if runner.node is None or runner.node not in self.nodes:
            return
        node = self.nodes[runner.node]
        node.pods.discard(runner.name)
        if not node.pods:
            node.empty_since = self.now
            since, node_id = self.now, runner.node
            self.at(self.now + self.p.node_idle, lambda: self._node_check(node_id, since))

    def _node_check(self, node_id: int, since: float) -> None:
        node = self.nodes.get(node_id)
        if node is not None and not node.pods and node.empty_since == since:
            del self.nodes[node_id]

    # --- runners -------------------------------------------------------------------------------

    def _online(self, runner: _Runner) -> None:
        if runner.state != "pod":
            return
        runner.state = "idle"
        runner.view = None
        runner.online_at = self.now
        self.starting -= 1
        self._set_idle(runner, True)
        self._dispatch()
        self._reconcile_soon()

    def _set_idle(self, runner: _Runner, idle: bool) -> None:
        if idle:
            self.idle[runner.name] = None
            self.online_idle += 1
        elif runner.name in self.idle:
            del self.idle[runner.name]
            self.online_idle -= 1

    def _remove(self, name: str) -> None:
        runner = self.runners.get(name)
        if runner is None or runner.state == "deleting":
            return
        if runner.state == "idle":
            self._set_idle(runner, False)
        if runner.state == "pod":
            self.starting -= 1
        runner.state = "deleting"
        runner.view = None
        self.at(self.now + self.p.delete_latency, lambda: self._gone(runner))

    def _gone(self, runner: _Runner) -> None:
        if runner.pod_at is not None:
            self.pods -= 1
            self._unplace(runner)
        self.runners.pop(runner.name, None)
        self._reconcile_soon()

    def _view(self, runner: _Runner, now: datetime) -> RunnerView:
        if runner.view is not None:
            return runner.view
        state = runner.state
        facts = RunnerFacts(
            name=runner.name,
            uid=runner.name,
            resource_version="1",
            created=runner.created_at,
            state=_STATES[state],
            phase=_PHASES[state],
            runner_id=runner.runner_id,
            has_job=state in ("busy", "finished"),
            job_completed=state == "finished",
            patch_id=runner.patch_id,
        )
        view = view_of(facts, current_spec=True, in_flight=jit_in_flight(facts, now))
        if state != "jit":
            runner.view = view
        return view

    # --- the EphemeralRunnerSet controller -----------------------------------------------------

    def _reconcile_soon(self) -> None:
        if not self.reconcile_due:
            self.reconcile_due = True
            self.at(self.now + self.p.reconcile_latency, self._reconcile)

    def _reconcile(self) -> None:
        self.reconcile_due = False
        now = self._datetime(self.now)
        observed = Observed(
            runner_set=RunnerSetView(
                namespace="simulate",
                name="scale-set",
                uid="scale-set",
                resource_version="1",
                finalizers=self.finalizers,
                replicas=self.replicas,
                patch_id=self.patch_id,
                max_runners=self.p.max_runners,
                status=self.status,
            ),
            runners=tuple(self._view(r, now) for r in self.runners.values()),
            seen_finished=frozenset(self.seen_finished),
        )
        self.plan_calls += 1
        for action in plan(observed, now):
            if isinstance(action, AddFinalizers):
                self.finalizers = action.wanted
                self._reconcile_soon()
            elif isinstance(action, WriteStatus):
                self.status = action.status
                self.seen_finished.clear()
            elif isinstance(action, CreateRunner):
                self._create(action.patch_id)
            elif isinstance(action, DeleteRunner | RemoveRunner):
                self._remove(action.runner.name)
            elif isinstance(action, ScaleDown):
                for candidate in action.candidates[: action.count]:
                    self._remove(candidate.name)
            elif isinstance(action, Requeue):
                self.at(self.now + max(action.after, self.p.reconcile_latency), self._reconcile)

    def _create(self, patch_id: int) -> None:
        name = f"runner-{next(self._names)}"
        runner = _Runner(name, self.now, self._datetime(self.now), patch_id)
        self.runners[name] = runner
        self._jit(runner)

    # --- the listener --------------------------------------------------------------------------

    def _message(self, *, job_event: bool) -> None:
        """A job event: the listener gets it (and statistics) ``message_latency`` later."""
        self.at(self.now + self.p.message_latency, lambda: self._received(job_event))

    def _received(self, job_event: bool) -> None:
        if job_event:
            self.policy.job_event()
        self.last_message = self.now
        if not self.decision_due:
            self.decision_due = True
            when = max(self.now, self.last_patch + self.p.patch_interval)
            self.at(when, self._decide)

    def _poll_timeout(self) -> None:
        quiet = self.now - self.last_message
        if quiet >= self.p.poll_timeout - 1e-9:
            self._decide()
            self.last_message = self.now
            self.at(self.now + self.p.poll_timeout, self._poll_timeout)
        else:
            self.at(self.last_message + self.p.poll_timeout, self._poll_timeout)

    def _wake_policy(self) -> None:
        wake = self.policy.wake_at(self._datetime(self.now))
        if wake is not None:
            when = max((wake - self.start).total_seconds(), self.now + 1e-6)
            self.at(when, self._policy_woke)

    def _policy_woke(self) -> None:
        self._decide()
        self._wake_policy()

    def _decide(self) -> None:
        self.decision_due = False
        assigned = len(self.waiting) + self.running + self._picking_up()
        effective = self.guard.effective_assigned(
            assigned=assigned,
            running=self.running,
            idle_runners=self.online_idle,
            now=self.now,
        )
        decision = self.policy.desired(effective, self._datetime(self.now))
        self.patches += 1
        self.last_patch = self.now
        if (decision.target, decision.patch_id) != (self.replicas, self.patch_id):
            self.replicas, self.patch_id = decision.target, decision.patch_id
            self._reconcile_soon()

    def _picking_up(self) -> int:
        """Jobs handed to a runner that has not started them yet (still assigned)."""
        busy = sum(1 for r in self.runners.values() if r.state == "busy")
        return busy - self.running


_STATES = {
    "jit": RunnerState.STARTING,
    "pod": RunnerState.STARTING,
    "idle": RunnerState.IDLE,
    "busy": RunnerState.BUSY,
    "finished": RunnerState.TERMINAL,
    "deleting": RunnerState.DELETING,
}
_PHASES = {
    "jit": "",
    "pod": RunnerPhase.PENDING,
    "idle": RunnerPhase.PENDING,
    "busy": RunnerPhase.RUNNING,
    "finished": RunnerPhase.SUCCEEDED,
    "deleting": RunnerPhase.SUCCEEDED,
}
