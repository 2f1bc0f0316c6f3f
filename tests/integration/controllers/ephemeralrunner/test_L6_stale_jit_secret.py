"""L5/L6: a runner's JIT Secret never outlives the registration it holds (soak seed 2's leak).

The sequence of soak seed 2 (1,000 jobs), where one registration was left without a runner: a
controller registers a runner and writes its JIT Secret; the status write-ahead that records the
registration is answered 500; GitHub goes down; the controller is killed before it retries. Its
successor does not know the Secret exists (the status mentions no registration), so once GitHub
is back it registers again and is told the name is taken. It used to remove that registration,
make a new one and overwrite the Secret with the new JIT config — and when that overwrite failed
too (2 % of the soak's writes do), the Secret still held the removed registration: the runner
recorded its id, its pod got a JIT config GitHub no longer knew (the runner process is refused:
a zombie), and the new registration was left with no runner pointing at it. Deleting the runner
(its registration gone, or scaled down) removed the recorded id — RunnerNotFound, taken as done —
and the live registration leaked. The registration pass could not call it an orphan while the
runner existed, and no pass came after the runner's deletion before the soak was judged.

Now the successor reads the Secret when GitHub says the name is taken: it holds that very
registration, which no pod ever had (no write-ahead), so it is used; a Secret holding another
registration is deleted before anything registers again, never overwritten.
"""

from __future__ import annotations

import base64

import httpx2
from tests.integration.controllers.ephemeralrunner.world import World
from tests.support.waiting import eventually

from scaleset.api import keys, naming
from scaleset.devtools.transports import RequestHook
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.runner import RunnerPhase
from scaleset.kube.resources import EPHEMERAL_RUNNER


async def injected_500(_: httpx2.Request) -> None:
    raise httpx2.ConnectError("injected: the write did not reach the API server")


async def test_L6_a_write_ahead_500_an_outage_and_a_kill_leave_no_registration_behind(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-seed-2"
    write_ahead = RequestHook("PATCH", rf"/ephemeralrunners/{name}/status$", injected_500, 10**6)
    async with world.controller(identity="killed", hooks=[write_ahead]):
        await world.create_runner(name)
        await world.until(lambda: write_ahead.fired > 0, "the write-ahead answered 500")
        [first] = [r for r in world.registrations(name) if r.registered]
        outage = world.fake.control.faults.unavailable(None)
        # killed now: the registration and its Secret exist, the status says nothing of them
    assert await world.secret(name) is not None
    runner = await world.runner(name)
    assert runner is not None
    assert runner.status.runner_id == 0

    # the write that would overwrite the Secret with a new registration's JIT config fails
    overwrite = RequestHook(
        "PATCH", rf"/secrets/{naming.jit_secret_name(name)}$", injected_500, times=1
    )
    async with world.controller(identity="successor", hooks=[overwrite]):
        refused = len(world.fake.control.requests_to("/", None))
        await world.until(
            lambda: len(world.fake.control.requests_to("/", None)) > refused + 3,
            "the successor refused by GitHub",
        )
        world.fake.control.faults.remove(outage)
        came_up = {RunnerPhase.LISTENING, RunnerPhase.REGISTRATION_DELETED}
        await world.until(
            lambda: bool(came_up & set(world.phases.of(name))), "the runner up, or refused"
        )
        assert RunnerPhase.REGISTRATION_DELETED not in world.phases.of(name)
        runner = await world.runner_where(name, lambda r: r.status.runner_id > 0, "runner id")

        async def one_live_registration() -> bool:
            live = [r.id for r in world.registrations(name) if r.registered]
            return live == [runner.status.runner_id]

        await eventually(one_live_registration, within=30.0, what="one live registration")
        assert runner.status.runner_id == first.id  # the registration no pod ever had
        secret = await world.secret(name)
        if secret is not None:  # deleted once the runner started (L5); else it holds that id
            data = secret.raw["data"]
            assert base64.b64decode(data[keys.JIT_RUNNER_ID_KEY]).decode() == str(first.id)

        # scaled down: the runner is deleted, and its registration with it
        await world.client.delete(EPHEMERAL_RUNNER, world.key(name))
        await world.gone(name)
    assert [r.id for r in world.registrations(name) if r.registered] == []
    assert world.connections(name) == 1  # one process, one JIT config
