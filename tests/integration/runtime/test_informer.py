"""Informers lose no update: through dropped, silent and expired watches the cache ends equal to
a fresh list (including a property test over random create/update/delete/fault sequences)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx2
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from lightkube import AsyncClient
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.types import PatchType
from prometheus_client import CollectorRegistry
from tests.conformance.widgets import GADGET_CRD, GROUP, VERSION, install_crd
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import make_client
from tests.support.netfaults import GoneOnNextWatch, TcpProxy
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import NotFound
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import CONFIG_MAP, Kind
from scaleset.runtime.collector import relists_in_progress
from scaleset.runtime.informer import Informer
from scaleset.runtime.store import InformerEvent


def configmap(name: str, namespace: str, value: str = "0", **labels: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"value": value},
    }


def cached(informer: Informer) -> dict[str, str]:
    return {obj.name: obj.resource_version for obj in informer.list()}


async def listed(client: KubeClient, namespace: str, selector: str | None = None) -> dict[str, str]:
    result = await client.list(CONFIG_MAP, namespace=namespace, label_selector=selector)
    return {obj.name: obj.resource_version for obj in result.items}


async def converged(
    informer: Informer,
    client: KubeClient,
    namespace: str,
    selector: str | None = None,
    *,
    clock: ManualClock | None = None,
) -> None:
    """The cache equals a fresh list (with ``clock``: letting its time pass meanwhile)."""

    async def equal() -> bool:
        return cached(informer) == await listed(client, namespace, selector)

    await eventually(equal, within=45.0, what="cache == fresh list", clock=clock)


@asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[Informer]:
    task = asyncio.ensure_future(informer.run())
    try:
        await eventually(lambda: informer.synced or task.done(), what="informer synced")
        if task.done():
            task.result()
        yield informer
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def count(metrics: RuntimeMetrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, {"kind": "ConfigMap", **labels}) or 0.0


def gone_on_next_watches(
    armed: int, on_fire: Callable[[], Awaitable[None]] | None = None
) -> tuple[list[GoneOnNextWatch], Callable[[httpx2.AsyncBaseTransport], httpx2.AsyncBaseTransport]]:
    """A ``make_client`` wrapper answering the next ``armed`` watches with 410, and the
    transports it made (one per client)."""
    made: list[GoneOnNextWatch] = []

    def wrap(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        transport = GoneOnNextWatch(inner, on_fire=on_fire)
        transport.armed = armed
        made.append(transport)
        return transport

    return made, wrap


async def test_syncs_indexes_and_follows_changes(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    for index in range(5):
        await client.create(CONFIG_MAP, configmap(f"cm-{index}", namespace, group="a"))
    events: list[InformerEvent] = []
    async with make_client(kube_backend) as watcher:
        informer = Informer(
            watcher, CONFIG_MAP, namespaces=[namespace], page_size=2, label_index=["group"]
        )
        informer.add_handler(events.append)
        async with running(informer):
            assert len(informer.by_label("group", "a")) == 5
            await client.patch_merge(
                CONFIG_MAP, ObjectKey(namespace, "cm-1"), {"metadata": {"labels": {"group": "b"}}}
            )
            await client.delete(CONFIG_MAP, ObjectKey(namespace, "cm-2"))
            await client.create(CONFIG_MAP, configmap("cm-new", namespace, group="b"))
            await converged(informer, client, namespace)
            assert {o.name for o in informer.by_label("group", "b")} == {"cm-1", "cm-new"}
    kinds = [(e.type, e.obj.name) for e in events if e.obj.name in ("cm-1", "cm-2", "cm-new")]
    assert ("MODIFIED", "cm-1") in kinds
    assert ("DELETED", "cm-2") in kinds
    assert ("ADDED", "cm-new") in kinds


async def test_a_broken_connection_rewatches_from_the_last_version_and_loses_nothing(
    kube_backend: KubeBackend, client: KubeClient, proxy: TcpProxy, namespace: str
) -> None:
    metrics = RuntimeMetrics(CollectorRegistry())
    clock = ManualClock()
    await client.create(CONFIG_MAP, configmap("before", namespace))
    async with make_client(kube_backend, proxy=proxy, metrics=metrics, clock=clock) as watcher:
        informer = Informer(
            watcher, CONFIG_MAP, namespaces=[namespace], metrics=metrics, clock=clock
        )
        async with running(informer):
            await client.create(CONFIG_MAP, configmap("during-1", namespace))
            await eventually(lambda: "during-1" in cached(informer), what="watch delivers")
            proxy.partition()  # the watch breaks; the reconnect is refused for a while
            await client.patch_merge(
                CONFIG_MAP, ObjectKey(namespace, "before"), {"data": {"value": "changed"}}
            )
            await client.delete(CONFIG_MAP, ObjectKey(namespace, "during-1"))
            await client.create(CONFIG_MAP, configmap("during-2", namespace))
            await eventually(
                lambda: (
                    count(metrics, "scaleset_informer_watch_restarts_total", cause="broken") > 0
                ),
                what="the informer noticed the break",
            )
            proxy.heal()
            await converged(informer, client, namespace, clock=clock)
    # the server replayed the changes after the last seen version: no second list
    assert count(metrics, "scaleset_informer_relists_total") == 1
    assert count(metrics, "scaleset_informer_watch_restarts_total", cause="gone") == 0


async def test_a_silent_connection_is_noticed_within_the_idle_timeout(
    kube_backend: KubeBackend, client: KubeClient, proxy: TcpProxy, namespace: str
) -> None:
    # A dead connection says nothing, ever: the read timeout of the HTTP client (timeoutSeconds
    # + grace, 5 to 10 minutes) would be the only way out. The informer's idle watchdog, on the
    # injected clock, re-watches after idle_timeout (70 s) of silence.
    metrics = RuntimeMetrics(CollectorRegistry())
    clock = ManualClock()
    async with make_client(kube_backend, proxy=proxy, metrics=metrics, clock=clock) as watcher:
        informer = Informer(
            watcher, CONFIG_MAP, namespaces=[namespace], metrics=metrics, clock=clock
        )
        assert informer.idle_timeout <= 75.0  # "about a minute"
        async with running(informer):
            await eventually(lambda: clock.sleepers == 1, what="the watchdog armed")
            proxy.silence()
            await client.create(CONFIG_MAP, configmap("while-silent", namespace))
            clock.advance(informer.idle_timeout)
            await converged(informer, client, namespace)
    assert count(metrics, "scaleset_informer_watch_restarts_total", cause="silent") == 1
    assert count(metrics, "scaleset_informer_relists_total") == 1


async def test_a_healthy_stream_is_not_cut_while_events_arrive(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # Every event (or bookmark) re-arms the watchdog: only silence ends a stream.
    metrics = RuntimeMetrics(CollectorRegistry())
    clock = ManualClock()
    async with make_client(kube_backend, metrics=metrics, clock=clock) as watcher:
        informer = Informer(
            watcher, CONFIG_MAP, namespaces=[namespace], metrics=metrics, clock=clock
        )
        async with running(informer):
            for index in range(4):  # 4 x 50 s = 200 s, never 70 s without an event
                await eventually(lambda: clock.sleepers == 1, what="the watchdog armed")
                clock.advance(50.0)
                await client.create(CONFIG_MAP, configmap(f"tick-{index}", namespace))
                await eventually(
                    lambda index=index: f"tick-{index}" in cached(informer), what="delivered"
                )
    assert count(metrics, "scaleset_informer_watch_restarts_total", cause="silent") == 0


async def test_gone_in_the_stream_relists_and_catches_the_missed_change(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    metrics = RuntimeMetrics(CollectorRegistry())
    await client.create(CONFIG_MAP, configmap("a", namespace))

    async def missed_change() -> None:
        await client.create(CONFIG_MAP, configmap("made-in-the-gap", namespace))
        await client.delete(CONFIG_MAP, ObjectKey(namespace, "a"))

    gone, wrap = gone_on_next_watches(1, missed_change)

    async with make_client(kube_backend, wrap=wrap, metrics=metrics) as watcher:
        informer = Informer(watcher, CONFIG_MAP, namespaces=[namespace], metrics=metrics)
        async with running(informer):
            # the change is made when the first watch is answered 410: until then the cache
            # equals a fresh list without it
            await eventually(lambda: gone[0].fired == 1, what="the watch answered 410")
            await converged(informer, client, namespace)
            assert "made-in-the-gap" in cached(informer)
            assert "a" not in cached(informer)
    assert gone[0].fired == 1
    assert count(metrics, "scaleset_informer_watch_restarts_total", cause="gone") == 1


async def test_a_watch_answered_410_right_after_its_list_is_listed_again_at_once(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """kube-apiserver answers 410 to a watch from the version a list has just returned when its
    watch cache started after that list (a CustomResourceDefinition's storage re-created). The
    informer lists again at once: its clock never moves here, and it waited for a back-off on
    it, seeing nothing until the clock moved (a controller test hung on the real server so)."""
    metrics = RuntimeMetrics(CollectorRegistry())
    clock = ManualClock()

    async def missed_change() -> None:
        await client.create(CONFIG_MAP, configmap("made-in-the-gap", namespace))

    gone, wrap = gone_on_next_watches(1, missed_change)

    async with make_client(kube_backend, wrap=wrap, metrics=metrics) as watcher:
        informer = Informer(
            watcher, CONFIG_MAP, namespaces=[namespace], metrics=metrics, clock=clock
        )
        async with running(informer):
            await eventually(lambda: gone[0].fired == 1, what="the watch answered 410")
            await converged(informer, client, namespace)  # the clock stays where it is
            assert "made-in-the-gap" in cached(informer)
    assert count(metrics, "scaleset_informer_relists_total") == 2


async def test_a_second_410_in_a_row_right_after_a_list_backs_off(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """Listed again at once once, not in a loop: a watch answered 410 right after the second
    list too waits for the back-off (on the injected clock) before the third list."""
    metrics = RuntimeMetrics(CollectorRegistry())
    clock = ManualClock()
    gone, wrap = gone_on_next_watches(2)

    async with make_client(kube_backend, wrap=wrap, metrics=metrics) as watcher:
        informer = Informer(
            watcher, CONFIG_MAP, namespaces=[namespace], metrics=metrics, clock=clock
        )
        async with running(informer):
            await eventually(lambda: gone[0].fired == 2, what="two watches answered 410")

            def backing_off() -> bool:  # the first back-off step: 0.8 s plus up to 100 % jitter
                deadline = clock.next_deadline()
                return deadline is not None and deadline - clock.monotonic() <= 1.6

            await eventually(backing_off, what="the informer waiting for the back-off")
            assert count(metrics, "scaleset_informer_relists_total") == 2
            await client.create(CONFIG_MAP, configmap("after-the-back-off", namespace))
            clock.advance(1.6)
            await converged(informer, client, namespace)
            assert "after-the-back-off" in cached(informer)
    assert count(metrics, "scaleset_informer_relists_total") == 3


GADGET = Kind(
    GROUP,
    VERSION,
    "Gadget",
    "gadgets",
    namespaced=True,
    has_status=True,
    resource=create_namespaced_resource(GROUP, VERSION, "Gadget", "gadgets"),
)


async def test_a_crd_spec_change_costs_the_informer_a_list_and_no_back_off(
    kube_backend: KubeBackend, kube: AsyncClient, client: KubeClient, namespace: str
) -> None:
    """A CRD's spec changed (a chart upgrade): the server ends the resource's watches and
    answers 410 to a watch from before the change (tests/conformance/test_watch.py). An
    informer that has heard nothing since its list lists again at once, while its clock never
    moves: it waited for a back-off on that clock, blind until the clock moved."""
    await install_crd(kube, GADGET_CRD)
    metrics = RuntimeMetrics(CollectorRegistry())
    clock = ManualClock()
    async with make_client(kube_backend, metrics=metrics) as watcher:
        informer = Informer(watcher, GADGET, namespaces=[namespace], metrics=metrics, clock=clock)
        async with running(informer):
            version = (await client.list(GADGET, namespace=namespace)).resource_version
            await kube.patch(
                CustomResourceDefinition,
                GADGET_CRD["metadata"]["name"],
                {"spec": {"names": {"categories": [f"c{version}"]}}},  # a change every run
                patch_type=PatchType.MERGE,
            )

            def listed_again() -> bool:
                return count(metrics, "scaleset_informer_relists_total", kind="Gadget") == 2

            await eventually(listed_again, within=45.0, what="a list after the CRD changed")
            body = {"metadata": {"name": "after-the-change", "namespace": namespace}, "spec": {}}
            await client.create(GADGET, body)
            await eventually(
                lambda: [obj.name for obj in informer.list()] == ["after-the-change"],
                what="the gadget made after the list",
            )
    gone = count(metrics, "scaleset_informer_watch_restarts_total", kind="Gadget", cause="gone")
    assert gone == 1


@pytest.mark.embedded_only(reason="needs the server to compact its watch history on demand")
async def test_compacted_history_gives_410_and_a_relist(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    metrics = RuntimeMetrics(CollectorRegistry())
    async with make_client(kube_backend, metrics=metrics) as watcher:
        informer = Informer(watcher, CONFIG_MAP, namespaces=[namespace], metrics=metrics)
        async with running(informer):
            await client.create(CONFIG_MAP, configmap("x", namespace))
            await eventually(lambda: "x" in cached(informer), what="x seen")
            kube_backend.server.faults.compact()
            kube_backend.server.faults.drop_watches(abrupt=False)
            await client.create(CONFIG_MAP, configmap("y", namespace))
            await converged(informer, client, namespace)


@pytest.mark.embedded_only(reason="needs the server to answer a list with 410 on demand")
async def test_a_list_answered_410_is_retried_not_fatal(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """A (re)list answered 410 Gone — a paged list whose continue token expired — is listed
    again; the informer died with a KeyError (no resourceVersion to forget)."""
    metrics = RuntimeMetrics(CollectorRegistry())
    await client.create(CONFIG_MAP, configmap("x", namespace))
    kube_backend.server.faults.fail_next(
        1, 410, verb="list", resource="configmaps", namespace=namespace, reason="Expired"
    )
    async with make_client(kube_backend, metrics=metrics) as watcher:
        informer = Informer(watcher, CONFIG_MAP, namespaces=[namespace], metrics=metrics)
        async with running(informer):
            await eventually(lambda: "x" in cached(informer), what="x listed after the 410")
            await client.create(CONFIG_MAP, configmap("y", namespace))
            await converged(informer, client, namespace)
    assert count(metrics, "scaleset_informer_watch_restarts_total", cause="gone") == 1


@pytest.mark.embedded_only(reason="needs the server to drop its watch streams on demand")
@pytest.mark.parametrize("abrupt", [False, True])
async def test_server_dropped_watches_lose_nothing(
    kube_backend: KubeBackend, client: KubeClient, namespace: str, abrupt: bool
) -> None:
    async with make_client(kube_backend) as watcher:
        informer = Informer(watcher, CONFIG_MAP, namespaces=[namespace])
        async with running(informer):
            for round_ in range(3):
                kube_backend.server.faults.drop_watches(abrupt=abrupt)
                await client.create(CONFIG_MAP, configmap(f"r{round_}", namespace))
                await client.patch_merge(
                    CONFIG_MAP, ObjectKey(namespace, f"r{round_}"), {"data": {"value": "1"}}
                )
            await converged(informer, client, namespace)


# --------------------------------------------------------------------------- property test

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.integers(0, 5)),
        st.tuples(st.just("update"), st.integers(0, 5)),
        st.tuples(st.just("delete"), st.integers(0, 5)),
        st.tuples(st.just("cut"), st.just(0)),
        st.tuples(st.just("gone"), st.just(0)),
    ),
    min_size=1,
    max_size=12,
)

_example = 0


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
@example(ops=[("create", 0), ("delete", 0)])
@example(ops=[("create", 0), ("cut", 0), ("update", 0), ("delete", 0), ("create", 1)])
@example(ops=[("create", 1), ("gone", 0), ("delete", 1), ("create", 1), ("update", 1)])
async def test_cache_equals_a_fresh_list_after_any_sequence(
    kube_backend: KubeBackend,
    client: KubeClient,
    proxy: TcpProxy,
    namespace: str,
    ops: list[tuple[str, int]],
) -> None:
    global _example
    _example += 1
    label = f"e{_example}"
    gone: list[GoneOnNextWatch] = []

    def wrap(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        gone.append(GoneOnNextWatch(inner))
        return gone[0]

    async def apply(op: str, index: int) -> None:
        key = ObjectKey(namespace, f"{label}-{index}")
        if op == "create":
            with contextlib.suppress(Exception):
                await client.create(CONFIG_MAP, configmap(key.name, namespace, example=label))
        elif op == "update":
            with contextlib.suppress(NotFound):
                await client.patch_merge(CONFIG_MAP, key, {"data": {"value": str(len(ops))}})
        elif op == "delete":
            with contextlib.suppress(NotFound):
                await client.delete(CONFIG_MAP, key)
        elif op == "cut":
            proxy.cut()
        elif op == "gone":
            gone[0].armed += 1
            proxy.cut()  # the reconnecting watch is the one answered with 410

    async with make_client(kube_backend, proxy=proxy, wrap=wrap) as watcher:
        informer = Informer(
            watcher,
            CONFIG_MAP,
            namespaces=[namespace],
            label_selector=f"example={label}",
            backoff_initial=0.05,
            backoff_max=0.5,
        )
        async with running(informer):
            for op, index in ops:
                await apply(op, index)
            await converged(informer, client, namespace, f"example={label}")


class Cycle:
    """A reference cycle: only the cycle collector can free it."""

    def __init__(self) -> None:
        self.me = self


async def test_a_relist_leaves_nothing_frozen_and_collects_what_died(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # The production default freezes the collector page by page while relisting. Garbage alive
    # (uncollected) during the relist, and objects that die after it, must still be collected.
    assert Informer(client, CONFIG_MAP)._freeze_gc  # the default is what production runs
    for index in range(3):
        await client.create(CONFIG_MAP, configmap(f"cm-{index}", namespace, t="gc"))
    enabled = gc.isenabled()
    gc.disable()  # from here, only the informer's own collection can free a cycle
    try:
        garbage = Cycle()
        dead = weakref.ref(garbage)
        del garbage  # unreachable, but not collected yet
        survivor = Cycle()
        later = weakref.ref(survivor)
        async with make_client(kube_backend) as watcher:
            informer = Informer(
                watcher, CONFIG_MAP, namespaces=[namespace], label_selector="t=gc", page_size=1
            )
            async with running(informer):
                assert len(informer.list()) == 3
                assert relists_in_progress() == 0
                assert gc.get_freeze_count() == 0
                assert dead() is None  # collected once the relist was done
                del survivor
                gc.collect()
                assert later() is None  # alive at a page's freeze, collectable afterwards
    finally:
        if enabled:
            gc.enable()


class BeforeEachPage(httpx2.AsyncBaseTransport):
    """Calls ``check(continue_token)`` before each later page of a list is requested."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner
        self.check: Callable[[str], None] = lambda _token: None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        token = request.url.params.get("continue")
        if token and request.url.params.get("watch") != "true":
            self.check(token)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_a_relist_keeps_one_version_of_each_object(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    # A relist applies each page as it arrives: before the next page is asked for, the cache
    # already holds the new versions of the last page, and an object the list shows unchanged is
    # the very object cached before (not a second copy of it). Holding the whole list beside the
    # old cache until the end kept two copies of every object through each relist.
    names = [f"a{index}" for index in range(6)]
    for name in names:
        await client.create(CONFIG_MAP, configmap(name, namespace))
    informers: list[Informer] = []
    before: dict[str, KubeObject] = {}
    seen_at_page_two: list[tuple[str, bool]] = []

    def check(_token: str) -> None:
        if not before or seen_at_page_two:
            return  # the first list, or a later page of the relist
        a0 = informers[0].get(ObjectKey(namespace, "a0"))
        a1 = informers[0].get(ObjectKey(namespace, "a1"))
        assert a0 is not None
        seen_at_page_two.append(("a0 new", a0.resource_version != before["a0"].resource_version))
        seen_at_page_two.append(("a1 same object", a1 is before["a1"]))

    async def missed_change() -> None:  # the first watch, right after the first list
        before.update({obj.name: obj for obj in informers[0].list()})
        await client.patch_merge(CONFIG_MAP, ObjectKey(namespace, "a0"), {"data": {"value": "1"}})

    gone: list[GoneOnNextWatch] = []

    def wrap(inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        gone.append(GoneOnNextWatch(inner, on_fire=missed_change))
        gone[-1].armed = 1
        pages = BeforeEachPage(gone[-1])
        pages.check = check
        return pages

    async with make_client(kube_backend, wrap=wrap) as watcher:
        informers.append(Informer(watcher, CONFIG_MAP, namespaces=[namespace], page_size=2))
        async with running(informers[0]):
            await converged(informers[0], client, namespace)
            await eventually(lambda: gone[0].fired == 1, what="the watch answered 410")
            await converged(informers[0], client, namespace)
            cache = {n: informers[0].get(ObjectKey(namespace, n)) for n in names[1:]}
    assert set(names) <= set(before)
    assert seen_at_page_two == [("a0 new", True), ("a1 same object", True)]
    assert [n for n, obj in cache.items() if obj is not before[n]] == []
