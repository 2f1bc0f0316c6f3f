"""The ``scaleset controller`` process: flags and environment in, a running Manager out.

Accepts ARC's controller flags and environment where they apply plus
ours, validates them into ``ControllerOptions`` (every problem is one clear line, exit code 1),
connects to the API server (a bad kubeconfig or an unreachable server is one line, exit 1, no
traceback), builds the ``Manager`` — leader election (always on), health/readiness/metrics
endpoints, informers for the four actions.github.com kinds — registers the reconcilers listed
in ``scaleset.controllers.registry.REGISTERED`` and runs until SIGTERM/SIGINT (exit 0, lease
released) or loss of leadership (exit 1, so the pod restarts with fresh caches).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from scaleset import __version__, logs
from scaleset.clock import Clock, SystemClock, run_with_deadline
from scaleset.controllers.crd_check import installed_crd_problem
from scaleset.controllers.github_access import GitHubClients
from scaleset.controllers.options import ARC_CONTROLLERS
from scaleset.controllers.options import (  # re-exported: the CLI and tests use them from here
    DEFAULT_PROBE_ADDRESS as DEFAULT_PROBE_ADDRESS,
)
from scaleset.controllers.options import (
    ControllerOptions as ControllerOptions,
)
from scaleset.controllers.registry import REGISTERED, registered_names
from scaleset.controllers.setup import ProcessContext, close_when_stopped, secret_watches
from scaleset.github import TransportFailure
from scaleset.kube.client import ClientSettings, KubeClient
from scaleset.kube.errors import ApiStatusError, KubeConfigError, KubeError, KubeTransportError
from scaleset.kube.resources import ACTIONS_KINDS, AUTOSCALING_LISTENER
from scaleset.runtime.informer import ALL_NAMESPACES
from scaleset.runtime.leader import LeaderElectionConfig, LeadershipLost, default_identity
from scaleset.runtime.manager import Manager, ManagerSettings
from scaleset.runtime.probes import parse_bind_address

log = logs.get_logger(__name__)

CONTROLLER_NAMES = ARC_CONTROLLERS
"""ARC's controller names; ``--workers`` accepts these and any registered reconciler's name."""
MAX_CONCURRENT_RECONCILES_FLAGS = {
    "autoscalingrunnerset": "--autoscaling-runner-set-max-concurrent-reconciles",
    "autoscalinglistener": "--autoscaling-listener-max-concurrent-reconciles",
    "ephemeralrunnerset": "--ephemeral-runner-set-max-concurrent-reconciles",
    "ephemeralrunner": "--ephemeral-runner-max-concurrent-reconciles",
}
"""ARC 0.15's per-controller worker flags."""

RATE_LIMITERS = ("", "bucket_rate_limiter", "typed_rate_limiter")
USER_AGENT = f"scaleset-controller/{__version__}"
"""How the controller manager names itself to the API server (the listener is
``scaleset-listener/<version>``): audit logs, and the tests that hold the charts' RBAC to what
each component really requests, tell the two apart by it."""


class OptionsError(ValueError):
    """A flag or environment value the controller cannot run with (one line, for the user)."""


def parse_workers(values: Iterable[str]) -> dict[str, int]:
    """``["ephemeralrunner=4", ...]`` -> ``{"ephemeralrunner": 4}`` (names checked)."""
    known = set(CONTROLLER_NAMES) | set(registered_names())
    workers: dict[str, int] = {}
    for value in values:
        name, sep, count = value.partition("=")
        name = name.strip().lower()
        if not sep or not name:
            raise OptionsError(f"--workers {value!r}: expected NAME=N")
        if name not in known:
            raise OptionsError(
                f"--workers {value!r}: unknown controller {name!r} "
                f"(known: {', '.join(sorted(known))})"
            )
        try:
            workers[name] = int(count)
        except ValueError:
            raise OptionsError(f"--workers {value!r}: {count!r} is not a number") from None
    return workers


_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(text: str) -> float:
    """A Go duration (``1m``, ``90s``, ``1h30m``, ``500ms``, or ``0``) in seconds."""
    value = text.strip()
    if value == "0":
        return 0.0
    parts = _DURATION_PART.findall(value)
    if not value or "".join(number + unit for number, unit in parts) != value:
        raise OptionsError(f"{text!r} is not a duration (e.g. 1m, 90s, 1h30m)")
    return sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)


