"""The runner proxy Secret (ARC §2.2 step 6, §9.2 "Proxy Secret created for runners and deleted
with the ERS"): built from the set's proxy with the credentials Secret, named on every runner,
rewritten when the proxy changes, deleted with the set."""

from __future__ import annotations

import base64

from tests.integration.controllers.ephemeralrunnerset.world import SET, Finalizers, World
from tests.plugins.secret_guard import register_secret

from scaleset.api.naming import ephemeral_runner_set_proxy_secret_name
from scaleset.kube import NotFound
from scaleset.kube.resources import EPHEMERAL_RUNNER_SET, SECRET

PASSWORD = "proxyPassw0rd-for-runners"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def test_the_runner_proxy_secret_lives_and_dies_with_the_set(
    world: World, finalizers: Finalizers
) -> None:
    register_secret(PASSWORD)
    await world.client.create(
        SECRET,
        {
            "metadata": {"name": "proxy-auth"},
            "data": {"username": b64("me"), "password": b64(PASSWORD)},
        },
        namespace=world.namespace,
    )
    body = world.set_body(replicas=1, patch_id=1)
    body["spec"]["ephemeralRunnerSpec"]["proxy"] = {
        "http": {"url": "http://proxy.internal:3128", "credentialSecretRef": "proxy-auth"},
        "https": {"url": "http://proxy.internal:3129"},
        "noProxy": ["example.com", ".svc"],
    }
    await world.client.create(EPHEMERAL_RUNNER_SET, body)
    name = ephemeral_runner_set_proxy_secret_name(SET, world.namespace)
    async with world.controller():
        await world.count_is(1)
        secret = await world.client.get(SECRET, world.key(name))
        data = {k: base64.b64decode(v).decode() for k, v in secret.raw["data"].items()}
        assert data == {
            "http_proxy": f"http://me:{PASSWORD}@proxy.internal:3128",
            "https_proxy": "http://proxy.internal:3129",
            "no_proxy": "example.com,.svc",
        }
        (runner,) = await world.runners()
        assert runner.spec["proxySecretRef"] == name
        await world.client.delete(EPHEMERAL_RUNNER_SET, world.key(SET))

        async def gone() -> bool:
            try:
                await world.client.get(SECRET, world.key(name))
            except NotFound:
                return await world.runner_set() is None
            return False

        await world.until(gone, "the proxy Secret and the set gone")
