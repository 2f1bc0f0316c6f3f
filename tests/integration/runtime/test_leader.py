"""Leader election over a Lease: hand-over on release, take-over after kill -9, and a
partitioned leader that stops its work before anyone else may start."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import FAST, make_client
from tests.support.managers import (
    SCALESET,
    Process,
    Timings,
    lease_record,
    manual_manager,
    new_manager,
    processes,
    running,
    wait_holder,
)
from tests.support.netfaults import TcpProxy
from tests.support.virtual_time import InFlight, run_until
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.devtools.transports import RequestHook
from scaleset.kube.client import KubeClient
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CONFIG_MAP, LEASE
from scaleset.runtime.controller import Result
from scaleset.runtime.leader import LeaderElectionConfig, LeaderElector, LeadershipLost


def elector(client: KubeClient, namespace: str, identity: str, lease: float) -> LeaderElector:
    return LeaderElector(
        client,
        LeaderElectionConfig(
            lease_name="handover",
            namespace=namespace,
            identity=identity,
            lease_duration=lease,
            renew_deadline=lease * 2 / 3,
            retry_period=0.2,
        ),
    )


async def test_release_hands_the_lease_over_at_once(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # A 60 s lease: if release did not clear it, B could not lead within the 20 s bound.
    async with make_client(kube_backend) as a_client, make_client(kube_backend) as b_client:
        a = elector(a_client, namespace, "a", lease=60.0)
        b = elector(b_client, namespace, "b", lease=60.0)
        await a.acquire()
        b_acquire = asyncio.ensure_future(b.acquire())
        await eventually(lambda: b.observed_holder == "a", what="b sees a holding")
        assert not b_acquire.done()
        await a.release()
        await asyncio.wait_for(b_acquire, 20.0)
        assert b.is_leader
        record = await lease_record(client, namespace, "handover")
        assert record is not None
        assert record.holder == "b"
        assert record.transitions == 1
        await b.release()


async def test_release_after_an_unseen_renewal_still_clears_the_lease(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # A renewal cancelled by shutdown can reach the server without the elector learning the new
    # resourceVersion; here another write moves the lease on while it still names "a". The
    # release must re-read and clear it, not give up on the 409.
    async with make_client(kube_backend) as a_client:
        a = elector(a_client, namespace, "a", lease=60.0)
        await a.acquire()
        await client.patch_merge(
            LEASE,
            ObjectKey(namespace, "handover"),
            {"metadata": {"annotations": {"test/moved-on": "yes"}}},
        )

        await a.release()

    record = await lease_record(client, namespace, "handover")
    assert record is not None
    assert record.holder == ""
    assert record.duration_seconds == 1
    assert not a.is_leader


async def test_a_partitioned_leader_stops_working_before_its_lease_expires(
    kube_backend: KubeBackend, client: KubeClient, proxy: TcpProxy, namespace: str
) -> None:
    timeline: list[str] = []
    in_flight = asyncio.Event()

    async def a_work(key: ObjectKey) -> Result | None:
        timeline.append("A works")
        in_flight.set()
        try:
            await asyncio.Event().wait()  # long work, still running when the partition hits
        except asyncio.CancelledError:
            timeline.append("A cancelled")
            raise
        return None

    async def b_work(key: ObjectKey) -> Result | None:
        timeline.append("B works")
        return None

    timings = Timings(lease_duration=4.0, renew_deadline=2.0, retry_period=0.25)
    await client.create(
        CONFIG_MAP, {"metadata": {"name": "job", "namespace": namespace, "labels": {"w": "1"}}}
    )
    async with (
        make_client(kube_backend, proxy=proxy) as a_client,
        make_client(kube_backend) as b_client,
    ):
        a = new_manager(a_client, namespace, "a", timings=timings, metrics_address="0")
        a.controller("work", for_kind=CONFIG_MAP, reconcile=a_work, label_selector="w=1")
        b = new_manager(b_client, namespace, "b", timings=timings, metrics_address="0")
        b.controller("work", for_kind=CONFIG_MAP, reconcile=b_work, label_selector="w=1")
        async with running(a) as a_task:
            await eventually(in_flight.is_set, what="A leads and works")
            async with running(b):
                await eventually(lambda: b.elector.observed_holder == "a", what="B sees A holding")
                assert not b.leading.is_set()
                proxy.partition()  # A can no longer renew; B still reaches the server
                await eventually(lambda: "B works" in timeline, within=30.0, what="B took over")
                with pytest.raises(LeadershipLost):
                    await asyncio.wait_for(a_task, 10.0)
    assert timeline.index("A cancelled") < timeline.index("B works")
    assert timeline.count("A works") == 1


class Hang:
    """A ``RequestHook`` action that holds lease requests while ``armed`` (a hung request)."""

    def __init__(self) -> None:
        self.armed = False
        self.held = 0

    async def __call__(self, _request: httpx2.Request) -> None:
        if self.armed:
            self.held += 1
            await asyncio.Event().wait()


def timed_elector(
    client: KubeClient, namespace: str, identity: str, clock: ManualClock, lease: str
) -> LeaderElector:
    """client-go's default timings (15 s / 10 s / 2 s) on the manual clock."""
    return LeaderElector(
        client,
        LeaderElectionConfig(lease_name=lease, namespace=namespace, identity=identity),
        clock=clock,
        rng=random.Random(0),
    )


