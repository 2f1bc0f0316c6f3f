"""The pieces of a demo run wired together as a cluster would have them.

``DemoSystem`` starts the embedded API server (or uses ``--kubeconfig``), the fake GitHub
service, installs the CRDs, creates the namespaces, the GitHub config Secret and the
AutoscalingRunnerSet (``ARS_MANIFEST``: the YAML a user applies to a cluster), starts the
simulated kubelet and the controller manager. The listener is not started by the demo: the
AutoscalingListener controller creates its pod and the simulated kubelet runs it **from its pod
spec** — ``LISTENER_CONFIG_PATH`` from the pod's env, the file from the mounted config Secret —
so a wrong key or path breaks the demo as it would break a cluster — except its metrics
address, which becomes a free loopback port (the pods of the demo share one machine's ports).
The embedded API server speaks HTTPS and accepts only a token made for the run, so the printed
kubeconfig works with kubectl and nobody else's token gets in.

The controller manager runs in this process by default (a fast start for the short demos and
the tests that build on them), or, with ``separate_controller`` (the soak), in a process of its
own (``controller_process``), so that killing it is a real ``SIGKILL``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import random
import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from scaleset.api import crds as crd_generator
from scaleset.clock import Clock
from scaleset.controllers import manager_process
from scaleset.demo.controller_process import ControllerProcess
from scaleset.demo.truth import Truth
from scaleset.embedded.actions import FakeGitHub, FakeSettings
from scaleset.embedded.apiserver import serve_in_thread
from scaleset.embedded.apiserver._faults import Faults as ApiFaults
from scaleset.embedded.kubelet import ContainerRuntime, SimulatedKubelet
from scaleset.embedded.kubelet.programs import ContainerRun, Program
from scaleset.embedded.kubelet.runner_program import RUNNER_IMAGES, runner_program
from scaleset.embedded.runner import RunnerFaults, RunnerPhase
from scaleset.kube import AlreadyExists, KubeClient, NotFound, ObjectKey
from scaleset.kube.client import ClientSettings
from scaleset.kube.resources import (
    AUTOSCALING_RUNNER_SET,
    CONFIG_MAP,
    CUSTOM_RESOURCE_DEFINITION,
    NAMESPACE,
    SECRET,
    SERVICE_ACCOUNT,
)
from scaleset.listener import main as listener_main
from scaleset.listener.config import CONFIG_PATH_ENV, ListenerConfigError, parse_config
from scaleset.listener.exits import EXIT_CONFIG
from scaleset.logs import get_logger
from scaleset.runtime.manager import Manager

log = get_logger(__name__)

CONTROLLER_NAMESPACE = "arc-systems"
RUNNER_NAMESPACE = "arc-runners"
SCALE_SET_NAME = "arc-runner-set"
SECRET_NAME = "github-config"  # noqa: S105 - the Secret's name, not its content
ORGANIZATION = "acme"
LISTENER_IMAGE = "ghcr.io/scaleset/scaleset:demo"
NODES = ("sim-node-1", "sim-node-2", "sim-node-3")
LISTENER_METRICS_ADDRESS = "127.0.0.1:0"
"""Where the demo's listeners serve metrics: a free loopback port each."""
RUNNER_LOST_SECONDS = 15.0
"""The fake GitHub fails a job whose runner went silent this long (GitHub takes minutes; the
demo compresses time so a job caught by an eviction ends within the run)."""

ARS_MANIFEST = """\
apiVersion: actions.github.com/v1alpha1
kind: AutoscalingRunnerSet
metadata:
  name: {name}
  namespace: {namespace}
spec:
  githubConfigUrl: {config_url}
  githubConfigSecret: {secret}
  minRunners: {min_runners}
  maxRunners: {max_runners}
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: runner
          image: ghcr.io/actions/actions-runner:latest
          command: ["/home/runner/run.sh"]
"""
"""The AutoscalingRunnerSet a user applies (the shape of ARC's quickstart)."""