def split_list(values: Iterable[str]) -> tuple[str, ...]:
    """Repeatable and/or comma-separated values, trimmed, empty ones dropped."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


UPDATE_STRATEGY_IGNORED = (
    "scaleset updates a scale set's runner set in place and never deletes a busy runner to "
    "apply a change (ARC removed the flag after 0.14.2)"
)
PPROF_IGNORED = "scaleset has no pprof endpoint"


def ignored_settings(
    *, update_strategy: str, pprof_addr: str, chart: str
) -> tuple[tuple[str, str], ...]:
    """``(setting, why)`` for each ARC flag given that scaleset does not act on, and for each
    chart value the chart reported ignoring (``chart``: its JSON list of ``{key, why}``)."""
    found: list[tuple[str, str]] = []
    if update_strategy:
        found.append((f"--update-strategy={update_strategy}", UPDATE_STRATEGY_IGNORED))
    if pprof_addr:
        found.append((f"--pprof-addr={pprof_addr}", PPROF_IGNORED))
    if chart.strip():
        try:
            entries = json.loads(chart)
        except ValueError:
            raise OptionsError("the chart's list of ignored values is not JSON") from None
        if not isinstance(entries, list):
            raise OptionsError("the chart's list of ignored values is not a list")
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                found.append((entry["key"], str(entry.get("why", ""))))
    return tuple(found)


def validate(options: ControllerOptions) -> None:
    """Raise ``OptionsError`` for the first value the controller cannot run with."""
    if not options.controller_namespace:
        raise OptionsError(
            "CONTROLLER_MANAGER_POD_NAMESPACE is not set (the namespace the controller runs in; "
            "the Helm chart sets it from the pod's namespace)"
        )
    if not options.listener_image:
        raise OptionsError(
            "CONTROLLER_MANAGER_CONTAINER_IMAGE is not set (the image listener pods run)"
        )
    try:
        logs.parse_level(options.log_level)
    except ValueError as error:
        raise OptionsError(f"--log-level: {error}") from None
    if options.log_format not in ("text", "json"):
        raise OptionsError(f"--log-format {options.log_format!r}: expected text or json")
    for flag, address in (
        ("--metrics-addr", options.metrics_addr),
        ("--listener-metrics-addr", options.listener_metrics_addr),
        ("--health-probe-bind-address", options.health_probe_bind_address),
    ):
        try:
            parse_bind_address(address)
        except ValueError as error:
            raise OptionsError(f"{flag}: {error}") from None
    counts = {
        "--runner-max-concurrent-reconciles": options.runner_max_concurrent_reconciles,
        "--default-max-concurrent-reconciles": options.default_max_concurrent_reconciles,
        **{
            MAX_CONCURRENT_RECONCILES_FLAGS.get(name, name): count
            for name, count in options.max_concurrent_reconciles.items()
        },
    }
    for flag, count in counts.items():
        if count is not None and count < 1:
            raise OptionsError(f"{flag} must be at least 1 (got {count})")
    for name, count in options.workers.items():
        if count < 1:
            raise OptionsError(f"--workers {name}={count}: must be at least 1")
    if options.k8s_client_qps <= 0 or options.k8s_client_burst < 1:
        raise OptionsError("--k8s-client-rate-limiter-qps must be > 0 and -burst >= 1")
    if options.workqueue_rate_limiter not in RATE_LIMITERS:
        raise OptionsError(
            f"--workqueue-rate-limiter {options.workqueue_rate_limiter!r}: expected "
            "bucket_rate_limiter or typed_rate_limiter"
        )
    if options.sync_period < 0 or options.graceful_shutdown < 0:
        raise OptionsError(
            "--sync-period (0 disables the resync) and --graceful-shutdown-timeout must be >= 0"
        )
    try:
        LeaderElectionConfig(
            lease_name=options.leader_election_id or "x",
            namespace=options.controller_namespace,
            identity="x",
            lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline,
            retry_period=options.retry_period,
        )
    except ValueError as error:
        raise OptionsError(f"leader election timings: {error}") from None
    if not options.leader_election_id:
        raise OptionsError("--leader-election-id must not be empty")


def build_manager(
    options: ControllerOptions,
    client: KubeClient,
    election_client: KubeClient | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    clock: Clock | None = None,
) -> Manager:
    """The manager for these options, with the base informers and every registered reconciler;
    the lease goes through ``election_client`` (its own rate limiter and connections) if given.
    The reconcilers' settings come from ``environ`` (``None``: none set, every default);
    ``clock`` is the one its controllers read (the system clock by default)."""
    namespaces = options.namespaces()
    election = LeaderElectionConfig(
        lease_name=options.leader_election_id,
        namespace=options.leader_election_namespace or options.controller_namespace,
        identity=options.identity or default_identity(),
        lease_duration=options.lease_duration,
        renew_deadline=options.renew_deadline,
        retry_period=options.retry_period,
    )
    manager = Manager(
        client,
        ManagerSettings(
            election=election,
            namespaces=namespaces,
            metrics_address=options.metrics_addr,
            probe_address=options.health_probe_bind_address,
            graceful_shutdown=options.graceful_shutdown,
            resync_period=options.sync_period,
            remote_weather=(TransportFailure,),
        ),
        election_client=election_client,
        clock=clock,
    )
    for kind in ACTIONS_KINDS:
        scope: Sequence[str] | None = None
        if kind == AUTOSCALING_LISTENER and namespaces != ALL_NAMESPACES:
            scope = (options.controller_namespace,)
        manager.informers.informer(kind, namespaces=scope)
    # the process's one GitHub access, for every controller; closed when the manager stops.
    # It reads the Secrets the AutoscalingListener controller watches from those watches.
    context = ProcessContext(options, client, clock or SystemClock(), environ=dict(environ or {}))
    secrets = secret_watches(manager, context)
    github = GitHubClients(client, context.github_options(), watched=secrets.holds)
    close_when_stopped(manager, github)
    context = replace(context, github=github, secrets=secrets)
    for spec in REGISTERED:
        spec.setup(manager, context)
    return manager


def client_settings(options: ControllerOptions) -> ClientSettings:
    """The controller manager's Kubernetes client settings (its QPS/burst flags, its name)."""
    return ClientSettings(
        qps=options.k8s_client_qps,
        burst=options.k8s_client_burst,
        field_manager="scaleset-controller",
        user_agent=USER_AGENT,
    )


