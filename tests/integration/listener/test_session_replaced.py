"""The listener notes a replaced message session in its state (``sessionReplacedAt``), so the
registration pass runs at once (L6): only when it had a session and had to create a new one (the
job events queued in the old one may be lost), never on a first start or a resumed session."""

from __future__ import annotations

import pytest
from tests.integration.listener.world import RUNNER_SET, job_message, started_job, world_on
from tests.plugins.kube_backends import KubeBackend

from scaleset.api.keys import LISTENER_STATE_ANNOTATION
from scaleset.api.listener_state import ListenerState
from scaleset.kube import KubeClient

pytestmark = pytest.mark.usefixtures("actions_crds")


async def test_L7_only_a_replaced_session_is_noted_in_the_state(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace) as world:

        def counter(event: str) -> float:
            """Session events of the listener last started (each has its own metrics)."""
            return world.counter("scaleset_listener_session_events_total", {"event": event})

        first = world.start()
        await world.wait(lambda: len(world.sessions()) == 1, "the first session")
        first_session = world.sessions()[0].session_id
        await world.wait(lambda: bool(world.ers_patches()), "the first listener's desired count")
        assert (await world.state()).session_replaced_at == 0, "a first start replaces nothing"
        await first.kill()

        second = world.start()
        try:
            await world.wait(lambda: counter("resumed") == 1, "the session resumed")
            assert counter("created") == 0
            patches = len(world.ers_patches())
            await world.wait(lambda: len(world.ers_patches()) > patches, "a patch after resume")
            state = await world.state()
            assert state.session_id == first_session
            assert state.session_replaced_at == 0, "a resumed session replaces nothing"
        finally:
            await second.kill()

        world.fake.control.expire_session(world.scale_set_id)  # expired while it was away
        third = world.start()
        try:
            await world.wait(lambda: counter("created") == 1, "a new session")

            async def noted() -> bool:
                return (await world.state()).session_replaced_at > 0

            await world.wait(noted, "the replacement noted")
            state = await world.state()
            assert state.session_id not in ("", first_session)
            assert state.session_replaced_at >= int(world.clock.time()) - 60

            # lost while running (the service expired it): noted again, later
            before = state.session_replaced_at
            world.clock.advance(5.0)
            world.fake.control.expire_session(world.scale_set_id)
            await world.wait(lambda: counter("created") == 2, "a third session")

            async def noted_again() -> bool:
                return (await world.state()).session_replaced_at > before

            await world.wait(noted_again, "the second replacement noted")
        finally:
            await third.stop()


async def test_L7_a_new_session_is_recorded_with_message_id_zero(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """Issue 25, item 6: the write that records a new session carried the old session's last
    message id. Nothing of a new session has been acknowledged, and whether message ids carry
    over between sessions is not known: a listener that resumed the new session
    from that write would poll it with an id that may skip its first messages. The scaleset
    library's listener polls every new session from 0 ("omitting it returns the first
    available message"); so is a new session recorded."""
    async with world_on(kube_backend, client, namespace) as world:
        await world.add_runner("r1")
        first = world.start()
        await world.wait(lambda: len(world.sessions()) == 1, "the first session")
        world.inject_messages(job_message(900, [started_job("r1")], assigned=1, running=1))

        async def acknowledged_900() -> bool:
            return (await world.state()).last_message_id == 900

        await world.wait(acknowledged_900, "message 900 acknowledged and recorded")
        await first.kill()

        world.fake.control.expire_session(world.scale_set_id)  # expired while it was away
        recorded = len(world.sent.patches(f"/ephemeralrunnersets/{RUNNER_SET}"))
        second = world.start()
        try:
            await world.wait(
                lambda: (
                    world.counter("scaleset_listener_session_events_total", {"event": "created"})
                    == 1
                ),
                "a new session",
            )
            [session] = world.sessions()

            def first_write_of_the_new_session() -> ListenerState | None:
                for body in world.sent.patches(f"/ephemeralrunnersets/{RUNNER_SET}")[recorded:]:
                    annotations = body.get("metadata", {}).get("annotations", {})
                    state = ListenerState.from_annotation(
                        annotations.get(LISTENER_STATE_ANNOTATION)
                    )
                    if state.session_id == session.session_id:
                        return state
                return None

            await world.wait(
                lambda: first_write_of_the_new_session() is not None, "the new session recorded"
            )
            state = first_write_of_the_new_session()
            assert state is not None
            assert state.last_message_id == 0
        finally:
            await second.stop()
