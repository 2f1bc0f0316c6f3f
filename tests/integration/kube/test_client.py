"""The API client against real HTTP: explicit patches, the optimistic lock, status writes,
delete preconditions, paging, error classes and the access recorder — on both backends."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import Any

import pytest
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import FAST, ephemeral_runner, make_client
from tests.support.virtual_time import InFlight, run_until
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.kube.access import Access
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import AlreadyExists, Conflict, Invalid, NotFound
from scaleset.kube.objects import ObjectKey
from scaleset.kube.patches import add_finalizer, remove_finalizer, set_finalizers
from scaleset.kube.resources import CONFIG_MAP, EPHEMERAL_RUNNER, POD
from scaleset.kube.throttle import in_lane

pytestmark = pytest.mark.usefixtures("actions_crds")


async def test_create_get_and_already_exists(client: KubeClient, namespace: str) -> None:
    created = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    assert created.uid
    assert created.kind == EPHEMERAL_RUNNER
    fetched = await client.get(EPHEMERAL_RUNNER, ObjectKey(namespace, "r1"))
    assert fetched.uid == created.uid
    assert "managedFields" not in fetched.metadata
    with pytest.raises(AlreadyExists):
        await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    with pytest.raises(NotFound):
        await client.get(EPHEMERAL_RUNNER, ObjectKey(namespace, "absent"))


async def test_generate_name_creates_distinct_objects(client: KubeClient, namespace: str) -> None:
    body = {"metadata": {"generateName": "runner-", "namespace": namespace}, "data": {"a": "b"}}
    first = await client.create(CONFIG_MAP, body)
    second = await client.create(CONFIG_MAP, body)
    assert first.name.startswith("runner-")
    assert first.name != second.name


async def test_L2_patch_with_lock_rejects_a_stale_read(client: KubeClient, namespace: str) -> None:
    read = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    await client.patch_merge(EPHEMERAL_RUNNER, read.key, {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(Conflict):
        await client.patch_with_lock(read, {"metadata": {"labels": {"y": "2"}}})
    fresh = await client.get(EPHEMERAL_RUNNER, read.key)
    written = await client.patch_with_lock(fresh, {"metadata": {"labels": {"y": "2"}}})
    assert written.labels == {"app": "test", "x": "1", "y": "2"}


async def test_L2_status_patches_touch_only_status_and_honour_the_lock(
    client: KubeClient, namespace: str
) -> None:
    read = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    after = await client.patch_with_lock(read, {"status": {"phase": "Pending"}}, status=True)
    assert after.status.get("phase") == "Pending"
    assert after.spec == read.spec
    assert after.generation == read.generation  # status writes do not bump generation
    with pytest.raises(Conflict):
        await client.patch_with_lock(read, {"status": {"phase": "Running"}}, status=True)
    current = await client.get(EPHEMERAL_RUNNER, read.key)
    assert current.status.get("phase") == "Pending"


async def test_L2_guarded_finalizer_edits_never_drop_others(
    client: KubeClient, namespace: str
) -> None:
    obj = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    ops = add_finalizer(obj, "ours")
    assert ops is not None
    obj = await client.patch_json(EPHEMERAL_RUNNER, obj.key, ops)
    stale = obj
    # Someone else adds a finalizer after our read.
    ops = add_finalizer(obj, "theirs")
    assert ops is not None
    obj = await client.patch_json(EPHEMERAL_RUNNER, obj.key, ops)
    assert list(obj.finalizers) == ["ours", "theirs"]
    # Removing ours works from the stale read (the element we test is still in place) ...
    removal = remove_finalizer(stale, "ours")
    assert removal is not None
    obj = await client.patch_json(EPHEMERAL_RUNNER, obj.key, removal)
    assert list(obj.finalizers) == ["theirs"]
    # ... but a stale index no longer matching raises Conflict instead of removing theirs.
    with pytest.raises(Conflict):
        await client.patch_json(EPHEMERAL_RUNNER, obj.key, removal)
    assert list((await client.get(EPHEMERAL_RUNNER, obj.key)).finalizers) == ["theirs"]


async def test_L2_a_decided_finalizer_list_is_written_only_over_the_list_read(
    client: KubeClient, namespace: str
) -> None:
    """``set_finalizers``, the one finalizer write of every controller's apply: the ``test`` of
    the whole list read (or, with none read, of the resourceVersion) makes a decision taken on a
    stale read a Conflict instead of dropping a finalizer someone else added."""
    obj = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    raced = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r2", namespace))

    obj = await client.patch_json(EPHEMERAL_RUNNER, obj.key, set_finalizers(obj, (), ["ours"]))
    assert list(obj.finalizers) == ["ours"]
    stale = obj
    # Someone else adds theirs after our read.
    theirs = set_finalizers(obj, ["ours"], ["ours", "theirs"])
    obj = await client.patch_json(EPHEMERAL_RUNNER, obj.key, theirs)
    # A release decided on the stale read ("ours" was the whole list) is refused ...
    with pytest.raises(Conflict):
        await client.patch_json(EPHEMERAL_RUNNER, obj.key, set_finalizers(stale, ["ours"], []))
    assert list((await client.get(EPHEMERAL_RUNNER, obj.key)).finalizers) == ["ours", "theirs"]
    # ... and decided again on a fresh read, it keeps theirs.
    fresh = await client.get(EPHEMERAL_RUNNER, obj.key)
    released = set_finalizers(fresh, fresh.finalizers, ["theirs"])
    obj = await client.patch_json(EPHEMERAL_RUNNER, obj.key, released)
    assert list(obj.finalizers) == ["theirs"]

    # With no list read, a list someone created meanwhile is never overwritten.
    first = set_finalizers(raced, (), ["theirs"])
    await client.patch_json(EPHEMERAL_RUNNER, raced.key, first)
    with pytest.raises(Conflict):
        await client.patch_json(EPHEMERAL_RUNNER, raced.key, set_finalizers(raced, (), ["ours"]))
    assert list((await client.get(EPHEMERAL_RUNNER, raced.key)).finalizers) == ["theirs"]


async def test_delete_preconditions(client: KubeClient, namespace: str) -> None:
    obj = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    with pytest.raises(Conflict):
        await client.delete(EPHEMERAL_RUNNER, obj.key, uid="not-the-uid")
    changed = await client.patch_merge(
        EPHEMERAL_RUNNER, obj.key, {"metadata": {"labels": {"moved": "on"}}}
    )
    with pytest.raises(Conflict):
        await client.delete(EPHEMERAL_RUNNER, obj.key, resource_version=obj.resource_version)
    gone = await client.delete(
        EPHEMERAL_RUNNER,
        obj.key,
        uid=changed.uid,
        resource_version=changed.resource_version,
    )
    assert gone is None or gone.is_deleting
    with pytest.raises(NotFound):
        await client.get(EPHEMERAL_RUNNER, obj.key)


async def test_delete_with_a_finalizer_returns_the_terminating_object(
    client: KubeClient, namespace: str
) -> None:
    body = ephemeral_runner("r1", namespace)
    body["metadata"]["finalizers"] = ["scaleset.test/hold"]
    obj = await client.create(EPHEMERAL_RUNNER, body)
    terminating = await client.delete(EPHEMERAL_RUNNER, obj.key)
    assert terminating is not None
    assert terminating.is_deleting
    with pytest.raises(Invalid):  # no new finalizers once deleting
        await client.patch_merge(
            EPHEMERAL_RUNNER,
            obj.key,
            {"metadata": {"finalizers": ["scaleset.test/hold", "another"]}},
        )
    ops = remove_finalizer(terminating, "scaleset.test/hold")
    assert ops is not None
    await client.patch_json(EPHEMERAL_RUNNER, obj.key, ops)
    with pytest.raises(NotFound):
        await client.get(EPHEMERAL_RUNNER, obj.key)


async def test_list_pages_and_selectors(client: KubeClient, namespace: str) -> None:
    for index in range(7):
        await client.create(
            CONFIG_MAP,
            {
                "metadata": {
                    "name": f"cm-{index}",
                    "namespace": namespace,
                    "labels": {"parity": "even" if index % 2 == 0 else "odd"},
                }
            },
        )
    page = await client.list_page(CONFIG_MAP, namespace=namespace, limit=3)
    assert len(page.items) == 3
    assert page.continue_token
    everything = await client.list(CONFIG_MAP, namespace=namespace, limit=3)
    names = {obj.name for obj in everything.items if obj.name.startswith("cm-")}
    assert names == {f"cm-{index}" for index in range(7)}
    assert everything.resource_version
    odd = await client.list(CONFIG_MAP, namespace=namespace, label_selector="parity=odd")
    assert {obj.name for obj in odd.items} == {"cm-1", "cm-3", "cm-5"}


async def test_access_recorder_names_every_verb_and_resource(
    kube_backend: KubeBackend, namespace: str
) -> None:
    async with make_client(kube_backend) as client:
        obj = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
        await client.get(EPHEMERAL_RUNNER, obj.key)
        await client.list(EPHEMERAL_RUNNER, namespace=namespace)
        await client.patch_merge(
            EPHEMERAL_RUNNER, obj.key, {"status": {"ready": True}}, status=True
        )
        await client.delete(EPHEMERAL_RUNNER, obj.key)
        with pytest.raises(NotFound):
            await client.get(POD, ObjectKey(namespace, "nope"))
        group = "actions.github.com"
        assert client.access.accesses() == {
            Access("create", group, "ephemeralrunners", namespace),
            Access("get", group, "ephemeralrunners", namespace),
            Access("list", group, "ephemeralrunners", namespace),
            Access("patch", group, "ephemeralrunners", namespace, "status"),
            Access("delete", group, "ephemeralrunners", namespace),
            Access("get", "", "pods", namespace),
        }
        rules = client.access.verbs_by_resource()
        assert rules[(namespace, group, "ephemeralrunners/status")] == {"patch"}


async def test_strategic_merge_is_never_sent(kube_backend: KubeBackend, namespace: str) -> None:
    seen: list[str] = []

    async def record(request: Any) -> None:
        seen.append(request.headers.get("content-type", ""))

    from scaleset.devtools.transports import RequestHook

    hook = RequestHook("PATCH", r"/ephemeralrunners/", record, times=10)
    async with make_client(kube_backend, hooks=[hook]) as client:
        obj = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
        obj = await client.patch_merge(
            EPHEMERAL_RUNNER, obj.key, {"metadata": {"labels": {"a": "b"}}}
        )
        obj = await client.patch_with_lock(obj, {"status": {"phase": "Pending"}}, status=True)
        ops = add_finalizer(obj, "f")
        assert ops is not None
        await client.patch_json(EPHEMERAL_RUNNER, obj.key, ops)
    assert seen == [
        "application/merge-patch+json",
        "application/merge-patch+json",
        "application/json-patch+json",
    ]


async def test_a_hundred_open_watches_leave_requests_their_connections(
    kube_backend: KubeBackend, namespace: str
) -> None:
    # Over HTTP/1.1 each open watch holds a connection. 110 watches (namespaces x kinds) in the
    # pool of requests would leave a get nothing but a pool timeout; watches have their own pool.
    settings = replace(FAST, timeout=5.0)
    async with make_client(kube_backend, settings=settings) as kube:
        assert kube.settings.max_connections == 100
        version = (await kube.list(CONFIG_MAP, namespace=namespace)).resource_version
        async with contextlib.AsyncExitStack() as watches:
            for index in range(110):
                await watches.enter_async_context(
                    kube.watch(
                        CONFIG_MAP,
                        namespace=namespace,
                        resource_version=version,
                        label_selector=f"watch={index}",
                        timeout_seconds=120,
                    )
                )
            created = await kube.create(
                CONFIG_MAP, {"metadata": {"name": "c", "namespace": namespace}}
            )
            assert (await kube.get(CONFIG_MAP, created.key)).uid == created.uid


async def test_throttled_requests_take_turns_across_lanes(
    kube_backend: KubeBackend, namespace: str
) -> None:
    # A controller that queues many requests at once (the runner set creating a scale-up's
    # runners) must not hold another controller's (the runner controller starting them) behind
    # every one of its own: while requests wait for the QPS, the lanes take turns.
    clock = ManualClock()
    in_flight = InFlight()
    settings = replace(FAST, qps=10.0, burst=1)
    async with make_client(
        kube_backend, settings=settings, clock=clock, in_flight=in_flight
    ) as kube:
        done: dict[str, float] = {}

        async def create(lane: str, name: str) -> None:
            with in_lane(lane):
                await kube.create(CONFIG_MAP, {"metadata": {"name": name, "namespace": namespace}})
            done[name] = clock.monotonic()

        tasks = [asyncio.create_task(create("sets", f"s{i}")) for i in range(8)]
        await eventually(lambda: kube.waiting_for_token == 7, what="seven creations waiting")
        tasks += [asyncio.create_task(create("runners", f"r{i}")) for i in range(2)]
        await eventually(lambda: kube.waiting_for_token == 9, what="two more in another lane")
        await run_until(
            clock, lambda: len(done) == 10, in_flight=in_flight, limit=5.0, what="all sent"
        )
        await asyncio.gather(*tasks)
        # one queue: r0 and r1 after s7; in turns: s1, r0, s2, r1, s3, ...
        assert max(done["r0"], done["r1"]) < done["s3"] < done["s7"]


async def test_watches_are_not_rate_limited(kube_backend: KubeBackend, namespace: str) -> None:
    # client-go never throttles Watch: a re-opened watch must not queue behind reconcile traffic.
    clock = ManualClock()  # never advanced: a throttled request would wait forever
    async with make_client(
        kube_backend, settings=replace(FAST, qps=1.0, burst=1), clock=clock
    ) as kube:
        version = (await kube.list(CONFIG_MAP, namespace=namespace)).resource_version  # the token
        opened = kube.watch(
            CONFIG_MAP, namespace=namespace, resource_version=version, timeout_seconds=60
        )
        async with asyncio.timeout(10.0):
            async with opened:
                pass
        assert clock.sleepers == 0
