"""A Conflict says what happened: the object changed since it was read. A guarded finalizer
edit whose JSON patch ``test`` fails comes back from the server as a 422 with "the server
rejected our request due to an error in our request" (both backends); the client turns it into
a Conflict, and that Conflict must read like one, not like a rejected request."""

from __future__ import annotations

import pytest
from tests.support.kube import ephemeral_runner

from scaleset.kube.client import KubeClient
from scaleset.kube.errors import Conflict
from scaleset.kube.patches import add_finalizer, remove_finalizer
from scaleset.kube.resources import EPHEMERAL_RUNNER

pytestmark = pytest.mark.usefixtures("actions_crds")

CHANGED = "the object has been modified"


async def test_a_failed_patch_test_reads_as_a_conflict(client: KubeClient, namespace: str) -> None:
    obj = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r1", namespace))
    ops = add_finalizer(obj, "ours")
    assert ops is not None
    obj = await client.patch_json(EPHEMERAL_RUNNER, obj.key, ops)
    removal = remove_finalizer(obj, "ours")
    assert removal is not None
    await client.patch_json(EPHEMERAL_RUNNER, obj.key, removal)
    with pytest.raises(Conflict) as caught:
        await client.patch_json(EPHEMERAL_RUNNER, obj.key, removal)  # now stale
    error = caught.value
    assert (error.code, error.reason) == (409, "Conflict")
    assert "rejected our request" not in str(error)
    assert error.message.startswith(
        'Operation cannot be fulfilled on ephemeralrunners.actions.github.com "r1": '
    )
    assert CHANGED in error.message


async def test_a_stale_resource_version_reads_the_same_on_both_backends(
    client: KubeClient, namespace: str
) -> None:
    read = await client.create(EPHEMERAL_RUNNER, ephemeral_runner("r2", namespace))
    await client.patch_with_lock(read, {"status": {"phase": "Pending"}}, status=True)
    with pytest.raises(Conflict) as caught:
        await client.patch_with_lock(read, {"status": {"phase": "Running"}}, status=True)
    assert caught.value.message == (
        'Operation cannot be fulfilled on ephemeralrunners.actions.github.com "r2": '
        "the object has been modified; please apply your changes to the latest version and "
        "try again"
    )
