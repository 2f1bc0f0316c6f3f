"""The AutoscalingListener controller's settings: what the controller's flags pass on to every
listener (log level and format, metrics address and path, the command), label propagation, and
the listener pod's back-off.

Back-off (ARC #4656 recreates a failed listener at once and crash-loops on a deterministic
401/403/404): the first failure is retried at once (an eviction or a node drain is not the
listener's fault), then after ``backoff_initial`` doubling up to ``backoff_max`` — the kubelet's
CrashLoopBackOff shape. The count is kept in the AutoscalingListener's status, so a controller
restart neither resets nor skips it, and it is reset once a listener has run for
``healthy_after`` (the kubelet's 10 minutes). A kill from outside (SIGKILL, SIGTERM, eviction,
node shutdown; not the OOM killer) of a listener that ran at least ``backoff_initial`` is not
counted at all: it is no crash loop, and each second without a listener leaves job events
unread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scaleset.api import Policy
from scaleset.backoff import capped_exponential
from scaleset.runtime.probes import parse_bind_address

DEFAULT_COMMAND = ("scaleset", "listener")
"""The listener command in scaleset's image (ARC's image: ``/ghalistener``, set
``LISTENER_ENTRYPOINT``)."""
ENTRYPOINT_ENV = "LISTENER_ENTRYPOINT"


@dataclass(frozen=True)
class Settings:
    """Tunables of the AutoscalingListener controller (seconds)."""

    log_level: str = "debug"
    """``--log-level``, written into every listener config (ARC passes it on too)."""
    log_format: str = "text"
    metrics_addr: str = ":8080"
    """``--listener-metrics-addr``; ``0`` or empty: listeners serve no metrics."""
    metrics_endpoint: str = "/metrics"
    command: tuple[str, ...] = DEFAULT_COMMAND
    exclude_label_prefixes: tuple[str, ...] = ()
    """``--exclude-label-propagation-prefix``: labels not copied to the listener's objects."""
    backoff_initial: float = 10.0
    backoff_max: float = 300.0
    healthy_after: float = 600.0
    """A listener running this long resets the failure count."""
    cleanup_poll: float = 1.0
    """While deleting: look again after this long until every listener object is gone (ARC)."""
    policy: Policy = field(default_factory=Policy)
    """What the cluster admin allows beyond a valid listener (``ControllerOptions.policy``): a
    plain-http config URL, every template field merged into the pod (ARC)."""

    def __post_init__(self) -> None:
        if self.backoff_initial < 0 or self.backoff_max < self.backoff_initial:
            raise ValueError("backoff_initial must be >= 0 and backoff_max >= backoff_initial")
        if self.healthy_after <= 0 or self.cleanup_poll <= 0:
            raise ValueError("healthy_after and cleanup_poll must be > 0")
        if not self.command:
            raise ValueError("the listener command must not be empty")
        parse_bind_address(self.metrics_addr)  # a ValueError that names the address

    @property
    def metrics_enabled(self) -> bool:
        """Listeners serve metrics: ``metrics_addr`` is an address, not ``0`` or empty (the
        runtime's one reading of a bind address)."""
        return parse_bind_address(self.metrics_addr) is not None

    def backoff(self, failures: int) -> float:
        """Seconds to wait before the next listener pod after ``failures`` consecutive ones."""
        if failures <= 1:
            return 0.0
        return capped_exponential(self.backoff_initial, self.backoff_max, failures - 2)


def command_from_environ(environ: Mapping[str, str]) -> tuple[str, ...]:
    """ARC's ``LISTENER_ENTRYPOINT`` (one executable path) overrides the default command."""
    entrypoint = environ.get(ENTRYPOINT_ENV, "").strip()
    return (entrypoint,) if entrypoint else DEFAULT_COMMAND
