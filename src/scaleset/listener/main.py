"""The ``scaleset listener`` process: config in, clients built, loop run, exit code out.

Reads ARC's listener config from ``LISTENER_CONFIG_PATH`` (the controller mounts it at
``/etc/gha-listener/config.json``), configures logging from it, serves metrics when
``metrics_addr`` is set, connects to the API server (in-cluster service account, else
``$KUBECONFIG``), and runs the loop until SIGTERM/SIGINT. The session owner is the pod's host
name (a random UUID if there is none), as ARC's.

Exit codes (also in ``scaleset listener --help``)::

    0   stopped by SIGTERM/SIGINT; the message session was handed over to the next listener
        (deleted when the EphemeralRunnerSet is gone: the scale set is going away)
    1   LISTENER_CONFIG_PATH unset, or the config unreadable or invalid (the error names the key)
    3   GitHub refuses: the scale set does not exist, or the credentials are rejected
    4   the EphemeralRunnerSet does not exist (any more)
    5   Kubernetes refuses: no usable kubeconfig/service account, or reading/writing the
        EphemeralRunnerSet is forbidden or invalid
    70  internal error (a bug; the traceback is logged)

Everything else (network errors, 5xx, 429, session conflicts, an expired session, a poison
message) is retried inside the process with back-off; a metrics address that cannot be bound
is logged and the listener runs without metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import uuid
from collections.abc import Mapping

from scaleset import __version__, logs
from scaleset.clock import Clock, SystemClock, run_with_deadline
from scaleset.github import ActionsClient, SystemInfo
from scaleset.kube import KubeClient, KubeConfigError
from scaleset.kube.client import ClientSettings
from scaleset.listener.config import (
    CONFIG_PATH_ENV,
    ListenerConfig,
    ListenerConfigError,
    load_config,
)
from scaleset.listener.exits import (
    EXIT_CONFIG,
    EXIT_INTERNAL,
    EXIT_KUBE_REFUSED,
    EXIT_OK,
    ListenerExit,
)
from scaleset.listener.loop import Listener, LoopSettings
from scaleset.listener.metrics import ListenerMetrics, ScaleSetIdentity
from scaleset.runtime.events import EventRecorder
from scaleset.runtime.probes import ProbeServer, parse_bind_address

log = logs.get_logger(__name__)

SUBSYSTEM = "ghalistener"
KUBE_SETTINGS = ClientSettings(
    qps=100.0,
    burst=200,
    field_manager="scaleset-listener",
    user_agent=f"scaleset-listener/{__version__}",
)
"""A message of 50 JobStarted is 100 requests (a read and a write each; ARC's listener writes
blind): the burst lets two such messages through unthrottled."""


def owner_name() -> str:
    """The session owner: the host (pod) name, or a random UUID when there is none."""
    try:
        name = socket.gethostname()
    except OSError:
        name = ""
    return name or str(uuid.uuid4())


def identity_of(config: ListenerConfig) -> ScaleSetIdentity:
    github = config.github
    return ScaleSetIdentity(
        name=config.ephemeral_runner_set_name,
        namespace=config.ephemeral_runner_set_namespace,
        enterprise=github.enterprise,
        organization=github.organization,
        repository=github.repository,
    )


async def serve(
    config: ListenerConfig,
    *,
    owner: str,
    clock: Clock | None = None,
    kubeconfig: str | None = None,
    settings: LoopSettings | None = None,
    stop: asyncio.Event | None = None,
    handle_signals: bool = True,
) -> int:
    """Run the listener until stopped; returns the exit code.

    ``handle_signals=False`` leaves SIGTERM/SIGINT alone (a listener run inside another
    process, such as the demo's simulated node, is stopped through ``stop`` instead).
    """
    clock = clock or SystemClock()
    stop = stop or asyncio.Event()
    metrics = ListenerMetrics(identity_of(config), config.metrics)
    try:
        kube = KubeClient.from_kubeconfig(
            kubeconfig, settings=KUBE_SETTINGS, metrics=metrics.runtime, clock=clock
        )
    except KubeConfigError as error:
        log.error("cannot start", error=str(error))
        return EXIT_KUBE_REFUSED
    actions = ActionsClient(
        config.configure_url,
        config.credentials(),
        system_info=SystemInfo(scale_set_id=config.runner_scale_set_id, subsystem=SUBSYSTEM),
        root_ca_pem=config.server_root_ca or None,
        clock=clock,
        metrics=metrics.github,
    )
    events = EventRecorder(kube, component="scaleset-listener", instance=owner, clock=clock)
    listener = Listener(
        config,
        actions,
        kube,
        owner=owner,
        clock=clock,
        metrics=metrics,
        events=events,
        settings=settings,
    )
    server: ProbeServer | None = None
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT) if handle_signals else ()
    events_task = asyncio.create_task(events.run())
    try:
        server = await _start_metrics(metrics, config)
        for signum in signals:
            loop.add_signal_handler(signum, stop.set)
        log.info(
            "listener starting",
            scale_set_id=config.runner_scale_set_id,
            runner_set=f"{config.ephemeral_runner_set_namespace}/{config.ephemeral_runner_set_name}",
            owner=owner,
            min_runners=config.min_runners,
            max_runners=config.max_runners,
        )
        await listener.run(stop)
        return EXIT_OK
    except ListenerExit as exit_:
        log.error("listener exiting", reason=exit_.reason, exit_code=exit_.code)
        return exit_.code
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)
        with contextlib.suppress(TimeoutError):
            await run_with_deadline(clock, 2.0, events.flush())
        events_task.cancel()
        await asyncio.gather(events_task, return_exceptions=True)
        if server is not None:
            await server.stop()
        await actions.aclose()
        await kube.close()


async def _start_metrics(metrics: ListenerMetrics, config: ListenerConfig) -> ProbeServer | None:
    """Serve metrics at ``metrics_endpoint`` when ``metrics_addr`` is set. A port that cannot be
    bound is logged and the listener runs on without metrics: recording jobs and scaling matter
    more than the endpoint (ARC exits instead)."""
    address = parse_bind_address(config.metrics_addr)
    if address is None:
        return None
    server = ProbeServer(
        *address, registry=metrics.registry, metrics_path=config.metrics_endpoint or "/metrics"
    )
    try:
        await server.start()
    except OSError as error:
        log.error(
            "metrics not served: cannot listen", address=config.metrics_addr, error=str(error)
        )
        await server.stop()
        return None
    log.info("serving metrics", address=config.metrics_addr, endpoint=server.metrics_path)
    return server


def run(environ: Mapping[str, str] | None = None) -> int:
    """The process: returns the exit code, never raises."""
    env = os.environ if environ is None else environ
    path = env.get(CONFIG_PATH_ENV, "")
    if not path:
        logs.configure("info", "text")
        log.error("cannot start", error=f"{CONFIG_PATH_ENV} is not set")
        return EXIT_CONFIG
    try:
        config = load_config(path)
    except ListenerConfigError as error:
        logs.configure("info", "text")
        log.error("invalid listener config", path=path, error=str(error))
        return EXIT_CONFIG
    logs.configure(config.effective_log_level, "json" if config.log_format == "json" else "text")
    try:
        return asyncio.run(serve(config, owner=owner_name()))
    except Exception:
        log.exception("internal error")
        return EXIT_INTERNAL
