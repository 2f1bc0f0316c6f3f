"""A process that died between creating a runner's JIT Secret and the status write that records
its registration (the write-ahead of the first pod) left a Secret the status does not mention.

The next process does not read the JIT Secret of a runner whose status records no registration
(``may_have_secret``: one GET fewer per new runner), so it registers again: GitHub answers that
the name is taken, and then it reads the Secret. It holds that very registration, whose JIT
config no pod ever had (no pod without the write-ahead), so the runner goes on with it (a Secret
holding another registration would be deleted first: ``test_L6_stale_jit_secret``). The runner
ends with exactly one live registration, the one its status, its Secret and its pod use.
"""

from __future__ import annotations

import base64

from tests.integration.controllers.ephemeralrunner.world import World
from tests.support.waiting import eventually

from scaleset.api import EphemeralRunner, keys
from scaleset.controllers.ephemeralrunner.pod import jit_secret
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.embedded.runner import RunnerPhase
from scaleset.github.models import JitRunnerConfig
from scaleset.kube.resources import SECRET


async def test_a_jit_secret_left_before_the_status_write_is_replaced_not_leaked(
    world: World, kubelet: SimulatedKubelet
) -> None:
    name = "arc-runner-crash-window"
    created = await world.create_runner(name)
    model = EphemeralRunner.model_validate(created.raw)
    # what the dead process did: register, and store the JIT config in the Secret
    first = world.fake.control.generate_jit_config(world.scale_set_id, name)
    config = JitRunnerConfig.model_validate(
        {
            "runner": {"id": first.id, "name": name, "runnerScaleSetId": world.scale_set_id},
            "encodedJITConfig": first.encoded_jit_config,
        }
    )
    await world.client.create(SECRET, jit_secret(model, config), namespace=world.namespace)

    async with world.controller():
        await world.until(
            lambda: RunnerPhase.LISTENING in world.phases.of(name), "the runner listening"
        )
        runner = await world.runner_where(name, lambda r: r.status.runner_id > 0, "runner id")

        async def one_live_registration() -> bool:
            live = [r for r in world.registrations(name) if r.registered]
            return [r.id for r in live] == [runner.status.runner_id]

        await eventually(one_live_registration, within=30.0, what="one live registration")
    secret = await world.secret(name)
    if secret is not None:  # deleted once the runner started (L5); else it holds the new id
        data = secret.raw["data"]
        assert base64.b64decode(data[keys.JIT_RUNNER_ID_KEY]).decode() == str(
            runner.status.runner_id
        )
    assert world.connections(name) == 1  # one process, one JIT config
