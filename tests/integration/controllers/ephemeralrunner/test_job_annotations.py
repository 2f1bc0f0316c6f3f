"""Job ↔ pod traceability: once the listener records a JobStarted on a runner (the test plays
the listener), the controller writes the job onto the runner's pod annotations — with one
request per runner, however often it reconciles the runner afterwards. Where the controller may
not patch pods (a Role without it, as ARC's runner-set chart renders it), the refusal is said
once with an Event and costs no further request, and the runners live their lives unharmed."""

from __future__ import annotations

import re

import httpx2
from tests.integration.controllers.ephemeralrunner.world import World
from tests.support.waiting import eventually
from tests.support.watch_streams import LaggingWatch

from scaleset.api import keys
from scaleset.devtools.transports import ImpersonatingTransport, RequestHook, ServiceAccountRef
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.runner import RunnerPhase

JOB_SECONDS = 60.0


class PodPatchesAsNobody(httpx2.AsyncBaseTransport):
    """Sends the controller's pod patches as a ServiceAccount bound to nothing, so the API
    server itself refuses them (403, its RBAC), and every other request as it came."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, namespace: str) -> None:
        self._inner = inner
        self._nobody = ImpersonatingTransport.as_service_account(
            inner, ServiceAccountRef(namespace, "no-permissions")
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "PATCH" and re.search(r"/pods/[^/]+$", request.url.path):
            return await self._nobody.handle_async_request(request)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def pod_patches(world: World, counted: list[str]) -> RequestHook:
    """Records the path of every pod patch the controller sends."""

    async def record(request: httpx2.Request) -> None:
        counted.append(request.url.path)

    return RequestHook("PATCH", r"/pods/[^/]+$", record, times=10**9)


async def busy_runner(world: World, name: str) -> int:
    """A runner whose simulated runner took a queued job, recorded by the listener as started;
    returns the job's request id."""
    request_id = world.fake.control.queue_job(["arc"], duration_seconds=JOB_SECONDS)
    await world.create_runner(name)
    await world.until(lambda: RunnerPhase.JOB_STARTED in world.phases.of(name), "job started")
    await world.job_started(name, request_id)
    return request_id


async def test_a_started_job_is_written_on_its_runner_pod_once(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-traced"
    patches: list[str] = []
    async with world.controller(hooks=[pod_patches(world, patches)]) as controller:
        request_id = await busy_runner(world, name)
        job = world.fake.control.snapshot().job(request_id)
        expected = {
            keys.JOB_REPOSITORY_ANNOTATION: f"{job.owner}/{job.repository}",
            keys.JOB_DISPLAY_NAME_ANNOTATION: "build",
            keys.WORKFLOW_RUN_ID_ANNOTATION: "9",
            keys.JOB_ID_ANNOTATION: job.job_id,
            keys.JOB_REQUEST_ID_ANNOTATION: str(request_id),
        }

        async def annotated() -> bool:
            pod = await world.pod(name)
            shown = (pod.metadata.get("annotations") or {}) if pod is not None else {}
            return all(shown.get(key) == value for key, value in expected.items())

        await world.until(annotated, "the job on the pod's annotations")
        pod = await world.pod(name)
        assert pod is not None
        assert keys.JOB_WORKFLOW_REF_ANNOTATION not in pod.metadata["annotations"]  # not recorded
        # reconciles after the patch (pod events, pokes) write nothing more
        await world.settle(controller, name)
        await world.settle(controller, name)
        await eventually(controller.idle, within=30.0, what="the controller idle")
        assert len(patches) == 1, patches
        assert controller.decisions("PodJobAnnotated") == 1
        world.clock.advance(JOB_SECONDS)
        await world.gone(name)
    assert len(patches) == 1, patches


async def test_a_role_without_pod_patch_costs_one_refusal_and_one_event(
    world: World, kubelet: SimulatedKubelet
) -> None:
    first, second = "arc-runner-refused-1", "arc-runner-refused-2"
    patches: list[str] = []

    def refuse(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        return PodPatchesAsNobody(inner, world.namespace)

    async with world.controller(hooks=[pod_patches(world, patches)], wrap=refuse) as controller:
        await busy_runner(world, first)
        reasons = await world.event_reasons(first, "PodPatchForbidden")
        assert reasons.count("PodPatchForbidden") == 1
        [message] = [m for r, m in await world.events(first) if r == "PodPatchForbidden"]
        assert "patch on pods" in message
        await busy_runner(world, second)
        await world.runner_where(second, lambda r: r.status.phase == "Running", "Running")
        await world.settle(controller, second)
        await eventually(controller.idle, within=30.0, what="the controller idle")
        # one refused request in the namespace, then none: the second runner's pod is not tried
        assert len(patches) == 1, patches
        assert "PodPatchForbidden" not in [r for r, _ in await world.events(second)]
        # the runners end as ever
        world.clock.advance(JOB_SECONDS)
        await world.gone(first)
        await world.gone(second)
    assert len(patches) == 1, patches


async def test_a_pod_cache_behind_the_annotation_patch_does_not_patch_again(
    world: World, kubelet: SimulatedKubelet
) -> None:
    """The cached pod does not show the controller's own patch yet when the next reconcile
    comes (a pod or runner event queued meanwhile, on a busy machine): the job is on the pod
    already, and saying so again is a write more per job (CI saw it as a ninth write in
    test_cost.py, about one run in seven)."""
    name = "arc-runner-lagging-cache"
    patches: list[str] = []
    lagging: list[LaggingWatch] = []

    def wrap(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        lagging.append(LaggingWatch(inner, "pods"))
        return lagging[-1]

    async with world.controller(hooks=[pod_patches(world, patches)], wrap=wrap) as controller:
        request_id = world.fake.control.queue_job(["arc"], duration_seconds=JOB_SECONDS)
        await world.create_runner(name)
        await world.until(lambda: RunnerPhase.JOB_STARTED in world.phases.of(name), "job started")
        await world.runner_where(
            name, lambda r: r.status.runner_started_at is not None, "start recorded"
        )
        await world.settle(controller, name)
        await eventually(controller.idle, within=30.0, what="the controller idle")
        [watch] = lagging
        watch.lag()
        await world.job_started(name, request_id)
        await eventually(lambda: len(patches) == 1, within=30.0, what="the job annotated")
        await world.settle(controller, name)  # a reconcile on the cached pod of before the patch
        await world.settle(controller, name)
        await eventually(controller.idle, within=30.0, what="the controller idle")
        assert len(patches) == 1, patches
        watch.catch_up()
        await world.settle(controller, name)
        await eventually(controller.idle, within=30.0, what="the controller idle")
        assert len(patches) == 1, patches
        world.clock.advance(JOB_SECONDS)
        await world.gone(name)
    assert len(patches) == 1, patches