def _describe_connection_error(error: KubeError, server: str) -> str:
    if isinstance(error, KubeTransportError):
        return f"cannot reach the Kubernetes API server at {server}: {error}"
    if isinstance(error, ApiStatusError) and error.code in (401, 403):
        return f"the Kubernetes API server at {server} refused our credentials ({error.code})"
    return f"the Kubernetes API server at {server} answered with an error: {error}"


async def serve(options: ControllerOptions, environ: Mapping[str, str] | None = None) -> int:
    """Run the controller manager until stopped; returns the process exit code. The
    controllers' settings come from ``environ`` (``None``: the process's environment)."""
    settings = client_settings(options)
    try:
        client = KubeClient.from_kubeconfig(
            options.kubeconfig, context=options.context, settings=settings
        )
        # the lease's own client: renewals never wait behind reconcile traffic (controller-runtime)
        election_client = KubeClient.from_kubeconfig(
            options.kubeconfig, context=options.context, settings=settings
        )
    except KubeConfigError as error:
        log.error("cannot start", error=str(error))
        return 1
    try:
        try:
            version = await run_with_deadline(SystemClock(), 15.0, client.server_version())
        except TimeoutError:
            log.error("cannot start", error=f"no answer from {client.base_url} within 15s")
            return 1
        except KubeError as error:
            log.error("cannot start", error=_describe_connection_error(error, client.base_url))
            return 1
        crd_problem = await installed_crd_problem(client)
        if crd_problem is not None:
            log.error("cannot start", error=crd_problem)
            return 1
        try:
            manager = build_manager(
                options, client, election_client, environ=os.environ if environ is None else environ
            )
        except ValueError as error:
            # A controller's setting from the environment (SCALESET_*) that cannot be used.
            log.error("cannot start", error=str(error))
            return 1
        controllers = registered_names()
        log.info(
            "controller manager starting",
            server=client.base_url,
            server_version=version,
            controllers=", ".join(controllers) if controllers else "none registered yet",
            namespaces="all" if options.namespaces() == ALL_NAMESPACES else options.namespaces(),
            identity=manager.settings.election.identity,
            lease=f"{manager.settings.election.namespace}/{options.leader_election_id}",
        )
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, manager.stop)
        try:
            await manager.run()
        except LeadershipLost as lost:
            log.error("exiting: leadership lost", reason=str(lost))
            return 1
        except OSError as error:
            log.error("cannot start", error=f"cannot serve probes/metrics: {error}")
            return 1
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
        log.info("controller manager stopped")
        return 0
    finally:
        await client.close()
        await election_client.close()


def report_invalid(error: OptionsError, log_format: str) -> int:
    """Log a configuration the controller cannot run with, in the format asked for (json when
    ``--log-format json``, even if another value was bad); the exit code (1)."""
    logs.configure("info", "json" if log_format == "json" else "text")
    log.error("invalid configuration", error=str(error))
    return 1


def warn_ignored(options: ControllerOptions) -> None:
    """One warning per flag or chart value taken for ARC compatibility and not acted on."""
    for setting, why in options.ignored:
        log.warning("setting ignored", setting=setting, reason=why)


def run(options: ControllerOptions) -> int:
    """Validate, set up logging, serve. Returns the exit code; never raises for bad input."""
    try:
        validate(options)
    except OptionsError as error:
        return report_invalid(error, options.log_format)
    logs.configure(options.log_level, "json" if options.log_format == "json" else "text")
    warn_ignored(options)
    return asyncio.run(serve(options))
