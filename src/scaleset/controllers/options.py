"""``ControllerOptions``: everything ``scaleset controller`` was told, as one frozen value.

Its own module so that what a controller's ``setup`` receives (``controllers.setup.ProcessContext``
carries the options) does not import the process that builds it: ``manager_process`` parses and
validates flags into these options, registers the controllers, and runs the manager.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from scaleset.api import Policy
from scaleset.kube.client import ClientSettings
from scaleset.runtime.controller import QueueSettings
from scaleset.runtime.informer import ALL_NAMESPACES
from scaleset.runtime.leader import LeaderElectionConfig
from scaleset.runtime.manager import ManagerSettings

RUNNER_CONTROLLER = "ephemeralrunner"
ARC_CONTROLLERS = (
    "autoscalingrunnerset",
    "ephemeralrunnerset",
    "ephemeralrunner",
    "autoscalinglistener",
)
"""ARC's four controllers: ``--default-max-concurrent-reconciles`` sets their workers (scaleset's
own, such as ``registrationpass``, take ``--workers`` only)."""
DEFAULT_PROBE_ADDRESS = ":8081"
"""Probes are on by default (ARC's chart always passes ``--health-probe-bind-address``; the
kubebuilder default port); ``0`` or an empty value disables them."""


@dataclass(frozen=True)
class ControllerOptions:
    """Everything ``scaleset controller`` was told (validated by ``validate``)."""

    controller_namespace: str
    listener_image: str
    kubeconfig: Path | None = None
    context: str | None = None
    log_level: str = "debug"
    log_format: str = "text"
    metrics_addr: str = ":8080"
    listener_metrics_addr: str = ":8080"
    listener_metrics_endpoint: str = "/metrics"
    runner_max_concurrent_reconciles: int | None = None
    """ARC 0.14's ``--runner-max-concurrent-reconciles`` (the EphemeralRunner controller)."""
    max_concurrent_reconciles: dict[str, int] = field(default_factory=dict)
    """ARC 0.15's ``--<controller>-max-concurrent-reconciles`` flags, by controller name."""
    default_max_concurrent_reconciles: int | None = None
    """ARC's ``--default-max-concurrent-reconciles``: ARC's controllers without their own flag."""
    k8s_client_qps: float = ClientSettings.qps
    k8s_client_burst: int = ClientSettings.burst
    watch_single_namespace: str = ""
    watch_namespaces: tuple[str, ...] = ()
    leader_election_id: str = "actions-runner-controller"
    leader_election_namespace: str = ""
    lease_duration: float = LeaderElectionConfig.lease_duration
    renew_deadline: float = LeaderElectionConfig.renew_deadline
    retry_period: float = LeaderElectionConfig.retry_period
    identity: str = ""
    health_probe_bind_address: str = DEFAULT_PROBE_ADDRESS
    workers: dict[str, int] = field(default_factory=dict)
    workqueue_rate_limiter: str = ""
    sync_period: float = 60.0
    image_pull_secrets: tuple[str, ...] = ()
    exclude_label_propagation_prefixes: tuple[str, ...] = ()
    graceful_shutdown: float = ManagerSettings.graceful_shutdown
    ignored: tuple[tuple[str, str], ...] = ()
    """``(setting, why)`` of each flag or chart value taken for ARC compatibility but not acted
    on; the process logs a warning for each at start."""
    allow_http_github_url: bool = False
    """Accept ``githubConfigUrl``s over plain http (a test or demo GitHub); otherwise such a
    scale set is refused (``Valid=False InsecureGitHubUrl``)."""
    allow_full_listener_template: bool = False
    """Merge every field of a scale set's ``listenerTemplate`` into its listener pod (ARC);
    otherwise only scheduling, resources, env and tightening security fields are accepted."""

    @property
    def policy(self) -> Policy:
        """The two ``allow`` flags as the policy validation applies."""
        return Policy(
            allow_http_github_url=self.allow_http_github_url,
            allow_full_listener_template=self.allow_full_listener_template,
        )

    def named_namespaces(self) -> tuple[str, ...]:
        """The namespaces named as watched (``--watch-namespaces``, then
        ``--watch-single-namespace``); empty when none is named (every namespace is watched)."""
        named = [*self.watch_namespaces]
        if self.watch_single_namespace:
            named.append(self.watch_single_namespace)
        return tuple(named)

    def namespaces(self) -> tuple[str, ...]:
        """Where the caches look: everywhere, or the named namespaces plus the controller's."""
        named = self.named_namespaces()
        if not named:
            return ALL_NAMESPACES
        return tuple(dict.fromkeys([*named, self.controller_namespace]))

    def workers_for(self, name: str, default: int = 1) -> int:
        """Workers for one controller: ``--workers NAME=N``, then ARC 0.15's flag of the
        controller, then (EphemeralRunner) ARC 0.14's ``--runner-max-concurrent-reconciles``,
        then ARC's global flag (ARC's controllers), then ``default`` (the controller's own)."""
        if name in self.workers:
            return self.workers[name]
        if name in self.max_concurrent_reconciles:
            return self.max_concurrent_reconciles[name]
        if name == RUNNER_CONTROLLER and self.runner_max_concurrent_reconciles is not None:
            return self.runner_max_concurrent_reconciles
        if name in ARC_CONTROLLERS and self.default_max_concurrent_reconciles is not None:
            return self.default_max_concurrent_reconciles
        return default

    def queue_settings(self) -> QueueSettings:
        """``bucket_rate_limiter`` (default): a re-add after an error or a ``requeue`` waits the
        larger of its per-key back-off and a 50/s, burst 200 bucket per controller (client-go's
        default controller rate limiter, with a larger bucket; other adds are not limited);
        ``typed_rate_limiter``: per-key back-off only."""
        if self.workqueue_rate_limiter == "typed_rate_limiter":
            return QueueSettings(rate=math.inf)
        return QueueSettings(rate=50.0, burst=200)
