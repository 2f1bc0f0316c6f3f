"""A listener that cannot run, on both backends: the back-off that replaces ARC's instant
re-creation (ARC #4656 crash-loops on a deterministic 401/403/404), kept in the listener's status
so a controller restart neither resets nor skips it (L7); the reason shown on the listener as a
condition and an Event (L8, L9); and credentials rotated in the GitHub Secret reaching the
config Secret and the listener at once."""

from __future__ import annotations

from datetime import datetime

from tests.integration.controllers.autoscalinglistener.listener_process import (
    ListenerRecord,
    listener_program,
)
from tests.integration.controllers.autoscalinglistener.world import (
    GITHUB_SECRET,
    LISTENER_IMAGE,
    PAT,
    World,
)
from tests.plugins.secret_guard import register_secret

from scaleset.api import keys
from scaleset.embedded.kubelet import ContainerRun, Program
from scaleset.kube import KubeObject, ObjectKey
from scaleset.kube.resources import SECRET

REVOKED_PAT = "ghp_revokedListenerToken0123456789abcdef"


def exits_with(code: int) -> Program:
    """A listener that gives up at once, as ours does on a refused credential (exit 3)."""

    async def program(run: ContainerRun) -> int:
        return code

    return program


async def status_of(world: World) -> dict[str, object]:
    listener = await world.listener()
    assert listener is not None
    return dict(listener.status.model_dump(by_alias=True))


async def test_L7_the_back_off_survives_a_controller_restart(world: World) -> None:
    async with world.kubelet(exits_with(3)):
        async with world.controller() as first:
            await world.create_listener()

            async def two_failures() -> bool:
                listener = await world.listener()
                return listener is not None and listener.status.pod_failures >= 2

            await world.until_still(two_failures, "two failures (the second one backs off)")
        listener = await world.listener()
        assert listener is not None
        assert listener.status.pod_failures == 2
        next_at = listener.status.next_pod_attempt_time
        assert next_at is not None
        assert (next_at - world.clock.now()).total_seconds() == 10.0
        assert first.decisions("ListenerPodFailed") == 2
        assert listener.status.last_pod_failure is not None
        assert listener.status.last_pod_failure.reason == "GitHubRefused"

        async with world.controller(identity="controller-2") as second:

            async def reconciled() -> bool:
                # the listener, its ServiceAccount and Secrets come from the caches (the scale
                # set's GitHub Secret from its watch, or a GET before that watch has listed);
                # the pod the cache does not show is confirmed with a GET
                used = {(a.verb, a.resource) for a in second.client.access.accesses()}
                return ("get", "pods") in used

            await world.until_still(reconciled, "the restarted controller's first reconcile")
            assert await world.pod() is None, "no pod before nextPodAttemptTime"

            created_at: list[datetime] = []

            async def recreated() -> bool:
                if await world.pod() is not None or second.decisions("ListenerPodCreated"):
                    created_at.append(world.clock.now())
                    return True
                return False

            await world.until(recreated, "the pod after the back-off", max_step=1.0)
            assert created_at[0] >= next_at

            async def third_failure() -> bool:
                listener = await world.listener()
                return listener is not None and listener.status.pod_failures == 3

            await world.until_still(third_failure, "the third failure")
            listener = await world.listener()
            assert listener is not None
            failure = listener.status.last_pod_failure
            assert failure is not None
            assert failure.time is not None
            assert listener.status.next_pod_attempt_time is not None
            assert (listener.status.next_pod_attempt_time - failure.time).total_seconds() == 20.0


async def test_L8_refused_credentials_back_off_say_why_and_rotated_ones_are_tried_at_once(
    world: World,
) -> None:
    """ARC #4656: a deterministic 401 makes ARC recreate its listener at once, forever."""
    await world.github_secret(register_secret(REVOKED_PAT))
    record = ListenerRecord()
    async with (
        world.kubelet(listener_program(world.backend, world.clock, record)),
        world.controller() as controller,
    ):
        await world.create_listener()
        refused = await world.condition_where(
            "ListenerRunning",
            lambda c: c["reason"] == "BackOff",
            "the listener backing off after refused credentials",
        )
        assert "GitHubRefused" in refused["message"]
        start = world.clock.now()

        async def ten_minutes() -> bool:
            return (world.clock.now() - start).total_seconds() >= 600

        await world.until(ten_minutes, "ten minutes of crash-looping", max_step=30.0)
        created = controller.decisions("ListenerPodCreated")
        assert 3 <= created <= 8, f"{created} pods in ten minutes (ARC: one per exit)"
        assert all(code == 3 for code in record.exits)
        await world.event_where(
            lambda _, reason, __: reason == "ListenerPodFailed", "ListenerPodFailed"
        )
        events = await world.events()
        failed = [msg for kind, reason, msg in events if reason == "ListenerPodFailed"]
        assert all(kind == "Warning" for kind, reason, _ in events if reason == "ListenerPodFailed")
        assert "GitHubRefused" in failed[-1]
        assert REVOKED_PAT not in str(events)

        listener = await world.listener()
        assert listener is not None
        assert listener.status.last_pod_failure is not None
        refused_hash = listener.status.last_pod_failure.pod_hash
        await world.github_secret(PAT)  # rotated: the config changes, the back-off yields

        async def rewritten() -> bool:
            return (await world.config_json())["github_token"] == PAT

        await world.until(rewritten, "the rotated token in the config Secret")
        running = await world.pod_where(
            lambda pod: (
                pod.annotations.get(keys.LISTENER_POD_HASH_ANNOTATION) != refused_hash
                and _state(pod) == "running"
            ),
            "a listener pod with the rotated config, running",
        )
        healthy = await world.condition_where(
            "ListenerRunning", lambda c: c["status"] == "True", "ListenerRunning=True"
        )
        assert healthy["reason"] == "Running"

        async def reset() -> bool:
            listener = await world.listener()
            return listener is not None and listener.status.pod_failures == 0

        await world.until(reset, "the failure count reset after a healthy period")
        # the decision is counted once its status write has returned to the controller, which
        # may be just after this test reads the reset from the server
        await world.until_still(
            lambda: controller.decisions("ListenerHealthy") >= 1, "ListenerHealthy counted"
        )
        assert controller.decisions("ListenerHealthy") == 1
        pod = await world.pod()
        assert pod is not None
        assert pod.uid == running.uid


