"""What one runner's life costs the API server, counted by the embedded server's request
counters (and, in order, on the controller's own client): create → JIT Secret → pod → Pending →
job → done → cleanup. The goal is at most 8 writes by the controller, Events excluded, for the
lifecycle itself; the job's annotations on the pod (job ↔ pod traceability) are one write more
per job, counted apart.

ARC's controller needs about 12 for the same life: ER create (ERS), JIT
Secret create, status runnerId/runnerName, pod create, status Pending (copied from the pod),
status Running + ready (copied from the pod), listener's job fields, ER delete (exit 0),
registration finalizer removed (patch), pod delete, JIT Secret delete, main finalizer removed
(patch) — twelve, more when Ready changes apart from the phase.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import httpx2
import pytest
from tests.integration.controllers.ephemeralrunner.world import World
from tests.support.waiting import eventually
from tests.support.watch_streams import LaggingWatch

from scaleset.devtools.transports import RequestHook
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.runner import RunnerPhase

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
OURS = ("ephemeralrunners", "ephemeralrunners/status", "pods", "secrets")


def reads_and_creates(requests: list[str]) -> list[RequestHook]:
    """Hooks that append the controller's GETs (watches aside) and POSTs to ``requests`` as
    ``"GET pods/<name>"`` / ``"POST pods/<name>"``, in order."""

    async def record(request: httpx2.Request) -> None:
        if request.url.params.get("watch") is not None:
            return
        path = re.sub(r"^/apis?/([^/]+/)?v1(alpha1)?/namespaces/[^/]+/", "", request.url.path)
        if request.method == "POST":
            path = f"{path}/{json.loads(request.content)['metadata']['name']}"
        requests.append(f"{request.method} {path}")

    return [RequestHook(method, ".*", record, times=10**9) for method in ("GET", "POST")]


@pytest.mark.embedded_only(reason="counts requests with the embedded server's request counters")
async def test_one_runner_lifecycle_costs_at_most_8_controller_writes(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-cost"
    faults = world.backend.server.faults
    ordered: list[str] = []

    async def record(request: httpx2.Request) -> None:
        path = re.sub(r"^/apis?/([^/]+/)?v1(alpha1)?/namespaces/[^/]+/", "", request.url.path)
        if path.split("/")[0] in ("ephemeralrunners", "pods", "secrets"):
            ordered.append(f"{request.method} {path}")

    hooks = [RequestHook(method, ".*", record, times=10**9) for method in WRITE_METHODS]
    async with world.controller(hooks=hooks):
        faults.reset_counts()
        await world.create_runner(name)  # the EphemeralRunnerSet's write
        request_id = world.fake.control.queue_job(["arc"], duration_seconds=60)
        await world.until(lambda: RunnerPhase.JOB_STARTED in world.phases.of(name), "job started")
        # The listener's write comes after the controller recorded the start: both are guarded
        # status writes of one runner, and when they cross, the loser's 409 and its retry are
        # one request more — a cost of timing (counted by bench/), not a decision counted here.
        await world.runner_where(
            name, lambda r: r.status.runner_started_at is not None, "start recorded"
        )
        await world.job_started(name, request_id)  # the listener's write
        await world.runner_where(name, lambda r: r.status.phase == "Running", "Running")
        world.clock.advance(60)
        await world.gone(name)
        counts = faults.request_counts()

    writes = Counter(
        {
            (verb, resource): count
            for (verb, resource), count in counts.items()
            if verb in ("create", "update", "patch", "delete") and resource in OURS
        }
    )
    print("\nwrites on the server (verb, resource: count); Events and pods/status excluded:")
    for (verb, resource), count in sorted(writes.items()):
        print(f"  {verb:7} {resource:26} {count}")
    print("the controller's writes, in order:")
    for line in ordered:
        print(f"  {line}")
    print(
        f"server total {sum(writes.values())}: controller {len(ordered)}, EphemeralRunnerSet 1,"
        " listener 1 (anything more is the kubelet's)"
    )
    lifecycle = [write for write in ordered if write != f"PATCH pods/{name}"]
    assert len(lifecycle) <= 8, ordered
    assert ordered.count(f"PATCH pods/{name}") == 1, ordered  # the job's annotations, once
    assert writes[("create", "ephemeralrunners")] == 1  # the EphemeralRunnerSet's
    assert sum(writes.values()) >= len(ordered) + 2


@pytest.mark.embedded_only(reason="counts requests with the embedded server's request counters")
async def test_an_idle_runners_periodic_resync_costs_no_api_request(
    world: World, kubelet: SimulatedKubelet
) -> None:
    """The resync (``--sync-period``, 1 minute as in ARC) reconciles every runner; for an idle
    one it must cost nothing: at two GETs per runner per minute, 600 idle runners would take the
    whole default client rate (20/s) from the real work."""
    name = "arc-runner-idle"
    faults = world.backend.server.faults
    async with world.controller(resync_period=60.0) as controller:
        await world.create_runner(name)
        await world.until(lambda: RunnerPhase.LISTENING in world.phases.of(name), "listening")
        await world.runner_where(
            name, lambda r: r.status.runner_started_at is not None, "runner started recorded"
        )

        async def secret_gone() -> bool:
            return await world.secret(name) is None

        await world.until(secret_gone, "JIT Secret deleted after the start")
        for resync in range(3):
            faults.reset_counts()
            before = controller.reconciles()

            def reconciled(before: float = before) -> bool:
                return controller.reconciles() > before

            await eventually(
                reconciled, clock=world.clock, max_step=61.0, within=30.0, what=f"resync {resync}"
            )
            reads = {
                resource: faults.request_count("get", resource)
                for resource in ("ephemeralrunners", "secrets", "pods")
            }
            writes = sum(
                n
                for (verb, resource), n in faults.request_counts().items()
                if verb in ("create", "update", "patch", "delete")
                and resource != "events"
                and not resource.startswith("pods/")
            )
        # the last resync (the first may still read the Secret once to learn it is gone)
        assert reads == {"ephemeralrunners": 0, "secrets": 0, "pods": 0}, reads
        assert writes == 0


async def test_new_runners_read_no_pod_and_the_github_secret_once_per_window(
    world: World, kubelet: SimulatedKubelet
) -> None:
    """A runner that never had a pod cannot have one (every pod creation follows its write-ahead
    status record): its cache miss costs no GET; nor can it have a JIT Secret before this
    process registers it. The GitHub config Secret is read once for a burst within the reuse
    window, not once per runner (each was ~12 % of a runner's requests at scale-up). A runner's
    JIT Secret is read once from its creation to idle: when its runner is seen started, to
    delete it — not while its pod has not started (nothing is decided on it then), not after
    this process deleted it.

    The counts are of decisions, not of timing: the test waits until every runner is idle with
    its Secret gone, then until a reconcile of each that began after that has ended. (It used to
    stop the controller as soon as the last pod existed and count whatever reconciles of the
    first runners fitted in that window: on a loaded machine, a JIT Secret read twice.)"""
    names = [f"arc-runner-burst-{i}" for i in range(5)]
    requests: list[str] = []

    hooks = reads_and_creates(requests)
    async with world.controller(hooks=hooks) as controller:
        for name in names:
            await world.create_runner(name)
        for name in names:

            async def idle_without_secret(name: str = name) -> bool:
                runner = await world.runner(name)
                started = runner is not None and runner.status.runner_started_at is not None
                return started and await world.secret(name) is None

            # the virtual clock stands still: the burst falls within one reuse window
            await eventually(idle_without_secret, within=30.0, what=f"{name} idle, Secret gone")
        for name in names:
            await world.reconciled_after_all_writes(controller, name, requests)
    for name in names:
        pod_reads = [i for i, line in enumerate(requests) if line == f"GET pods/{name}"]
        assert all(i > requests.index(f"POST pods/{name}") for i in pod_reads), requests
        secret_reads = [i for i, line in enumerate(requests) if line == f"GET secrets/{name}"]
        assert len(secret_reads) == 1, (name, requests)
        assert secret_reads[0] > requests.index(f"POST secrets/{name}"), requests
    assert requests.count("GET secrets/github-config") == 1, requests


async def test_new_runners_are_registered_and_given_a_pod_without_a_read_of_the_runner(
    world: World, kubelet: SimulatedKubelet
) -> None:
    """A runner new to the controller, which its cache shows as just created, is planned on as
    cached: its registration, JIT Secret, write-ahead record and pod take no GET of the runner
    (it was one request in five of a new runner's, and one call in sequence before its pod).
    Reads after the pod exists are another matter (a pod event plans on a fresh read)."""
    names = [f"arc-runner-unread-{i}" for i in range(3)]
    requests: list[str] = []

    hooks = reads_and_creates(requests)
    async with world.controller(hooks=hooks):
        for name in names:
            await world.create_runner(name)
        for name in names:
            await world.until(lambda name=name: f"POST pods/{name}" in requests, f"{name}'s pod")
    for name in names:
        before_pod = requests[: requests.index(f"POST pods/{name}")]
        assert f"GET ephemeralrunners/{name}" not in before_pod, requests
        assert f"POST secrets/{name}" in before_pod, requests


async def test_the_reconcile_after_a_new_runners_pod_arrives_in_the_cache_reads_nothing(
    world: World,
) -> None:
    """A reconcile that ends with nothing left to do remembers the versions it planned on —
    for what it wrote or read, the versions the API server answered — not the version the pod
    cache holds at that moment. Once the pod cache delivers that pod (its ADDED event queues
    the runner again), the cache holds those very versions: the next reconcile plans on them
    and reads nothing. (It read the runner again whenever the pod cache lagged at the end of
    a reconcile: at scale-up about one runner in three.) The pod watch is held from before the
    runner's creation until the controller has nothing left to do; no kubelet: the pod stays
    as created."""
    name = "arc-runner-pod-arrives"
    requests: list[str] = []
    lagging: list[LaggingWatch] = []

    def wrap(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        lagging.append(LaggingWatch(inner, "pods"))
        return lagging[-1]

    async with world.controller(hooks=reads_and_creates(requests), wrap=wrap) as controller:
        [watch] = lagging
        watch.lag()
        await world.create_runner(name)
        await world.until(lambda: f"POST pods/{name}" in requests, "the pod created")
        # the runner's own status event queued it again meanwhile: that reconcile reads the
        # pod the cache does not show yet, and ends with nothing to do
        await eventually(controller.idle, within=30.0, what="the reconciles ended")
        assert f"GET pods/{name}" in requests, requests
        before, caught_up = controller.reconciles(), len(requests)
        watch.catch_up()
        await eventually(
            lambda: controller.reconciles() > before, within=30.0, what="the pod's reconcile"
        )
        await eventually(controller.idle, within=30.0, what="the controller idle")
    after = requests[caught_up:]
    assert f"GET ephemeralrunners/{name}" not in after, requests
    assert f"GET pods/{name}" not in after, requests