async def test_a_failing_renewal_never_outlasts_the_renew_deadline(
    kube_backend: KubeBackend, namespace: str
) -> None:
    # The renewal at +2 s hangs; the attempt is cut at the deadline (+10 s). LeadershipLost must
    # come then — not after one more retry-period pause computed before the attempt (+12 s).
    clock = ManualClock()
    hang = Hang()
    in_flight = InFlight()
    hook = RequestHook("PUT", r"/leases/overshoot$", hang, times=10**9)  # a renewal
    async with make_client(kube_backend, hooks=[hook], clock=clock, in_flight=in_flight) as own:
        leader = timed_elector(own, namespace, "a", clock, "overshoot")
        await leader.acquire()
        renewed_at = clock.monotonic()
        hang.armed = True
        holding = asyncio.ensure_future(leader.hold())
        lost_at = await run_until(
            clock, holding.done, in_flight=in_flight, limit=30.0, what="leadership lost"
        )
        with pytest.raises(LeadershipLost):
            await holding
    assert hang.held >= 1
    assert lost_at - renewed_at <= leader.config.renew_deadline + 1e-6  # (run_until's +1 ns)
    assert not leader.is_leader


async def test_a_hung_renewal_cancelled_by_shutdown_is_a_cancellation(
    kube_backend: KubeBackend, namespace: str
) -> None:
    # run_with_deadline's user in hold(): cancelling the holder mid-attempt is not a failed
    # attempt and not a lost leadership — it is the caller's cancellation, and it propagates.
    clock = ManualClock()
    hang = Hang()
    hook = RequestHook("PUT", r"/leases/cancelled$", hang, times=10**9)  # a renewal
    async with make_client(kube_backend, hooks=[hook], clock=clock) as own:
        leader = timed_elector(own, namespace, "a", clock, "cancelled")
        await leader.acquire()
        hang.armed = True
        holding = asyncio.ensure_future(leader.hold())
        await eventually(lambda: clock.sleepers == 1, what="hold waits a retry period")
        clock.advance(leader.config.retry_period)
        await eventually(lambda: hang.held == 1, what="the renewal hangs")
        holding.cancel()
        with pytest.raises(asyncio.CancelledError):
            await holding
        assert clock.sleepers == 0  # the attempt's deadline went with it


