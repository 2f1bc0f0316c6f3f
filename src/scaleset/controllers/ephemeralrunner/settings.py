"""The EphemeralRunner controller's tunables (seconds): the L4 grace period, how long a pod may
stay pending or refused by a ResourceQuota, the L5 failure ladder, and when GitHub is asked
again. Each default here is the one number; ``setup.ENVIRONMENT`` names the variables that
override them, and ``Observed.settings`` carries them to ``plan``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    """The reconciler's tunables (seconds)."""

    grace_period: float = 30.0
    """L4: how long a runner may live after its job completed."""
    pod_pending_timeout: float = 15 * 60.0
    """A pod that never starts its runner within this is replaced."""
    quota_give_up: float = 10 * 60.0
    """A runner whose pod the ResourceQuota keeps refusing is replaced once this old."""
    max_failures: int = 5
    """L5: proven-never-started pod failures before the runner is replaced."""
    failure_backoff: tuple[float, ...] = (0.0, 5.0, 10.0, 20.0, 40.0, 80.0)
    """Wait before the next pod, indexed by the number of failures so far (last entry repeats)."""
    github_retry: float = 30.0
    """Look again after GitHub said a registration still runs a job, or could not be used."""
    user_agent: str = ""
    """Value of GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT in runner pods."""

    def __post_init__(self) -> None:
        if self.grace_period < 0 or self.pod_pending_timeout <= 0 or self.quota_give_up <= 0:
            raise ValueError("grace period must be >= 0 and timeouts > 0")
        if self.max_failures < 1 or not self.failure_backoff:
            raise ValueError("max_failures must be >= 1 and failure_backoff not empty")