async def test_rotated_credentials_reach_the_config_secret_and_restart_the_listener(
    world: World,
) -> None:
    """The scale set's GitHub Secret is watched by name: the rotation reaches the listener on
    the watch's word, with no periodic resync and the controller settled before it (no
    reconcile in flight to catch it)."""
    rotated = register_secret("ghp_rotatedListenerToken0123456789abcdef")
    async with world.kubelet(), world.controller(resync=False) as controller:
        await world.create_listener()
        await world.settled(controller)
        first = await world.running_pod()
        before = await world.config_secret()
        assert before is not None
        await world.github_secret(rotated)

        async def rewritten() -> bool:
            return (await world.config_json())["github_token"] == rotated

        await world.until(rewritten, "the rotated token in the config Secret")
        second = await world.running_pod(other_than=first.uid)
        after = await world.config_secret()
        assert after is not None
        assert after.uid == before.uid, "rewritten in place"
        listener = await world.listener()
        assert listener is not None
        assert listener.status.pod_failures == 0, "a config change is not a failure"
        assert second.uid != first.uid
        await world.event_where(
            lambda _, reason, __: reason == "ConfigSecretUpdated", "ConfigSecretUpdated"
        )
        assert rotated not in str(await world.events())


async def test_L8_a_missing_github_secret_is_reported_and_the_listener_starts_once_it_exists(
    world: World,
) -> None:
    await world.client.delete(SECRET, ObjectKey(world.scale_set_namespace, GITHUB_SECRET))
    async with world.kubelet(), world.controller():
        await world.create_listener()
        configured = await world.condition_where(
            "Configured", lambda c: c["status"] == "False", "Configured=False"
        )
        assert configured["reason"] == "GitHubSecretMissing"
        assert "spec.githubConfigSecret" in configured["message"]
        assert await world.pod() is None
        await world.event_where(
            lambda kind, reason, _: (kind, reason) == ("Warning", "GitHubSecretMissing"),
            "a Warning Event naming the missing Secret",
        )

        await world.github_secret(PAT)
        await world.running_pod()
        await world.condition_where(
            "Configured", lambda c: c["status"] == "True", "Configured=True"
        )


async def test_L8_a_listener_image_that_cannot_be_pulled_is_reported(world: World) -> None:
    async with world.kubelet(missing_images=[LISTENER_IMAGE]), world.controller():
        await world.create_listener()
        waiting = await world.condition_where(
            "ListenerRunning",
            lambda c: c["reason"] in ("ErrImagePull", "ImagePullBackOff"),
            "the image pull failure on the listener",
        )
        assert waiting["status"] == "False"
        kind, _, _ = await world.event_where(
            lambda _, reason, __: reason in ("ErrImagePull", "ImagePullBackOff"),
            "a Warning Event about the image",
        )
        assert kind == "Warning"


def _state(pod: KubeObject) -> str:
    for status in pod.status.get("containerStatuses") or []:
        if status.get("name") == "listener":
            return next(iter(status.get("state") or {}), "")
    return ""


async def test_L7_a_listener_killed_from_outside_again_and_again_comes_back_each_time_at_once(
    world: World,
) -> None:
    """Four ``kill -9`` of a listener that had run 20 s each: four new pods with the clock
    standing still, no failure counted (counted, they made the soak's seed 15 wait 10, 20 and
    40 s for its listener while job events queued), each kill on record and in an Event.
    (Decisions are not counted here: a kill can land while the reconcile that created the pod
    is still in its rounds, and a reconcile announces a note once.)"""
    async with world.kubelet() as kubelet, world.controller():
        await world.create_listener()
        pod = await world.running_pod()
        for kill in range(1, 5):
            world.clock.advance(20.0)
            await kubelet.exit(world.namespace, pod.name, "listener", 137)
            killed = pod.uid
            successor: list[KubeObject] = []

            async def replaced(old: str = killed, found: list[KubeObject] = successor) -> bool:
                current = await world.pod()
                if current is not None and current.uid != old and _state(current) == "running":
                    found.append(current)
                    return True
                return False

            # the clock stands still: a back-off, however short, would never end
            await world.until_still(replaced, f"a new running listener pod after kill {kill}")
            pod = successor[0]
            listener = await world.listener()
            assert listener is not None
            assert listener.status.pod_failures == 0
            assert listener.status.next_pod_attempt_time is None
            failure = listener.status.last_pod_failure
            assert failure is not None
            assert (failure.pod_uid, failure.exit_code) == (killed, 137)
        _, _, message = await world.event_where(
            lambda _type, reason, message: (
                reason == "ListenerPodFailed" and "not counted" in message
            ),
            "the kill's Event",
        )
        assert "killed from outside after" in message
        assert "next pod at once" in message
