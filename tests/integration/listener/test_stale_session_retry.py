"""Regression found by the chaos soak (issue 20, ``scaleset demo --chaos soak``, fault
``stale-session-restart``; seen on seed 1 of ``--jobs 120 --duration 40``): a restarted listener
whose DELETE of its own stale session fails (GitHub answers 503 beyond the client's retries, as
in an outage) kept no record of that
session and waited in 409 back-off until GitHub expired it (minutes on github.com; the jobs
queued meanwhile). It must retry the DELETE of its own session while creating one conflicts."""

from __future__ import annotations

import pytest
from tests.integration.listener.world import world_on
from tests.plugins.kube_backends import KubeBackend

from scaleset.embedded.actions.faults import Surface
from scaleset.kube import KubeClient

pytestmark = pytest.mark.usefixtures("actions_crds")


async def test_L7_our_session_unreachable_at_restart_is_tried_again_not_waited_out(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace) as world:
        first = world.start()
        await world.wait(lambda: len(world.sessions()) == 1, "the first session")
        old_session = world.sessions()[0].session_id
        await world.wait(lambda: bool(world.ers_patches()), "the first listener's desired count")
        await first.kill()
        # More 503s than the client's own retries: the first resume and delete both give up.
        for method in ("PATCH", "DELETE"):
            world.fake.control.faults.unavailable(
                5, surface=Surface.ACTIONS, method=method, path_contains="sessions"
            )
        world.fake.control.faults.unavailable(
            2, surface=Surface.ACTIONS, method="PATCH", path_contains="sessions"
        )
        world.fake.control.clear_requests()

        second = world.start()
        try:
            await world.wait(
                lambda: (
                    world.counter("scaleset_listener_session_events_total", {"event": "resumed"})
                    == 1
                ),
                "our session resumed after the conflict",
            )
            calls = [(r.method, r.status) for r in world.fake.control.requests_to("/sessions")]
            assert ("POST", 409) in calls  # GitHub still held it when creating one
            assert calls[-1] == ("PATCH", 200)  # tried again after the conflict: resumed
            # The service never expired it: only our retry got it back.
            assert [s.session_id for s in world.sessions()] == [old_session]
        finally:
            await second.stop()


async def test_L7_a_409_on_the_unconditional_runner_set_patch_is_retried_not_an_exit(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """Found by the soak (seed 2 of the full ``--chaos soak``): the API server answered one of
    the listener's EphemeralRunnerSet merge patches 409 (2 % of writes fail in the soak) and the
    listener exited ("cannot write EphemeralRunnerSet"); its pod came back only after the
    recreation back-off, and the events of its old session were lost with it. The patch carries
    no resourceVersion, so a 409 is the server's transient conflict: retry it."""
    if kube_backend.server is None:
        pytest.skip("needs the embedded API server's fault hooks")
    async with world_on(kube_backend, client, namespace) as world:
        kube_backend.server.faults.conflict_next(
            3, verb="patch", resource="ephemeralrunnersets", namespace=namespace
        )
        running = world.start()
        try:
            await world.wait(lambda: len(world.sessions()) == 1, "a session")
            await world.wait(
                lambda: world.counter("scaleset_listener_ers_patches_total") >= 1,
                "a desired count written after the conflicts",
            )
            assert not running.task.done()  # still serving, not exited
            state = await world.state()
            assert state.session_id == world.sessions()[0].session_id
        finally:
            await running.stop()
