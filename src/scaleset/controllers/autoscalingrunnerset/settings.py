"""The AutoscalingRunnerSet controller's configuration (what the controller's flags say: the
controller namespace, the listener image, image pull secrets, label propagation, the admin's
policy) and tunables (seconds: how often GitHub is asked whether the scale set exists, and the
back-off after a GitHub problem). ``Observed.settings`` carries them to ``plan``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scaleset.api import Policy
from scaleset.backoff import capped_exponential


@dataclass(frozen=True)
class Settings:
    """The reconciler's configuration (from the controller's flags) and tunables (seconds)."""

    controller_namespace: str
    """Where AutoscalingListeners live (``CONTROLLER_MANAGER_POD_NAMESPACE``)."""
    listener_image: str
    """``spec.image`` of every listener (``CONTROLLER_MANAGER_CONTAINER_IMAGE``)."""
    image_pull_secrets: tuple[str, ...] = ()
    """``--auto-scaler-image-pull-secrets``: always part of the listener spec, at creation and
    when comparing (ARC compares without them and churns the listener, §11.2)."""
    exclude_label_prefixes: tuple[str, ...] = ()
    """``--exclude-label-propagation-prefix``: labels not copied to the runner set/listener."""
    verify_interval: float = 600.0
    """How often GitHub is asked whether the scale set still exists (ARC #4571); also asked on
    the first reconcile after a start and whenever the spec (generation) changed."""
    retry_initial: float = 5.0
    """First wait after a GitHub problem; doubles per consecutive failure ..."""
    retry_max: float = 300.0
    """... up to this."""
    policy: Policy = field(default_factory=Policy)
    """What the cluster admin allows beyond a valid scale set (``ControllerOptions.policy``:
    ``--allow-http-github-url``, ``--allow-full-listener-template``); else ``Valid=False``."""

    def __post_init__(self) -> None:
        if not self.controller_namespace or not self.listener_image:
            raise ValueError("controller namespace and listener image are required")
        if self.verify_interval <= 0 or not 0 < self.retry_initial <= self.retry_max:
            raise ValueError("verify_interval > 0 and 0 < retry_initial <= retry_max")

    def retry_after(self, failures: int) -> float:
        """The wait after ``failures`` consecutive failed reconciles (1 or more)."""
        return capped_exponential(self.retry_initial, self.retry_max, failures - 1)