@dataclass
class Chaos:
    """Runner faults the fault injector arms for the next runner processes."""

    hangs_pending: int = 0
    faulted: set[str] = field(default_factory=set)
    hang_rate: float = 0.0
    """Share of runner processes that hang after their job (``--chaos soak``)."""
    rng: random.Random = field(default_factory=lambda: random.Random(0))  # noqa: S311
    """Draws the hangs (seeded per run: the same sequence of decisions for the same seed)."""


class DemoSystem:
    """Everything a demo run needs, started by ``start()``, stopped by ``stop()``."""

    def __init__(
        self,
        *,
        clock: Clock,
        truth: Truth,
        min_runners: int,
        max_runners: int,
        grace: float,
        kubeconfig: Path | None,
        started_at: float,
        controller_namespace: str = CONTROLLER_NAMESPACE,
        runner_namespace: str = RUNNER_NAMESPACE,
        watch_namespaces: tuple[str, ...] | None = None,
        controller_kubeconfig: Path | None = None,
        session_idle_seconds: float = FakeSettings.session_idle_timeout_seconds,
        separate_controller: bool = False,
        registration_pass_interval: float | None = None,
        warm_windows: tuple[dict[str, Any], ...] = (),
    ) -> None:
        """``watch_namespaces``: where the controller looks (``()``: every namespace, as the
        chart installs it by default); by default only the runner namespace (its
        single-namespace mode), so on a shared API server it acts on nobody else's scale sets.
        ``controller_kubeconfig``: the controller manager's credentials, when not the demo's
        (a ServiceAccount's token, to run it with a chart's RBAC only).
        ``separate_controller``: run the controller manager in a process of its own.
        ``registration_pass_interval``: seconds between registration passes (``None``: the
        controller's default, 5 minutes).
        ``warm_windows``: the scale set's ``spec.warmWindows`` (scheduled warm capacity)."""
        self.warm_windows = warm_windows
        self.registration_pass_interval = registration_pass_interval
        self.separate_controller = separate_controller
        self.controller_process: ControllerProcess | None = None
        self.controller_kubeconfig = controller_kubeconfig
        self.session_idle_seconds = session_idle_seconds
        self.controller_namespace = controller_namespace
        self.runner_namespace = runner_namespace
        self.watch_namespaces = (
            (runner_namespace,) if watch_namespaces is None else watch_namespaces
        )
        self.clock = clock
        self.truth = truth
        self.min_runners = min_runners
        self.max_runners = max_runners
        self.grace = grace
        self.external_kubeconfig = kubeconfig
        self.started_at = started_at
        self.chaos = Chaos()
        self.pat = f"ghp_demo{secrets.token_hex(16)}"
        self.kubeconfig: Path = Path()
        self.api_faults: ApiFaults | None = None
        self.client: KubeClient | None = None
        self.fake: FakeGitHub | None = None
        self.kubelet: SimulatedKubelet | None = None
        self.manager: Manager | None = None
        self._manager_client: KubeClient | None = None
        self._manager_task: asyncio.Task[None] | None = None
        self._stack = contextlib.AsyncExitStack()
        self._starts: dict[str, int] = {}
        self.controller_lock = asyncio.Lock()
        """Held by whoever stops, kills or starts the controller manager (faults overlap)."""

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        stack = self._stack
        if self.external_kubeconfig is None:
            # HTTPS with a token made for this run: kubectl sends a token only over TLS, and
            # on a shared machine nobody else's (or a well-known) token gets in
            running = stack.enter_context(
                serve_in_thread(
                    host="127.0.0.1", port=0, tls=True, tokens=[secrets.token_urlsafe(32)]
                )
            )
            self.kubeconfig = running.kubeconfig_path
            self.api_faults = running.server.faults
        else:
            self.kubeconfig = self.external_kubeconfig
        self.fake = await stack.enter_async_context(
            FakeGitHub(
                host="127.0.0.1",
                port=0,
                clock=self.clock,
                poll_hold_seconds=2.0,
                message_queue_host="localhost",
                settings=FakeSettings(
                    runner_session_timeout_seconds=RUNNER_LOST_SECONDS,
                    session_idle_timeout_seconds=self.session_idle_seconds,
                ),
            )
        )
        self.fake.add_pat(self.pat)
        self.client = KubeClient.from_kubeconfig(
            self.kubeconfig,
            settings=ClientSettings(qps=200.0, burst=400, field_manager="scaleset-demo"),
            clock=self.clock,
        )
        stack.push_async_callback(self.client.close)
        await self._install_crds()
        for namespace in (self.controller_namespace, self.runner_namespace):
            await self._ensure(NAMESPACE, {"metadata": {"name": namespace}})
            await self._ensure(
                SERVICE_ACCOUNT, {"metadata": {"name": "default", "namespace": namespace}}
            )
            # the root CA the controller-manager publishes (pods mount it through the token
            # volume ServiceAccount admission adds); the real test server has no controller-manager
            await self._ensure(
                CONFIG_MAP,
                {
                    "metadata": {"name": "kube-root-ca.crt", "namespace": namespace},
                    "data": {"ca.crt": _cluster_ca_pem(self.kubeconfig)},
                },
            )
        await self._apply_secret()
        self.kubelet = SimulatedKubelet(
            self.client,
            nodes=NODES,
            namespaces=(self.controller_namespace, self.runner_namespace),
            runtime=self._runtime(),
            clock=self.clock,
            events=True,
        )
        await stack.enter_async_context(self.kubelet)
        await self.start_controller()
        stack.push_async_callback(self.stop_controller)
        await self._apply_runner_set()

    async def stop(self) -> None:
        await self._stack.aclose()

    async def start_controller(self) -> None:
        """Start the controller manager (as ``scaleset controller`` would: its own client, with
        the controller's settings and User-Agent), in this process or in one of its own."""
        environ = self.controller_environ()
        options = self._controller_options()
        manager_process.validate(options)
        if self.separate_controller:
            # its own credentials; it logs what the demo shows (warnings), not every decision
            own = replace(
                options, kubeconfig=self.controller_kubeconfig or self.kubeconfig, log_level="warn"
            )
            self.controller_process = ControllerProcess(own, environ=environ)
            await self.controller_process.start()
            return
        self._manager_client = KubeClient.from_kubeconfig(
            self.controller_kubeconfig or self.kubeconfig,
            settings=manager_process.client_settings(options),
            clock=self.clock,
        )
        self.manager = manager_process.build_manager(
            options, self._manager_client, environ=environ, clock=self.clock
        )
        self._manager_task = asyncio.create_task(self.manager.run(), name="controller-manager")

    def controller_environ(self) -> dict[str, str]:
        """The controller manager's environment: this process's, with this demo's grace period
        and registration pass interval over any the shell sets (the judge bounds zombies with
        the demo's own), never written to ``os.environ``: a second demo in the process keeps
        its own."""
        own = {"SCALESET_JOB_COMPLETION_GRACE": str(self.grace)}
        if self.registration_pass_interval is not None:
            own["SCALESET_REGISTRATION_PASS_INTERVAL"] = str(self.registration_pass_interval)
        return {**os.environ, **own}

    def _controller_options(self) -> manager_process.ControllerOptions:
        return manager_process.ControllerOptions(
            controller_namespace=self.controller_namespace,
            listener_image=LISTENER_IMAGE,
            kubeconfig=self.kubeconfig,
            log_level="info",
            health_probe_bind_address="0",
            metrics_addr="0",
            lease_duration=15.0,
            renew_deadline=10.0,
            retry_period=2.0,
            identity=f"demo-{secrets.token_hex(3)}",
            watch_namespaces=self.watch_namespaces,
            k8s_client_qps=200.0,
            k8s_client_burst=400,
            allow_http_github_url=True,  # the fake GitHub serves http
        )

    async def controller_leads(self) -> bool:
        """Whether the current controller manager holds the lease."""
        if self.controller_process is not None:
            assert self.client is not None
            return await self.controller_process.leading(self.client)
        return self.manager is not None and self.manager.leading.is_set()

    async def stop_controller(self) -> None:
        """Stop the controller manager gracefully (in-flight work drained, lease released)."""
        if self.controller_process is not None:
            await self.controller_process.stop()
            self.controller_process = None
            return
        if self.manager is None or self._manager_task is None:
            return
        self.manager.stop()
        with contextlib.suppress(Exception):
            await self._manager_task
        self.manager = None
        self._manager_task = None
        await self._close_manager_client()

    async def _close_manager_client(self) -> None:
        if self._manager_client is not None:
            await self._manager_client.close()
            self._manager_client = None

    async def kill_controller(self) -> None:
        """End the controller manager as ``kill -9`` does: no drain, the lease left held (a
        successor waits for it to expire). A separate process gets ``SIGKILL``; one in this
        process is cancelled mid-work (its ``finally`` blocks still run)."""
        if self.controller_process is not None:
            await self.controller_process.kill()
            self.controller_process = None
            return
        if self._manager_task is None:
            return
        self._manager_task.cancel()
        with contextlib.suppress(BaseException):
            await self._manager_task
        self.manager = None
        self._manager_task = None
        await self._close_manager_client()

    def controller_failed(self) -> BaseException | None:
        """The manager's exception, if it stopped on its own."""
        if self.controller_process is not None:
            code = self.controller_process.exited_on_its_own()
            if code is None:
                return None
            return RuntimeError(f"the controller manager process exited with code {code}")
        task = self._manager_task
        if task is None or not task.done() or task.cancelled():
            return None
        return task.exception()

    # ------------------------------------------------------------------ set-up steps
    async def _install_crds(self) -> None:
        assert self.client is not None
        for document in crd_generator.all_crds():
            try:
                await self.client.create(CUSTOM_RESOURCE_DEFINITION, document)
            except AlreadyExists:
                current = await self.client.get(
                    CUSTOM_RESOURCE_DEFINITION, ObjectKey("", document["metadata"]["name"])
                )
                body = dict(document)
                body["metadata"] = {
                    **document["metadata"],
                    "resourceVersion": current.resource_version,
                }
                await self.client.replace(CUSTOM_RESOURCE_DEFINITION, body)
        await self._wait_established()

    async def _wait_established(self) -> None:
        assert self.client is not None
        for _ in range(100):
            listed = await self.client.list(CUSTOM_RESOURCE_DEFINITION)
            ours = [c for c in listed.items if c.name.endswith(".actions.github.com")]
            if len(ours) >= 4 and all(_established(c.raw) for c in ours):
                return
            await asyncio.sleep(0.1)  # the API server's own progress, not the demo's clock
        raise RuntimeError("the CRDs did not become Established within 10s")

    async def _ensure(self, kind: Any, body: dict[str, Any]) -> None:
        assert self.client is not None
        with contextlib.suppress(AlreadyExists):
            await self.client.create(kind, body)

    async def _apply_secret(self) -> None:
        assert self.client is not None
        body = {
            "metadata": {"name": SECRET_NAME, "namespace": self.runner_namespace},
            "type": "Opaque",
            "stringData": {"github_token": self.pat},
        }
        with contextlib.suppress(NotFound):
            await self.client.delete(SECRET, ObjectKey(self.runner_namespace, SECRET_NAME))
        await self.client.create(SECRET, body)

    def manifest(self) -> str:
        assert self.fake is not None
        text = ARS_MANIFEST.format(
            name=SCALE_SET_NAME,
            namespace=self.runner_namespace,
            config_url=self.fake.config_url(ORGANIZATION),
            secret=SECRET_NAME,
            min_runners=self.min_runners,
            max_runners=self.max_runners,
        )
        if not self.warm_windows:
            return text
        document = yaml.safe_load(text)
        document["spec"]["warmWindows"] = [dict(window) for window in self.warm_windows]
        return yaml.safe_dump(document, sort_keys=False)

    async def _apply_runner_set(self) -> None:
        assert self.client is not None
        document = yaml.safe_load(self.manifest())
        try:
            await self.client.create(AUTOSCALING_RUNNER_SET, document)
        except AlreadyExists:
            raise RuntimeError(
                f"an AutoscalingRunnerSet {self.runner_namespace}/{SCALE_SET_NAME} already exists "
                "on this API server; delete it (or use a fresh server) and run the demo again"
            ) from None

    # ------------------------------------------------------------------ the node's programs
    def _runtime(self) -> ContainerRuntime:
        runtime = ContainerRuntime(default=None)
        for pattern in RUNNER_IMAGES:
            runtime = runtime.with_program(pattern, self._runner_program())
        return runtime.with_program("ghcr.io/scaleset/scaleset*", self._listener_program())

    def _runner_program(self) -> Program:
        normal = runner_program(on_phase=self._on_runner_phase)
        hanging = runner_program(
            faults=RunnerFaults(hang_after_completion=True), on_phase=self._on_runner_phase
        )

        async def program(run: ContainerRun) -> int:
            start = self._starts.get(run.pod_uid, 0)
            self._starts[run.pod_uid] = start + 1
            config = run.env.get("ACTIONS_RUNNER_INPUT_JITCONFIG", "")
            if config:
                digest = hashlib.sha256(config.encode()).hexdigest()[:16]
                self.truth.jit_started(digest, run.pod.name, start, self.elapsed())
            chosen = normal
            if self.chaos.hangs_pending > 0:
                self.chaos.hangs_pending -= 1
                self.chaos.faulted.add(run.pod.name)
                chosen = hanging
            elif self.chaos.hang_rate > 0 and self.chaos.rng.random() < self.chaos.hang_rate:
                self.chaos.faulted.add(run.pod.name)
                chosen = hanging
            signalled = asyncio.create_task(self._note_stop_signal(run, start))
            try:
                return await chosen(run)
            finally:
                # the process is gone (exited, or killed by the node): ground truth for the
                # zombie hops, to the event (the sampled check sees it only on its next round)
                signalled.cancel()
                self.truth.process_ended(run.pod.name, start, self.elapsed())

        return program

    async def _note_stop_signal(self, run: ContainerRun, start: int) -> None:
        await run.stop.wait()
        self.truth.process_signalled(run.pod.name, start, self.elapsed())

    def _on_runner_phase(self, run: ContainerRun, phase: RunnerPhase) -> None:
        start = max(0, self._starts.get(run.pod_uid, 1) - 1)
        self.truth.runner_phase(run.pod.name, start, phase, self.elapsed())

    def _listener_program(self) -> Program:
        kubeconfig = str(self.kubeconfig)

        async def program(run: ContainerRun) -> int:
            path = run.env.get(CONFIG_PATH_ENV, "")
            data = run.files.get(path) if path else None
            if data is None:
                log.error(
                    "listener container cannot read its config",
                    pod=str(run.pod),
                    env=CONFIG_PATH_ENV,
                    path=path or "(unset)",
                )
                return EXIT_CONFIG
            try:
                config = parse_config(data)
            except ListenerConfigError as error:
                log.error("listener config invalid", pod=str(run.pod), error=str(error))
                return EXIT_CONFIG
            if config.metrics_addr:
                # every listener of the demo shares this machine's ports (a cluster gives each
                # pod its own): a free loopback port, never the configured :8080
                config = config.model_copy(update={"metrics_addr": LISTENER_METRICS_ADDRESS})
            return await listener_main.serve(
                config,
                owner=run.pod.name,
                clock=run.clock,
                kubeconfig=kubeconfig,
                stop=run.stop,
                handle_signals=False,
            )

        return program

    def elapsed(self) -> float:
        return self.clock.monotonic() - self.started_at


def _established(crd: dict[str, Any]) -> bool:
    conditions = crd.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _cluster_ca_pem(kubeconfig: Path) -> str:
    """The CA certificate the kubeconfig's first cluster trusts ("" when it names none)."""
    document = yaml.safe_load(kubeconfig.read_text()) or {}
    for entry in document.get("clusters") or []:
        data = (entry.get("cluster") or {}).get("certificate-authority-data")
        if data:
            return base64.b64decode(data).decode()
    return ""
