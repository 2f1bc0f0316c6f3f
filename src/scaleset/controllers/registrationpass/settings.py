"""The registration pass's settings: how often a pass of one scale set runs, how much it may
delete, when an offline idle runner is replaced, and the optional maximum runner age. Each
default here is the one number; ``setup.ENVIRONMENT`` names the variables that override them.
When a pass runs early is ``schedule.EarlySettings``, beside the schedule it tunes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    """How often a pass runs and how much it may do.

    ``interval``: seconds between two passes of one scale set. ``max_deletions``: at most this
    many deletions (EphemeralRunners and registrations together, and inferred job completions,
    each a runner deletion put off by the grace period) per pass. ``offline_bound``:
    an idle runner whose pod runs and whose registration GitHub shows offline this long is
    replaced. ``max_runner_age``: an idle runner older than this is retired and replaced
    (``None``: off, the default)."""

    interval: float = 300.0
    max_deletions: int = 10
    offline_bound: float = 600.0
    max_runner_age: float | None = None

    def __post_init__(self) -> None:
        if self.interval <= 0:
            raise ValueError("the registration pass interval must be positive")
        if self.max_deletions < 0:
            raise ValueError("the per-pass deletion cap must not be negative")
        if self.offline_bound <= 0:
            raise ValueError("the offline bound must be positive")
        if self.max_runner_age is not None and self.max_runner_age <= 0:
            raise ValueError("the maximum runner age must be positive")
