"""The listener notes a replaced message session in its state (``sessionReplacedAt``), so the
registration pass runs at once (L6): only when it had a session and had to create a new one (the
job events queued in the old one may be lost), never on a first start or a resumed session."""

from __future__ import annotations

import pytest
from tests.integration.listener.world import world_on
from tests.plugins.kube_backends import KubeBackend

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
