"""One pod on the simulated node: its lifecycle, its processes, its status writes.

The worker owns the pod from its first sync until the pod object is gone:

1. **Start** (``_live``): write the first status (Pending, containers waiting), set up the
   Secret/ConfigMap volumes (retrying, ``FailedMount``, while they fail), run the init containers
   in order (a native sidecar only has to start), then every main container. Each container
   goes pull -> configure (env resolved from the API) -> run -> exit, and is restarted as the
   kubelet would (``restartPolicy``; first restart at once, then CrashLoopBackOff 10 s doubling
   to 300 s). When every main container has stopped for good, the sidecars are stopped.
2. **Faults** (called by ``SimulatedKubelet``): OOM kill, eviction, node loss, hang, freeze.
3. **Graceful deletion** (``deletionTimestamp`` observed): SIGTERM to main containers, then
   sidecars, then init containers; SIGKILL whatever still runs when the grace period (on the
   kubelet's clock) is over; write the terminated statuses; delete with grace 0 and a uid
   precondition.

Status writes are coalesced by a writer task: every change bumps a version, the writer computes
the whole status (``status.pod_status``) and merge-patches it when it differs from the last one
written; ``flush()`` waits until everything changed so far is on the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from scaleset.backoff import Backoff
from scaleset.clock import Clock
from scaleset.embedded.kubelet import _api
from scaleset.embedded.kubelet._process import SIGKILL_EXIT, ContainerProcess, Exit
from scaleset.embedded.kubelet.config import (
    ContainerConfigError,
    SourceReader,
    VolumeFiles,
    VolumeMountError,
    container_files,
    resolve_environment,
    resolve_volumes,
)
from scaleset.embedded.kubelet.directives import PodScript
from scaleset.embedded.kubelet.programs import ContainerRun, ContainerRuntime, exit_after
from scaleset.embedded.kubelet.status import (
    CRASH_LOOP_BACK_OFF,
    CREATE_CONTAINER_CONFIG_ERROR,
    DISRUPTION_TARGET,
    ERR_IMAGE_PULL,
    IMAGE_PULL_BACK_OFF,
    OOM_KILLED,
    Condition,
    ContainerRecord,
    ContainerRole,
    Phase,
    PodView,
    Waiting,
    exited,
    held,
    normalize_image,
    phase_of,
    pod_status,
    started,
    waiting,
)
from scaleset.kube import (
    ApiStatusError,
    Conflict,
    Invalid,
    KubeClient,
    KubeError,
    KubeObject,
    NotFound,
    is_retryable,
)
from scaleset.logs import get_logger
from scaleset.runtime import EventRecorder

log = get_logger(__name__)

EVICTED = "Evicted"
TERMINATION_BY_KUBELET = "TerminationByKubelet"
DEFAULT_GRACE_SECONDS = 30


@dataclass(frozen=True)
class KubeletSettings:
    """Timing of the simulated kubelet, in seconds of its clock."""

    retry_seconds: float = 10.0
    """Retry interval after CreateContainerConfigError or FailedMount."""
    sync_seconds: float = 10.0
    """How long ErrImagePull shows before the ImagePullBackOff wait starts."""
    image_pull_seconds: float = 0.0
    """How long every image pull takes (``scaleset.dev/sim-pull-seconds`` per pod)."""
    backoff_initial: float = 10.0
    """First CrashLoopBackOff / ImagePullBackOff delay; doubles up to ``backoff_max``."""
    backoff_max: float = 300.0


@dataclass(frozen=True)
class RejectedWrite:
    """A status write the API server refused (422): the kubelet wrote a shape it should not."""

    pod: str
    message: str


@dataclass(frozen=True)
class ContainerTruth:
    name: str
    role: ContainerRole
    state: Literal["waiting", "running", "terminated"]
    reason: str
    exit_code: int | None
    restart_count: int
    process_alive: bool


@dataclass(frozen=True)
class PodTruth:
    """What the simulated node knows about one pod (ground truth, not the API's view)."""

    namespace: str
    name: str
    uid: str
    node: str
    phase: Phase
    reason: str
    frozen: bool
    containers: tuple[ContainerTruth, ...]

    @property
    def processes_alive(self) -> int:
        return sum(1 for c in self.containers if c.process_alive)

    def container(self, name: str) -> ContainerTruth:
        for container in self.containers:
            if container.name == name:
                return container
        raise KeyError(f"pod {self.namespace}/{self.name} has no container {name!r}")


@dataclass
class WorkerContext:
    """What every pod worker of one kubelet shares."""

    client: KubeClient
    clock: Clock
    infra_clock: Clock
    runtime: ContainerRuntime
    reader: SourceReader
    settings: KubeletSettings
    events: EventRecorder | None
    on_change: Callable[[], None]
    orphan: Callable[[ContainerProcess], None]
    rejected: list[RejectedWrite] = field(default_factory=list)


def _rv(obj: KubeObject) -> int:
    try:
        return int(obj.resource_version)
    except ValueError:
        return -1


class PodWorker:
    """The simulated node's handling of one pod (see the module docstring)."""

    def __init__(
        self,
        ctx: WorkerContext,
        pod: KubeObject,
        *,
        node: str,
        host_ip: str,
        pod_ip: str,
        script: PodScript,
    ) -> None:
        self.ctx = ctx
        self.pod = pod
        self.key = pod.key
        self.uid = pod.uid
        self.node = node
        self.host_ip = host_ip
        self.pod_ip = pod_ip
        self.script = script
        spec = pod.spec
        self.restart_policy = str(spec.get("restartPolicy") or "Always")
        self.specs: dict[str, dict[str, Any]] = {}
        self.records: dict[str, ContainerRecord] = {}
        self.init_names: list[str] = []
        self.main_names: list[str] = []
        has_init = bool(spec.get("initContainers"))
        for entry, role_default in (("initContainers", "init"), ("containers", "main")):
            for container in spec.get(entry) or []:
                if not isinstance(container, dict):
                    continue
                name = str(container.get("name", ""))
                role: ContainerRole = "main"
                if role_default == "init":
                    role = "sidecar" if container.get("restartPolicy") == "Always" else "init"
                    self.init_names.append(name)
                else:
                    self.main_names.append(name)
                self.specs[name] = container
                image = str(container.get("image", ""))
                self.records[name] = waiting(name, image, role, has_init=has_init)
        self.processes: dict[str, ContainerProcess] = {}
        self.start_time: datetime = ctx.clock.now()
        self.terminal = False
        self.reason = ""
        self.message = ""
        self.extra_conditions: list[Condition] = []
        self.frozen = False
        self.detached = False
        self._stopping_sidecars = False
        self._deletion_started = False
        self._sidecar_loops: list[asyncio.Task[Exit]] = []
        self._started: dict[str, asyncio.Event] = {n: asyncio.Event() for n in self.records}
        self._gone = asyncio.Event()
        self._dirty = asyncio.Event()
        self._version = 0
        self._written_version = 0
        self._last_written: dict[str, Any] | None = None
        self._flush_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._ending = asyncio.Lock()
        self._lifecycle: asyncio.Task[None] | None = None
        self._side_tasks: set[asyncio.Task[Any]] = set()

    def __repr__(self) -> str:
        return f"PodWorker({self.key} uid={self.uid} node={self.node})"

    # ------------------------------------------------------------------------- running

    async def run(self) -> None:
        """Own the pod until its object is gone (or the kubelet stops)."""
        writer = asyncio.ensure_future(self._write_loop())
        self._lifecycle = asyncio.ensure_future(self._live())
        self._schedule_pod_faults()
        try:
            await self._gone.wait()
        finally:
            for task in (writer, self._lifecycle, *self._side_tasks):
                task.cancel()
            for task in (writer, self._lifecycle, *self._side_tasks):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            killed = self._release_processes()
            self._resolve_flush_waiters(force=True)
            self.ctx.on_change()
            for process in killed:
                await process.wait()

    def _release_processes(self) -> list[ContainerProcess]:
        """Kill the processes (or hand them to the kubelet when the node was only cut off)."""
        killed: list[ContainerProcess] = []
        for process in self.processes.values():
            if self.detached:
                self.ctx.orphan(process)
            else:
                process.kill()
                killed.append(process)
        self.processes.clear()
        return killed

    def _spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)
        task.add_done_callback(self._report_crash)

    def _report_crash(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("pod worker task failed", pod=str(self.key), error=repr(task.exception()))

    def _schedule_pod_faults(self) -> None:
        faults: list[tuple[float | None, Callable[[], Awaitable[None]]]] = [
            (self.script.evict_after, self.evict),
            (self.script.vanish_after, self.vanish),
            (self.script.freeze_after, self._freeze_now),
        ]
        for after, action in faults:
            if after is not None:
                self._spawn(self._after(after, action))

    async def _after(self, seconds: float, action: Callable[[], Awaitable[None]]) -> None:
        await self.ctx.clock.sleep(seconds)
        await action()

    async def _freeze_now(self) -> None:
        self.freeze()

    @property
    def gone(self) -> bool:
        return self._gone.is_set()

    def observe(self, pod: KubeObject) -> None:
        """A newer version of the pod from the watch."""
        if pod.uid != self.uid or _rv(pod) < _rv(self.pod):
            return
        self.pod = pod
        if pod.is_deleting and not self.frozen and not self._deletion_started:
            self._deletion_started = True
            self._spawn(self.finish_deletion())

    def lost(self) -> None:
        """The pod object is gone from the API server."""
        self._gone.set()

    # ----------------------------------------------------------------------- lifecycle

    async def _live(self) -> None:
        self._changed()
        volumes = await self._mount_volumes()
        async with asyncio.TaskGroup() as group:
            for name in self.init_names:
                if self.records[name].role == "sidecar":
                    loop = group.create_task(self._container_loop(name, volumes))
                    self._sidecar_loops.append(loop)
                    await self._started[name].wait()
                    continue
                outcome = await self._container_loop(name, volumes)
                if outcome.code != 0:
                    await self._stop_sidecars()
                    return
            mains = [group.create_task(self._container_loop(n, volumes)) for n in self.main_names]
            await asyncio.gather(*mains)
            await self._stop_sidecars()

    async def _mount_volumes(self) -> VolumeFiles:
        while True:
            try:
                return await resolve_volumes(self._pod_view(), self.ctx.reader)
            except VolumeMountError as error:
                self._event("Warning", "FailedMount", error.message)
                log.info("volume mount failed", pod=str(self.key), volume=error.volume)
            except KubeError as error:
                log.warning("reading volume sources failed", pod=str(self.key), error=str(error))
            await self.ctx.clock.sleep(self.ctx.settings.retry_seconds)

    def _pod_view(self) -> dict[str, Any]:
        """The pod as the kubelet sees it (its own hostIP/podIP even before they are written)."""
        raw = dict(self.pod.raw)
        status = dict(raw.get("status") or {})
        status["hostIP"] = self.host_ip
        status["podIP"] = self.pod_ip
        status["podIPs"] = [{"ip": self.pod_ip}]
        raw["status"] = status
        return raw

    def _restarts(self, name: str, outcome: Exit) -> bool:
        if self.terminal:
            return False
        role = self.records[name].role
        if role == "sidecar":
            return not self._stopping_sidecars
        if role == "init":
            return outcome.code != 0 and self.restart_policy != "Never"
        if self.restart_policy == "Always":
            return True
        return self.restart_policy == "OnFailure" and outcome.code != 0

    def _backoff(self, failures: int) -> float:
        settings = self.ctx.settings
        return float(min(settings.backoff_max, settings.backoff_initial * 2 ** max(0, failures)))

    async def _container_loop(self, name: str, volumes: VolumeFiles) -> Exit:
        """Run one container until it will not be started again; returns its last exit."""
        crashes = 0
        while True:
            await self._pull(name)
            run = await self._configure(name, volumes)
            outcome = await self._execute(name, run)
            if not self._restarts(name, outcome):
                return outcome
            if crashes > 0:  # the first restart is immediate, then CrashLoopBackOff
                delay = self._backoff(crashes - 1)
                message = (
                    f"back-off {_duration(delay)} restarting failed container={name} "
                    f"pod={self.key.name}_{self.key.namespace}({self.uid})"
                )
                self._set_waiting(name, Waiting(CRASH_LOOP_BACK_OFF, message))
                self._event("Warning", "BackOff", "Back-off restarting failed container")
                await self.ctx.clock.sleep(delay)
            crashes += 1

    async def _pull(self, name: str) -> None:
        image = self.records[name].image
        failures = 0
        while True:
            seconds = self.script.pull_seconds or self.ctx.settings.image_pull_seconds
            if seconds:
                await self.ctx.clock.sleep(seconds)
            if not (self.script.pull_fails(name) or self.ctx.runtime.image_missing(image)):
                return
            reference = normalize_image(image)
            message = (
                f'rpc error: code = NotFound desc = failed to pull and unpack image "{reference}": '
                f'failed to resolve reference "{reference}": {reference}: not found'
            )
            self._set_waiting(name, Waiting(ERR_IMAGE_PULL, message))
            self._event("Warning", "Failed", f'Failed to pull image "{image}": {message}')
            await self.ctx.clock.sleep(self.ctx.settings.sync_seconds)
            self._set_waiting(
                name, Waiting(IMAGE_PULL_BACK_OFF, f'Back-off pulling image "{image}"')
            )
            self._event("Normal", "BackOff", f'Back-off pulling image "{image}"')
            await self.ctx.clock.sleep(self._backoff(failures))
            failures += 1

    async def _configure(self, name: str, volumes: VolumeFiles) -> ContainerRun:
        spec = self.specs[name]
        while True:
            try:
                env = await resolve_environment(self._pod_view(), spec, self.ctx.reader)
            except ContainerConfigError as error:
                self._set_waiting(name, Waiting(CREATE_CONTAINER_CONFIG_ERROR, error.message))
                self._event("Warning", "Failed", f"Error: {error.message}")
            except KubeError as error:
                log.warning("reading env sources failed", pod=str(self.key), error=str(error))
            else:
                record = self.records[name]
                return ContainerRun(
                    pod=self.key,
                    pod_uid=self.uid,
                    node=self.node,
                    container=name,
                    image=record.image,
                    spec=spec,
                    env=env,
                    files=container_files(spec, volumes),
                    labels=dict(self.pod.labels),
                    annotations=dict(self.pod.annotations),
                    init=record.role != "main",
                    restart_count=record.restart_count,
                    clock=self.ctx.clock,
                    stop=asyncio.Event(),
                )
            await self.ctx.clock.sleep(self.ctx.settings.retry_seconds)

    def _set_waiting(self, name: str, state: Waiting) -> None:
        record = self.records[name]
        if record.state != state:
            self.records[name] = held(record, state)
            self._changed()

    async def _execute(self, name: str, run: ContainerRun) -> Exit:
        record = self.records[name]
        directive = self.script.exit_for(name)
        program = (
            exit_after(directive.after, directive.code)
            if directive is not None
            else self.ctx.runtime.program_for(record.image)
        )
        self.records[name] = started(record, at=self.ctx.clock.now(), pod_uid=self.uid)
        process = ContainerProcess(program, run, lambda: self.script.hangs_for(name))
        self.processes[name] = process
        self._started[name].set()
        self._changed()
        oom_after = self.script.oom_after_for(name)
        oom: asyncio.Task[None] | None = None
        if oom_after is not None:
            oom = asyncio.ensure_future(self._oom_after(process, oom_after))
        try:
            outcome = await process.wait()
        finally:
            if oom is not None:
                oom.cancel()
        self._record_exit(name, outcome)
        return outcome

    async def _oom_after(self, process: ContainerProcess, seconds: float) -> None:
        await self.ctx.clock.sleep(seconds)
        process.kill(SIGKILL_EXIT, OOM_KILLED)

    def _record_exit(self, name: str, outcome: Exit) -> None:
        if self.processes.get(name) is None:
            return
        del self.processes[name]
        self.records[name] = exited(
            self.records[name],
            exit_code=outcome.code,
            reason=outcome.reason,
            at=self.ctx.clock.now(),
        )
        self._changed()

    # ------------------------------------------------------------------------ stopping

    async def _stop_sidecars(self) -> None:
        """The main containers are done: stop the sidecars and their restart loops."""
        self._stopping_sidecars = True
        sidecars = [n for n in reversed(self.init_names) if self.records[n].role == "sidecar"]
        await self._stop_containers([sidecars], self._grace(), kill_at_once=False)
        for loop in self._sidecar_loops:
            loop.cancel()  # a sidecar still pulling or backing off never starts

    def _grace(self) -> float:
        meta_grace = self.pod.metadata.get("deletionGracePeriodSeconds")
        if isinstance(meta_grace, int):
            return float(meta_grace)
        spec_grace = self.pod.spec.get("terminationGracePeriodSeconds")
        return float(spec_grace if isinstance(spec_grace, int) else DEFAULT_GRACE_SECONDS)

    async def _stop_containers(
        self, groups: Iterable[list[str]], grace: float, *, kill_at_once: bool
    ) -> None:
        """Stop each group in turn: SIGTERM, wait out the remaining grace, SIGKILL the rest."""
        deadline = self.ctx.clock.monotonic() + grace
        for names in groups:
            running = [(n, p) for n in names if (p := self.processes.get(n)) is not None]
            if not running:
                continue
            for name, process in running:
                self._event("Normal", "Killing", f"Stopping container {name}")
                if kill_at_once:
                    process.kill()
                else:
                    process.terminate()
            remaining = deadline - self.ctx.clock.monotonic()
            if not kill_at_once and remaining > 0:
                await self._wait_exits([p for _, p in running], remaining)
            for _, process in running:
                process.kill()
            for name, process in running:
                self._record_exit(name, await process.wait())

    async def _wait_exits(self, processes: list[ContainerProcess], seconds: float) -> None:
        timer = asyncio.ensure_future(self.ctx.clock.sleep(seconds))
        exits = asyncio.ensure_future(asyncio.wait([p.task for p in processes]))
        try:
            await asyncio.wait({timer, exits}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            exits.cancel()

    async def _halt(self) -> None:
        """Stop starting and restarting containers (running processes keep running)."""
        lifecycle = self._lifecycle
        if lifecycle is not None and not lifecycle.done():
            lifecycle.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await lifecycle
        self._stopping_sidecars = True

    def _all_groups(self) -> list[list[str]]:
        sidecars = [n for n in reversed(self.init_names) if self.records[n].role == "sidecar"]
        inits = [n for n in self.init_names if self.records[n].role == "init"]
        return [list(self.main_names), sidecars, inits]

    async def finish_deletion(self) -> None:
        """Graceful deletion: stop everything within the grace period, report, delete."""
        async with self._ending:
            if self.gone or self.frozen:
                return
            await self._halt()
            await self._stop_containers(self._all_groups(), self._grace(), kill_at_once=False)
            self.terminal = True
            self._changed()
            await self.flush()
            if self.gone or self.frozen:
                return
            with contextlib.suppress(NotFound, Conflict):
                await _api.delete_pod(self.ctx.client, self.key, self.uid)
            self._gone.set()

    async def evict(self, resource: str = "memory", message: str | None = None) -> None:
        """The kubelet's eviction manager: kill the pod's containers, phase Failed, Evicted."""
        async with self._ending:
            if self.gone or self.terminal:
                return
            await self._halt()
            await self._stop_containers(self._all_groups(), 0.0, kill_at_once=True)
            text = message or _eviction_message(resource, self.main_names[:1])
            self.terminal = True
            self.reason = EVICTED
            self.message = text
            self.extra_conditions = [
                Condition(DISRUPTION_TARGET, "True", TERMINATION_BY_KUBELET, text)
            ]
            self._event("Warning", EVICTED, text)
            self._changed()
            await self.flush()

    async def vanish(self, *, keep_processes: bool = False) -> None:
        """Node loss: the processes die (or run on, unreachable), the pod object is deleted."""
        async with self._ending:
            if self.gone:
                return
            self.frozen = True
            self.detached = keep_processes
            await self._halt()
            for process in self._release_processes():
                await process.wait()
            with contextlib.suppress(NotFound, Conflict):
                await _api.delete_pod(self.ctx.client, self.key, self.uid)
            self._gone.set()

    def freeze(self) -> None:
        """The node stops reporting: no status writes, deletions never completed."""
        self.frozen = True
        self._resolve_flush_waiters(force=True)
        self.ctx.on_change()

    def oom_kill(self, container: str) -> None:
        process = self.processes.get(container)
        if process is None:
            raise KeyError(f"container {container!r} of pod {self.key} is not running")
        process.kill(SIGKILL_EXIT, OOM_KILLED)

    def exit(self, container: str, code: int) -> None:
        """The container's process exits with ``code`` (a crash, or a clean finish)."""
        process = self.processes.get(container)
        if process is None:
            raise KeyError(f"container {container!r} of pod {self.key} is not running")
        process.kill(code, "Completed" if code == 0 else "Error")

    # -------------------------------------------------------------------------- status

    def view(self) -> PodView:
        return PodView(
            restart_policy=self.restart_policy,
            init=[self.records[n] for n in self.init_names],
            main=[self.records[n] for n in self.main_names],
            host_ip=self.host_ip,
            pod_ip=self.pod_ip,
            start_time=self.start_time,
            terminal=self.terminal,
            reason=self.reason,
            message=self.message,
            extra_conditions=tuple(self.extra_conditions),
        )

    def truth(self) -> PodTruth:
        containers = []
        for name in (*self.init_names, *self.main_names):
            record = self.records[name]
            state = record.state
            kind: Literal["waiting", "running", "terminated"]
            if isinstance(state, Waiting):
                kind, reason, code = "waiting", state.reason, None
            elif (done := record.terminated) is not None:
                kind, reason, code = "terminated", done.reason, done.exit_code
            else:
                kind, reason, code = "running", "", None
            process = self.processes.get(name)
            containers.append(
                ContainerTruth(
                    name,
                    record.role,
                    kind,
                    reason,
                    code,
                    record.restart_count,
                    process is not None and not process.done,
                )
            )
        return PodTruth(
            self.key.namespace,
            self.key.name,
            self.uid,
            self.node,
            phase_of(self.view()),
            self.reason,
            self.frozen,
            tuple(containers),
        )

    def _changed(self) -> None:
        self._version += 1
        self._dirty.set()
        self.ctx.on_change()

    def _event(self, kind: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        if self.ctx.events is not None and not self.frozen:
            self.ctx.events.emit(self.pod, kind, reason, message)

    async def flush(self) -> None:
        """Wait until every change made so far has been written (or can no longer be)."""
        if self.gone or self.frozen or self._written_version >= self._version:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._flush_waiters.append((self._version, future))
        await future

    def _resolve_flush_waiters(self, *, force: bool = False) -> None:
        waiting_still: list[tuple[int, asyncio.Future[None]]] = []
        for target, future in self._flush_waiters:
            if force or self._written_version >= target:
                if not future.done():
                    future.set_result(None)
            else:
                waiting_still.append((target, future))
        self._flush_waiters = waiting_still

    async def _write_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            version = self._version
            if not self.frozen:
                status = pod_status(self.view(), self.pod.status, self.ctx.clock.now())
                if status != self._last_written:
                    await self._write(status)
            self._written_version = version
            self._resolve_flush_waiters()

    async def _write(self, status: dict[str, Any]) -> None:
        backoff = Backoff(0.2, 5.0)
        while not self.gone:
            try:
                updated = await _api.write_status(self.ctx.client, self.key, self.uid, status)
            except NotFound:
                self.lost()
                return
            except Invalid as error:
                if await _api.current_uid(self.ctx.client, self.key) != self.uid:
                    self.lost()  # replaced by a new pod of the same name
                    return
                self.ctx.rejected.append(RejectedWrite(str(self.key), error.message))
                log.error("pod status write rejected", pod=str(self.key), error=error.message)
                self._last_written = status
                return
            except (ApiStatusError, KubeError) as error:
                if not is_retryable(error):
                    log.error("pod status write failed", pod=str(self.key), error=str(error))
                    return
                await self.ctx.infra_clock.sleep(backoff.next())
                continue
            self._last_written = status
            self.observe(updated)
            return


def _duration(seconds: float) -> str:
    """Go's ``time.Duration`` text for whole seconds/minutes (``10s``, ``1m20s``, ``5m0s``)."""
    total = math.ceil(seconds)
    minutes, secs = divmod(total, 60)
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def _eviction_message(resource: str, containers: list[str]) -> str:
    """The eviction manager's message (the threshold and usage numbers are illustrative)."""
    text = f"The node was low on resource: {resource}. Threshold quantity: 100Mi, available: 64Mi. "
    for name in containers:
        text += (
            f"Container {name} was using 1532Mi, request is 0, has larger consumption of "
            f"{resource}. "
        )
    return text
