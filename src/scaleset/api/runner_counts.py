"""The five-way runner counts on EphemeralRunnerSet and AutoscalingRunnerSet status (L0).

ARC reports runners by ``status.phase`` (pending / running / failed). Under lifecycle.md L1 the
phase ``Running`` means "the listener saw a job start", so ARC's ``runningEphemeralRunners`` now
counts runners that took a job, and idle runners sit in ``pendingEphemeralRunners``. These five
counts come from the one classifier (``scaleset.api.runner_state.classify``) and tell idle from
busy; they add up to the number of child EphemeralRunners.
"""

from __future__ import annotations

from pydantic import Field

from scaleset.api._lenient import ApiModel


class RunnerCountFields(ApiModel):
    """Status fields holding one count per ``RunnerState``."""

    starting_ephemeral_runners: int = Field(
        0, description="Runners whose pod does not run the runner yet (no job)."
    )
    idle_ephemeral_runners: int = Field(0, description="Runners running with no job.")
    busy_ephemeral_runners: int = Field(0, description="Runners that have a job.")
    terminal_ephemeral_runners: int = Field(
        0, description="Runners in phase Failed, Succeeded or Outdated, not yet removed."
    )
    deleting_ephemeral_runners: int = Field(0, description="Runners being deleted.")
