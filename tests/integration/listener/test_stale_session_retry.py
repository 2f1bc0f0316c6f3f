"""Regressions found by the chaos soak (issue 20, ``scaleset demo --chaos soak``).

A restarted listener whose own session cannot be reached (GitHub answers 503 beyond the client's
retries, as in an outage) first kept no record of that session and waited in 409 back-off until
GitHub expired it (``--jobs 120 --duration 40``, seed 1); then, once it retried, it still gave
the session up at the first failed resume and deleted it as soon as GitHub was back, dropping
the job events queued in it (500-job seeds 1 and 6: hung runners of those jobs lived to the end
of the run). It must try the resume again while the failure is transient, and never delete the
session it can still resume.
"""

from __future__ import annotations

import pytest
from tests.integration.listener.world import world_on
from tests.plugins.kube_backends import KubeBackend

from scaleset.embedded.actions.faults import Surface
from scaleset.kube import KubeClient

pytestmark = pytest.mark.usefixtures("actions_crds")


async def test_L7_our_session_unreachable_at_restart_is_resumed_once_github_is_back(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    async with world_on(kube_backend, client, namespace) as world:
        first = world.start()
        await world.wait(lambda: len(world.sessions()) == 1, "the first session")
        old_session = world.sessions()[0].session_id
        await world.wait(lambda: bool(world.ers_patches()), "the first listener's desired count")
        await first.kill()
        # More 503s than the client's own retries (5): the first resume gives up, the next ones
        # too, until GitHub answers again.
        world.fake.control.faults.unavailable(
            12, surface=Surface.ACTIONS, method="PATCH", path_contains="sessions"
        )
        world.fake.control.clear_requests()

        second = world.start()
        try:
            await world.wait(
                lambda: (
                    world.counter("scaleset_listener_session_events_total", {"event": "resumed"})
                    == 1
                ),
                "our session resumed once GitHub answers",
            )
            calls = [(r.method, r.status) for r in world.fake.control.requests_to("/sessions")]
            assert calls.count(("PATCH", 503)) == 12
            assert calls[-1] == ("PATCH", 200)
            # never deleted, never replaced: the job events queued in it are still there
            assert not [c for c in calls if c[0] in ("DELETE", "POST")], calls
            assert [s.session_id for s in world.sessions()] == [old_session]
            state = await world.state()
            assert state.session_replaced_at == 0
        finally:
            await second.stop()


async def test_L7_a_session_github_no_longer_knows_is_replaced_and_said_so(
    kube_backend: KubeBackend, client: KubeClient, namespace: str
) -> None:
    """Patience is for transient failures only: a 404 on the resume means GitHub ended the
    session (its events with it); a new one is created at once and the replacement noted for
    the registration pass (L6)."""
    async with world_on(kube_backend, client, namespace) as world:
        first = world.start()
        await world.wait(lambda: len(world.sessions()) == 1, "the first session")
        old_session = world.sessions()[0].session_id
        await world.wait(lambda: bool(world.ers_patches()), "the first listener's desired count")
        await first.kill()
        assert world.fake.control.expire_session(world.scale_set_id)

        second = world.start()
        try:
            await world.wait(
                lambda: [s.session_id for s in world.sessions()] not in ([], [old_session]),
                "a new session",
            )
            await world.wait(
                lambda: (
                    world.counter("scaleset_listener_session_events_total", {"event": "created"})
                    == 1
                ),
                "the new session counted",
            )

            async def replacement_noted() -> bool:
                return bool((await world.state()).session_replaced_at)

            # the counter moves just before the state write that notes the replacement
            await world.wait(replacement_noted, "sessionReplacedAt in the stored state")
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
