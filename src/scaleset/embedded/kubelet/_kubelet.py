"""``SimulatedKubelet``: one or more simulated nodes that schedule, run and report pods.

It watches, through ``scaleset.kube`` informers, the pods bound to each of its nodes
(``spec.nodeName=<node>``, narrowed by ``label_selector``) and — with ``schedule=True`` — the
unscheduled pods matching ``label_selector`` (``spec.nodeName=``), which it binds through
``pods/binding`` to its least busy node, as a scheduler would. Each pod on its nodes gets a
``PodWorker`` (``_worker``): statuses in the real shapes, container programs from the
``ContainerRuntime``, graceful deletion finished with a grace-0 delete.

Faults come from the test API below, from ``script()`` registrations (by pod name pattern, for
pods not created yet) and from ``scaleset.dev/sim-*`` annotations (``directives``).

With ``events=True`` it posts the kubelet's Events for what went wrong or was done to a pod:
``Failed`` (image pull, container config), ``FailedMount``, ``BackOff``, ``Killing``,
``Evicted`` (component ``kubelet``). API access it needs: pods get/list/watch/delete,
``pods/binding`` create, ``pods/status`` patch, secrets and configmaps get, events create/patch.

The kubelet's clock drives everything simulated (pull times, back-offs, grace periods, program
sleeps); API retries use ``infra_clock`` (real time by default). Give it a ``KubeClient`` whose
own clock is real (its rate limiter sleeps on it).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import ipaddress
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from scaleset.clock import Clock, SystemClock
from scaleset.embedded.kubelet import _api
from scaleset.embedded.kubelet._process import ContainerProcess
from scaleset.embedded.kubelet._worker import (
    KubeletSettings,
    PodTruth,
    PodWorker,
    RejectedWrite,
    WorkerContext,
)
from scaleset.embedded.kubelet.directives import DirectiveError, PodScript, parse_annotations
from scaleset.embedded.kubelet.programs import ContainerRuntime
from scaleset.embedded.kubelet.runner_program import default_runtime
from scaleset.kube import (
    Conflict,
    KubeClient,
    KubeError,
    KubeObject,
    NotFound,
    ObjectKey,
)
from scaleset.kube.objects import drop_managed_fields
from scaleset.kube.resources import POD
from scaleset.logs import get_logger
from scaleset.runtime import ALL_NAMESPACES, EventRecorder, Informer, InformerEvent

log = get_logger(__name__)

TERMINAL_PHASES = ("Succeeded", "Failed")


class UnknownPod(KeyError):
    """The kubelet runs no pod of that namespace/name."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown pod"


class _Node:
    """One simulated node: its name, host IP and pod address pool."""

    def __init__(self, name: str, index: int) -> None:
        self.name = name
        self.host_ip = str(ipaddress.IPv4Address("10.0.0.10") + index)
        network = ipaddress.IPv4Network(f"10.{64 + index}.0.0/16")
        self._free = (str(host) for host in network.hosts() if int(host) & 0xFF not in (0, 1))
        self._released: list[str] = []

    def allocate(self) -> str:
        if self._released:
            return self._released.pop(0)
        return next(self._free)

    def release(self, ip: str) -> None:
        self._released.append(ip)


