"""The Secrets a listener's config is made from (the scale set's GitHub config Secret and proxy
credential Secrets) are watched one by one while the listener exists: a rotated proxy
credential reaches the listener's proxy Secret on the watch's word, with no periodic resync,
and a deleted listener's watches stop."""

from __future__ import annotations

import base64

from tests.integration.controllers.autoscalinglistener.world import GITHUB_SECRET, World
from tests.plugins.secret_guard import register_secret

from scaleset.kube import ObjectKey
from scaleset.kube.resources import AUTOSCALING_LISTENER, SECRET


async def test_the_input_secrets_are_watched_while_the_listener_exists_and_rotate_at_once(
    world: World,
) -> None:
    first = register_secret("proxy-pass-first-0123")
    rotated = register_secret("proxy-pass-rotated-4567")
    auth = ObjectKey(world.scale_set_namespace, "proxy-auth")
    await world.client.create(
        SECRET,
        {
            "metadata": {"name": auth.name, "namespace": auth.namespace},
            "stringData": {"username": "proxy-user", "password": first},
        },
    )
    proxy = {"https": {"url": "http://proxy.example:3128", "credentialSecretRef": auth.name}}
    proxy_key = ObjectKey(world.namespace, f"{world.name}-proxy")

    async def https_proxy() -> str:
        secret = await world.get(SECRET, proxy_key)
        if secret is None:
            return ""
        return base64.b64decode(secret.raw["data"]["https_proxy"]).decode()

    async with world.kubelet(), world.controller(resync=False) as controller:
        await world.create_listener(proxy=proxy)
        await world.settled(controller)
        watches = controller.reconciler.input_secrets
        assert watches is not None
        github = ObjectKey(world.scale_set_namespace, GITHUB_SECRET)
        assert set(watches.watched) == {github, auth}
        assert await https_proxy() == f"http://proxy-user:{first}@proxy.example:3128"

        await world.client.patch_merge(SECRET, auth, {"stringData": {"password": rotated}})

        async def rewritten() -> bool:
            return await https_proxy() == f"http://proxy-user:{rotated}@proxy.example:3128"

        await world.until(rewritten, "the rotated proxy credential in the proxy Secret")
        await world.client.delete(AUTOSCALING_LISTENER, world.key())

        async def gone() -> bool:
            return await world.listener() is None and watches.watched == ()

        await world.until(gone, "the listener gone and its watches stopped")
