"""The one classifier of runner state (lifecycle.md L0), used by everything that counts or
chooses runners: ERS status, scale-down, drain, metrics, printer columns, the demo's report.

Rules, first match wins:

1. **deleting** — ``metadata.deletionTimestamp`` is set. Wins over everything: the runner is on
   its way out whatever its phase or job.
2. **terminal** — phase ``Failed``, ``Succeeded`` or ``Outdated``. A terminal runner never runs
   again (L2), even if it had a job.
3. **busy** — the runner has a job: ``jobId`` or ``jobRequestId`` is set (the listener recorded a
   JobStarted), or a ``jobCompletion`` is recorded (its job ended but the runner is not gone yet;
   it can take no other job). Phase does not matter here.
4. **idle** — the runner runs and has no job: the pod is Ready (``status.ready``), or the
   controller saw the runner container start (``status.runnerStartedAt``), or the phase is
   ``Running`` with no job fields — an ER that ARC made ``Running`` because its pod ran (L1
   takeover: it counts as idle until it is demoted to ``Pending``).
5. **starting** — everything else: no pod yet, or the pod does not run the runner yet.

``classify`` is pure: it reads one EphemeralRunner and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from scaleset.api.ephemeralrunner import EphemeralRunner, EphemeralRunnerStatus, RunnerPhase
from scaleset.api.runner_counts import RunnerCountFields


class RunnerState(StrEnum):
    """Where a runner is in its life (L0)."""

    STARTING = "starting"
    IDLE = "idle"
    BUSY = "busy"
    TERMINAL = "terminal"
    DELETING = "deleting"


def classify_status(status: EphemeralRunnerStatus, *, deleting: bool) -> RunnerState:
    """``classify`` for callers that hold the status and the deletion flag separately (e.g. a
    slim cached record)."""
    if deleting:
        return RunnerState.DELETING
    if status.is_terminal:
        return RunnerState.TERMINAL
    if status.has_job or status.job_completion is not None:
        return RunnerState.BUSY
    if status.ready or status.runner_started_at is not None or status.phase == RunnerPhase.RUNNING:
        return RunnerState.IDLE
    return RunnerState.STARTING


def classify(runner: EphemeralRunner) -> RunnerState:
    """The state of one EphemeralRunner (rules in the module docstring)."""
    return classify_status(runner.status, deleting=runner.metadata.is_deleting)


@dataclass(frozen=True)
class RunnerStateCounts:
    """How many runners are in each state."""

    starting: int = 0
    idle: int = 0
    busy: int = 0
    terminal: int = 0
    deleting: int = 0

    @property
    def total(self) -> int:
        """All runners counted."""
        return self.starting + self.idle + self.busy + self.terminal + self.deleting

    def get(self, state: RunnerState) -> int:
        """The count for ``state``."""
        value: int = getattr(self, state.value)
        return value

    def as_status_fields(self) -> RunnerCountFields:
        """The five status fields (``startingEphemeralRunners`` …) with these counts, to copy
        into an EphemeralRunnerSet or AutoscalingRunnerSet status."""
        return RunnerCountFields(
            starting_ephemeral_runners=self.starting,
            idle_ephemeral_runners=self.idle,
            busy_ephemeral_runners=self.busy,
            terminal_ephemeral_runners=self.terminal,
            deleting_ephemeral_runners=self.deleting,
        )


def count_states(runners: Iterable[EphemeralRunner]) -> RunnerStateCounts:
    """Count ``runners`` by ``classify``."""
    tally = dict.fromkeys(RunnerState, 0)
    for runner in runners:
        tally[classify(runner)] += 1
    return RunnerStateCounts(**{state.value: count for state, count in tally.items()})