class SimulatedKubelet:
    """Simulated nodes for tests and the demo; use ``async with`` (or run ``run()``)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        nodes: Sequence[str] = ("sim-node-1",),
        namespaces: Sequence[str] = ALL_NAMESPACES,
        label_selector: str | None = None,
        schedule: bool = True,
        runtime: ContainerRuntime | None = None,
        clock: Clock | None = None,
        infra_clock: Clock | None = None,
        settings: KubeletSettings | None = None,
        events: bool = True,
    ) -> None:
        if not nodes:
            raise ValueError("a simulated kubelet needs at least one node")
        if len(set(nodes)) != len(nodes):
            raise ValueError(f"duplicate node names in {list(nodes)}")
        self.client = client
        self.clock: Clock = clock or SystemClock()
        self.label_selector = label_selector
        self.nodes = {name: _Node(name, index) for index, name in enumerate(nodes)}
        recorder = (
            EventRecorder(client, component="kubelet", instance=nodes[0], clock=self.clock)
            if events
            else None
        )
        self._recorder = recorder
        self._ctx = WorkerContext(
            client=client,
            clock=self.clock,
            infra_clock=infra_clock or SystemClock(),
            runtime=runtime or default_runtime(),
            reader=_api.ApiSourceReader(client),
            settings=settings or KubeletSettings(),
            events=recorder,
            on_change=self._notify,
            orphan=self._adopt_orphan,
        )
        self._node_informers = [
            self._informer(namespaces, f"spec.nodeName={name}", self._node_handler(name))
            for name in nodes
        ]
        self._unscheduled = (
            self._informer(namespaces, "spec.nodeName=", self._on_unscheduled) if schedule else None
        )
        self._workers: dict[str, PodWorker] = {}
        self._by_key: dict[ObjectKey, PodWorker] = {}
        self._scripts: list[tuple[str | None, str, PodScript]] = []
        self._orphans: list[ContainerProcess] = []
        self._to_bind: asyncio.Queue[ObjectKey] = asyncio.Queue()
        self._binding: set[ObjectKey] = set()
        self._group: asyncio.TaskGroup | None = None
        self._task: asyncio.Task[None] | None = None
        self._changes = asyncio.Event()
        self.directive_errors: list[str] = []
        """Malformed ``scaleset.dev/sim-*`` annotations seen (``<ns>/<pod>: <error>``)."""

    def _informer(
        self,
        namespaces: Sequence[str],
        field_selector: str,
        handler: Callable[[InformerEvent], None],
    ) -> Informer:
        informer = Informer(
            self.client,
            POD,
            namespaces=namespaces,
            label_selector=self.label_selector,
            field_selector=field_selector,
            projection=drop_managed_fields,
        )
        informer.add_handler(handler)
        return informer

    # ------------------------------------------------------------------------ running

    @property
    def rejected_writes(self) -> list[RejectedWrite]:
        """Status writes the API server refused with 422 (must stay empty)."""
        return self._ctx.rejected

    async def run(self) -> None:
        """Watch, bind and run pods until cancelled; on cancel every process is killed."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for informer in self._node_informers:
                    group.create_task(informer.run())
                if self._unscheduled is not None:
                    group.create_task(self._unscheduled.run())
                    group.create_task(self._bind_loop())
                if self._recorder is not None:
                    group.create_task(self._recorder.run())
        finally:
            self._group = None
            for process in self._orphans:
                process.kill()
            for process in self._orphans:
                await process.wait()
            self._orphans.clear()

    async def wait_synced(self) -> None:
        """Until every informer has listed once."""
        for informer in self._informers():
            await informer.wait_synced()

    def _informers(self) -> list[Informer]:
        extra = [self._unscheduled] if self._unscheduled is not None else []
        return [*self._node_informers, *extra]

    async def __aenter__(self) -> SimulatedKubelet:
        self._task = asyncio.ensure_future(self.run())
        synced = asyncio.ensure_future(self.wait_synced())
        await asyncio.wait({self._task, synced}, return_when=asyncio.FIRST_COMPLETED)
        if self._task.done():
            synced.cancel()
            self._task.result()  # raise what stopped it
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # --------------------------------------------------------------------- scheduling

    def _on_unscheduled(self, event: InformerEvent) -> None:
        pod = event.obj
        if event.type == "DELETED" or pod.is_deleting or pod.spec.get("nodeName"):
            return
        if pod.key not in self._binding:
            self._binding.add(pod.key)
            self._to_bind.put_nowait(pod.key)

    def _pick_node(self) -> str:
        load = dict.fromkeys(self.nodes, 0)
        for worker in self._workers.values():
            load[worker.node] = load.get(worker.node, 0) + 1
        return min(self.nodes, key=lambda name: load[name])

    async def _bind_loop(self) -> None:
        while True:
            key = await self._to_bind.get()
            self._binding.discard(key)
            node = self._pick_node()
            try:
                await _api.bind(self.client, key, node)
            except (Conflict, NotFound):
                continue  # already bound, being deleted, or gone
            except KubeError as error:
                log.warning("binding failed", pod=str(key), node=node, error=str(error))
                continue

    # ------------------------------------------------------------------------- pods

    def _node_handler(self, node: str) -> Callable[[InformerEvent], None]:
        def handle(event: InformerEvent) -> None:
            self._on_node_pod(node, event)

        return handle

    def _on_node_pod(self, node: str, event: InformerEvent) -> None:
        pod = event.obj
        worker = self._workers.get(pod.uid)
        if event.type == "DELETED":
            if worker is not None:
                worker.lost()
            return
        if worker is not None:
            worker.observe(pod)
            return
        if self._group is None:
            return
        if str(pod.status.get("phase", "")) in TERMINAL_PHASES:
            if pod.is_deleting:
                self._spawn(self._delete_quietly(pod))
            return
        if pod.is_deleting:  # deleted before it ever ran here: just confirm
            self._spawn(self._delete_quietly(pod))
            return
        self._start_worker(node, pod)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> bool:
        """Run ``work`` in the kubelet's task group; while the group is shutting down (an event
        can still arrive then) the work is dropped and closed, never left un-awaited."""
        if self._group is not None:
            try:
                self._group.create_task(work)
            except RuntimeError:
                pass
            else:
                return True
        work.close()
        return False

    async def _delete_quietly(self, pod: KubeObject) -> None:
        with contextlib.suppress(KubeError):
            await _api.delete_pod(self.client, pod.key, pod.uid)

    def _script_for(self, pod: KubeObject) -> PodScript:
        script = PodScript()
        try:
            script = parse_annotations(pod.annotations)
        except DirectiveError as error:
            self.directive_errors.append(f"{pod.key}: {error}")
            log.warning(
                "ignoring malformed simulation annotations", pod=str(pod.key), error=str(error)
            )
        for namespace, pattern, registered in self._scripts:
            if namespace not in (None, pod.namespace):
                continue
            if fnmatch.fnmatchcase(pod.name, pattern):
                script = script.merged(registered)
        return script

    def _start_worker(self, node_name: str, pod: KubeObject) -> None:
        assert self._group is not None
        node = self.nodes[node_name]
        worker = PodWorker(
            self._ctx,
            pod,
            node=node_name,
            host_ip=node.host_ip,
            pod_ip=node.allocate(),
            script=self._script_for(pod),
        )
        if not self._spawn(self._supervise(worker, node)):
            node.release(worker.pod_ip)  # shutting down: this pod is not started here any more
            return
        self._workers[pod.uid] = worker
        self._by_key[pod.key] = worker
        self._notify()

    async def _supervise(self, worker: PodWorker, node: _Node) -> None:
        try:
            await worker.run()
        except Exception:
            log.exception("pod worker failed", pod=str(worker.key))
        finally:
            self._workers.pop(worker.uid, None)
            if self._by_key.get(worker.key) is worker:
                del self._by_key[worker.key]
            node.release(worker.pod_ip)
            self._notify()

    def _adopt_orphan(self, process: ContainerProcess) -> None:
        self._orphans.append(process)

    def _notify(self) -> None:
        self._changes.set()

    # ----------------------------------------------------------------------- test API

    def _worker(self, namespace: str, name: str) -> PodWorker:
        worker = self._by_key.get(ObjectKey(namespace, name))
        if worker is None or worker.gone:
            raise UnknownPod(f"pod {namespace}/{name} is not running on this kubelet")
        return worker

    def script(self, name_pattern: str, script: PodScript, *, namespace: str | None = None) -> None:
        """Apply ``script`` to pods whose name matches ``name_pattern`` (fnmatch) when they
        first arrive on this kubelet (merged over the pod's own annotations)."""
        self._scripts.append((namespace, name_pattern, script))

    async def evict(
        self, namespace: str, name: str, *, resource: str = "memory", message: str | None = None
    ) -> None:
        """Evict the pod (hard eviction: processes killed at once; phase Failed, reason
        Evicted, a DisruptionTarget condition); returns once the status is written."""
        await self._worker(namespace, name).evict(resource, message)

    async def oom_kill(self, namespace: str, name: str, container: str | None = None) -> None:
        """OOM-kill a running container (default: the first main container); returns once
        its termination (exit 137, OOMKilled) is written."""
        worker = self._worker(namespace, name)
        target = container or worker.main_names[0]
        worker.oom_kill(target)
        await self._settled(worker, target)

    async def exit(self, namespace: str, name: str, container: str, code: int) -> None:
        """Make a running container's process exit with ``code``; returns once written."""
        worker = self._worker(namespace, name)
        worker.exit(container, code)
        await self._settled(worker, container)

    async def _settled(self, worker: PodWorker, container: str) -> None:
        await self.wait_for(
            lambda: worker.gone or container not in worker.processes,
            what=f"{worker.key}/{container} to stop",
        )
        await worker.flush()

    async def vanish(self, namespace: str, name: str, *, keep_processes: bool = False) -> None:
        """Node loss for one pod: its processes die (or, with ``keep_processes``, run on
        unreachable), the pod object is force-deleted; no status is written."""
        await self._worker(namespace, name).vanish(keep_processes=keep_processes)

    def hang(self, namespace: str, name: str, container: str | None = None) -> None:
        """The container (default: all) never exits by itself and ignores SIGTERM."""
        worker = self._worker(namespace, name)
        names = frozenset([container]) if container else frozenset(["*"])
        worker.script = worker.script.merged(PodScript(hangs=names))

    def freeze(self, namespace: str, name: str) -> None:
        """The node stops reporting this pod: no status writes; a deletion stays pending."""
        self._worker(namespace, name).freeze()

    def fail_image_pull(self, namespace: str, name: str, container: str | None = None) -> None:
        """From now on pulls of the container's (default: every) image fail."""
        worker = self._worker(namespace, name)
        names = frozenset([container]) if container else frozenset(["*"])
        worker.script = worker.script.merged(PodScript(image_pull_errors=names))

    async def flush(self, namespace: str, name: str) -> None:
        """Wait until everything the kubelet knows about the pod has been written."""
        await self._worker(namespace, name).flush()

    # -------------------------------------------------------------------- ground truth

    def truth(self, namespace: str, name: str) -> PodTruth | None:
        """What the node knows about the pod, ``None`` if it does not run it."""
        worker = self._by_key.get(ObjectKey(namespace, name))
        return worker.truth() if worker is not None else None

    def pods(self) -> list[PodTruth]:
        """Every pod the kubelet currently runs."""
        return [worker.truth() for worker in list(self._workers.values())]

    @property
    def orphaned_processes(self) -> int:
        """Processes of vanished pods that still run (``vanish(keep_processes=True)``)."""
        return sum(1 for process in self._orphans if not process.done)

    async def wait_for(
        self, condition: Callable[[], bool], *, within: float = 10.0, what: str = "condition"
    ) -> None:
        """Wait (at most ``within`` real seconds) until ``condition()`` holds; it is checked
        after every change the kubelet makes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not condition():
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"{what}: not reached within {within:g}s")
            self._changes.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changes.wait(), remaining)

    def describe(self) -> dict[str, Any]:
        """A compact summary for logs and demo output."""
        return {
            "nodes": list(self.nodes),
            "pods": len(self._workers),
            "orphaned_processes": self.orphaned_processes,
            "rejected_writes": len(self.rejected_writes),
        }