async def test_the_lease_is_observed_when_the_read_returns(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # "other" holds a 15 s lease and never renews. B's first read takes 5 s; B must count the
    # 15 s from when it *saw* the record (+5 s), so it may take over at +20 s, not at +15 s.
    clock = ManualClock()
    await client.create(
        LEASE,
        {
            "metadata": {"name": "observed", "namespace": namespace},
            "spec": {
                "holderIdentity": "other",
                "leaseDurationSeconds": 15,
                "renewTime": "2027-01-15T08:00:00.000000Z",
                "leaseTransitions": 0,
            },
        },
    )
    reads = 0

    async def slow_first_read(_request: httpx2.Request) -> None:
        nonlocal reads
        reads += 1
        if reads == 1:
            clock.advance(5.0)  # the answer arrives 5 s after the request was sent

    hook = RequestHook("GET", r"/leases/observed$", slow_first_read, times=10**9)
    in_flight = InFlight()
    async with make_client(kube_backend, hooks=[hook], clock=clock, in_flight=in_flight) as own:
        b = timed_elector(own, namespace, "b", clock, "observed")
        sent_at = clock.monotonic()
        acquiring = asyncio.ensure_future(b.acquire())
        acquired_at = await run_until(
            clock, acquiring.done, in_flight=in_flight, limit=60.0, what="B leads"
        )
        await acquiring
        await b.release()
    assert acquired_at - sent_at >= 20.0
    record = await lease_record(client, namespace, "observed")
    assert record is not None
    assert record.transitions == 1


class StopWhenTheLeaseIsWritten(httpx2.AsyncBaseTransport):
    """Stops the manager the moment the server has answered its lease create: the acquire and
    the stop finish together."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner
        self.stop: Callable[[], None] | None = None
        self.fired = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if request.method == "POST" and request.url.path.endswith("/leases"):
            assert self.stop is not None
            self.fired += 1
            self.stop()
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_a_stop_racing_the_acquire_leaves_the_lease_free(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    clock = ManualClock()
    racing: list[StopWhenTheLeaseIsWritten] = []

    def wrap(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        racing.append(StopWhenTheLeaseIsWritten(inner))
        return racing[-1]

    async with make_client(kube_backend, wrap=wrap, clock=clock) as own:
        manager = manual_manager(own, namespace, "racer", clock)
        racing[0].stop = manager.stop
        await asyncio.wait_for(manager.run(), 30.0)
    assert racing[0].fired == 1
    record = await lease_record(client, namespace, "test-lease")
    assert record is not None
    assert (record.holder, record.duration_seconds) == ("", 1)


class OpenWatches(httpx2.AsyncBaseTransport):
    """Counts watch streams currently open through it."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner
        self.open = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if request.url.params.get("watch") != "true" or response.status_code != 200:
            return response
        source = response.stream
        assert isinstance(source, httpx2.AsyncByteStream)
        counter = self
        counter.open += 1

        class Counted(httpx2.AsyncByteStream):
            closed = False

            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in source:
                    yield chunk

            async def aclose(self) -> None:
                if not self.closed:
                    self.closed = True
                    counter.open -= 1
                await source.aclose()

        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=Counted(),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


WATCHES = 104  # 26 namespaces x 4 kinds


async def test_the_lease_renews_with_a_hundred_watches_open_and_the_limiter_saturated(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # The reconcile traffic's client: 104 open watches, and 100 tasks keeping its 5 QPS token
    # bucket saturated (a request waits ~20 s for its turn). The lease goes through a client of
    # its own, so it renews every retry period anyway (client-go timings: 15 s / 10 s / 2 s).
    clock = ManualClock()
    in_flight = InFlight()
    watched: list[OpenWatches] = []

    def count_watches(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        watched.append(OpenWatches(inner))
        return watched[0]

    busy = replace(FAST, qps=5.0, burst=5)
    await client.create(CONFIG_MAP, {"metadata": {"name": "hot", "namespace": namespace}})
    async with (
        make_client(
            kube_backend, settings=busy, clock=clock, in_flight=in_flight, wrap=count_watches
        ) as traffic,
        make_client(kube_backend, clock=clock, in_flight=in_flight) as election,
    ):
        manager = new_manager(
            traffic,
            namespace,
            "busy",
            clock=clock,
            election_client=election,
            timings=Timings(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0),
        )
        for index in range(WATCHES):
            manager.informers.informer(CONFIG_MAP, label_selector=f"scaleset.test/w={index}")
        served = 0

        async def hammer() -> None:
            nonlocal served
            while True:
                await traffic.get(CONFIG_MAP, ObjectKey(namespace, "hot"))
                served += 1

        async with running(manager) as run:
            await run_until(
                clock,
                lambda: watched[0].open >= WATCHES or run.done(),
                in_flight=in_flight,
                limit=120.0,
                what=f"{WATCHES} watches open",
            )
            assert manager.leading.is_set()
            hammers = [asyncio.ensure_future(hammer()) for _ in range(100)]
            try:
                before = await lease_record(client, namespace, "test-lease")
                start, served_before = clock.monotonic(), served
                await run_until(
                    clock,
                    lambda: clock.monotonic() >= start + 30.0 or run.done(),
                    in_flight=in_flight,
                    limit=40.0,
                    what="30 s of saturated traffic",
                )
                after = await lease_record(client, namespace, "test-lease")
                assert not run.done()  # no LeadershipLost
                assert manager.leading.is_set()
                assert watched[0].open >= WATCHES
                assert served - served_before <= 5 + 5.0 * 30.0  # the bucket was the bottleneck
            finally:
                for task in hammers:
                    task.cancel()
                await asyncio.gather(*hammers, return_exceptions=True)
    assert before is not None
    assert after is not None
    assert after.holder == "busy"
    assert after.renew_time > before.renew_time


def controller_argv(kubeconfig: Path, namespace: str, identity: str) -> list[str]:
    return [
        str(SCALESET),
        "controller",
        "--kubeconfig",
        str(kubeconfig),
        "--identity",
        identity,
        "--leader-election-id",
        "scaleset-test",
        "--lease-duration",
        "3",
        "--renew-deadline",
        "2",
        "--retry-period",
        "0.25",
        "--metrics-addr",
        "0",
        "--health-probe-bind-address",
        "127.0.0.1:0",  # probes on (the default), on a free port: two processes run at once
        "--log-level",
        "info",
        "--log-format",
        "json",
        "--namespaces",
        namespace,
    ]


async def probe_address(process: Process) -> str:
    """Where the process serves /healthz (from its "serving" log line)."""
    found: list[str] = []

    def serving() -> bool:
        for line in process.output().splitlines():
            if '"serving"' in line and "/healthz" in line:
                found.append(json.loads(line)["address"])
                return True
        return False

    await eventually(serving, what="the probe server")
    return found[0]


async def probe(address: str, path: str) -> tuple[int, str]:
    async with httpx2.AsyncClient(trust_env=False) as http:
        response = await http.get(f"http://{address}{path}")
    return response.status_code, response.text.strip()


def controller_env(namespace: str) -> dict[str, str]:
    return {
        "CONTROLLER_MANAGER_POD_NAMESPACE": namespace,
        "CONTROLLER_MANAGER_CONTAINER_IMAGE": "ghcr.io/actions/gha-runner-scale-set-controller:x",
    }


@pytest.mark.usefixtures("actions_crds")
async def test_a_killed_leader_is_replaced_within_the_lease_duration(
    kube_backend: KubeBackend, client: KubeClient, namespace: str, tmp_path: Path
) -> None:
    async with processes() as started:
        leader = await Process.start(
            controller_argv(kube_backend.kubeconfig_path, namespace, "proc-a"),
            tmp_path / "a.log",
            controller_env(namespace),
        )
        started.append(leader)
        await wait_holder(client, namespace, "scaleset-test", "proc-a")
        probes = await probe_address(leader)
        assert await probe(probes, "/healthz") == (200, "ok")

        async def ready() -> bool:
            return await probe(probes, "/readyz") == (200, "ok")

        await eventually(ready, what="/readyz ok")
        follower = await Process.start(
            controller_argv(kube_backend.kubeconfig_path, namespace, "proc-b"),
            tmp_path / "b.log",
            controller_env(namespace),
        )
        started.append(follower)
        await eventually(
            lambda: "waiting for leadership" in follower.output(), what="B campaigning"
        )
        record = await lease_record(client, namespace, "scaleset-test")
        assert record is not None
        assert record.holder == "proc-a"
        leader.kill()  # kill -9: no release, the lease must expire
        assert await leader.wait() == -9
        await wait_holder(client, namespace, "scaleset-test", "proc-b")
        record = await lease_record(client, namespace, "scaleset-test")
        assert record is not None
        assert record.transitions == 1
        assert '"became leader"' in follower.output()
        follower.terminate()
        assert await follower.wait() == 0
    record = await lease_record(client, namespace, "scaleset-test")
    assert record is not None
    assert (record.holder, record.duration_seconds) == ("", 1)  # released on SIGTERM


async def test_the_controller_process_explains_a_bad_kubeconfig_in_one_line(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("clusters: [\n")
    proc = await Process.start(
        controller_argv(broken, "default", "x"), tmp_path / "out.log", controller_env("default")
    )
    assert await proc.wait() == 1
    lines = [line for line in proc.output().splitlines() if line.strip()]
    assert len(lines) == 1
    assert "kubeconfig" in lines[0]
    assert "Traceback" not in proc.output()


async def test_the_controller_process_explains_an_unreachable_server(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: abc}}]\n"
    )
    proc = await Process.start(
        controller_argv(kubeconfig, "default", "x"), tmp_path / "out.log", controller_env("default")
    )
    assert await proc.wait() == 1
    lines = [line for line in proc.output().splitlines() if line.strip()]
    assert len(lines) == 1
    assert "cannot reach the Kubernetes API server" in lines[0]


class LeaseRequests(httpx2.AsyncBaseTransport):
    """Counts the lease requests sent through it, by HTTP method, in the order sent."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner
        self.sent: list[str] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if "/leases" in request.url.path:
            self.sent.append(request.method)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def since(self, mark: int) -> dict[str, int]:
        counts: dict[str, int] = {}
        for method in self.sent[mark:]:
            counts[method] = counts.get(method, 0) + 1
        return counts


RENEWALS = 10


async def run_periods(
    leader: LeaderElector,
    clock: ManualClock,
    in_flight: InFlight,
    holding: asyncio.Future[None],
    periods: int,
) -> None:
    """Run the clock through ``periods`` retry periods of ``holding`` (a ``hold()``), up to its
    next pause, with nothing in flight."""
    end = clock.monotonic() + periods * leader.config.retry_period

    def passed() -> bool:
        return clock.monotonic() >= end and in_flight.count == 0 and clock.sleepers == 1

    await run_until(
        clock,
        lambda: passed() or holding.done(),
        in_flight=in_flight,
        limit=periods * leader.config.retry_period + 1.0,
        what=f"{periods} retry periods",
    )


async def test_a_held_lease_is_renewed_with_one_update_per_retry_period(
    kube_backend: KubeBackend, namespace: str
) -> None:
    # client-go's fast path: while it holds the lease, the leader writes its renewal on the
    # lease it last wrote (resourceVersion-guarded) without reading it first — 30 requests a
    # minute at the 2 s retry period, not 60.
    clock = ManualClock()
    in_flight = InFlight()
    counted: list[LeaseRequests] = []

    def count(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        counted.append(LeaseRequests(inner))
        return counted[0]

    async with make_client(kube_backend, wrap=count, clock=clock, in_flight=in_flight) as own:
        leader = timed_elector(own, namespace, "a", clock, "fast-path")
        await leader.acquire()
        assert counted[0].since(0) == {"GET": 1, "POST": 1}  # not found, created
        mark = len(counted[0].sent)
        holding = asyncio.ensure_future(leader.hold())
        await run_periods(leader, clock, in_flight, holding, RENEWALS)
        assert not holding.done()
        assert counted[0].since(mark) == {"PUT": RENEWALS}
        assert leader.is_leader
        holding.cancel()
        with pytest.raises(asyncio.CancelledError):
            await holding
        await leader.release()


async def test_a_renewal_that_conflicts_reads_the_lease_and_renews(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # Another write moves the lease on while it still names us (a renewal whose answer was
    # lost, say): the optimistic update gets 409, the elector reads the lease, still finds
    # itself the holder and renews in the same attempt; it stays leader.
    clock = ManualClock()
    in_flight = InFlight()
    counted: list[LeaseRequests] = []

    def count(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        counted.append(LeaseRequests(inner))
        return counted[0]

    async with make_client(kube_backend, wrap=count, clock=clock, in_flight=in_flight) as own:
        leader = timed_elector(own, namespace, "a", clock, "conflicted")
        await leader.acquire()
        await client.patch_merge(
            LEASE,
            ObjectKey(namespace, "conflicted"),
            {"metadata": {"annotations": {"test/moved-on": "yes"}}},
        )
        mark = len(counted[0].sent)
        holding = asyncio.ensure_future(leader.hold())
        await run_periods(leader, clock, in_flight, holding, 1)
        assert not holding.done()
        assert counted[0].sent[mark:] == ["PUT", "GET", "PUT"]
        mark = len(counted[0].sent)
        await run_periods(leader, clock, in_flight, holding, 1)
        assert counted[0].sent[mark:] == ["PUT"]  # back on the fast path
        assert leader.is_leader
        holding.cancel()
        with pytest.raises(asyncio.CancelledError):
            await holding
        await leader.release()
    record = await lease_record(client, namespace, "conflicted")
    assert record is not None
    assert record.transitions == 0  # never lost: no transition


async def test_a_lease_taken_over_behind_the_leaders_back_ends_its_leadership(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # The lease is rewritten to name someone else: the optimistic renewal gets 409, the read
    # shows the other holder, and hold() raises LeadershipLost instead of writing over it.
    clock = ManualClock()
    in_flight = InFlight()
    async with make_client(kube_backend, clock=clock, in_flight=in_flight) as own:
        leader = timed_elector(own, namespace, "a", clock, "stolen")
        await leader.acquire()
        await client.patch_merge(
            LEASE, ObjectKey(namespace, "stolen"), {"spec": {"holderIdentity": "intruder"}}
        )
        holding = asyncio.ensure_future(leader.hold())
        await run_until(clock, holding.done, in_flight=in_flight, limit=5.0, what="lost")
        with pytest.raises(LeadershipLost, match="intruder"):
            await holding
    record = await lease_record(client, namespace, "stolen")
    assert record is not None
    assert record.holder == "intruder"
