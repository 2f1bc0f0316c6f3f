"""Crash consistency: a manager killed with SIGKILL at any point, replaced by a fresh process
with empty caches, converges to exactly the state an uninterrupted run reaches (lifecycle L7)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from tests.integration.runtime.replicator import CHILD, parent_body
from tests.plugins.kube_backends import KubeBackend
from tests.support.managers import Process, processes
from tests.support.waiting import eventually

from scaleset.kube.client import KubeClient
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CONFIG_MAP

PARENTS = {"p1": 4, "p2": 2}


async def children(client: KubeClient, namespace: str) -> dict[str, int]:
    listed = await client.list(CONFIG_MAP, namespace=namespace, label_selector=f"{CHILD}=true")
    counts = dict.fromkeys(PARENTS, 0)
    for child in listed.items:
        owner = child.controller_owner
        if owner is not None and not child.is_deleting and owner.name in counts:
            counts[owner.name] += 1
    return counts


def replicator_argv(kubeconfig: Path, namespace: str, identity: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tests.integration.runtime.replicator",
        "--kubeconfig",
        str(kubeconfig),
        "--namespace",
        namespace,
        "--identity",
        identity,
        "--lease-duration",
        "2",
    ]


@pytest.mark.parametrize("seed", [1, 2])
async def test_a_fresh_manager_after_kill_9_converges_to_the_same_state(
    kube_backend: KubeBackend, client: KubeClient, namespace: str, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    desired = dict(PARENTS)
    for name, replicas in desired.items():
        await client.create(CONFIG_MAP, parent_body(name, namespace, replicas))
    async with processes() as started:
        for round_ in range(3):
            process = await Process.start(
                replicator_argv(kube_backend.kubeconfig_path, namespace, f"r{round_}"),
                tmp_path / f"round-{round_}.log",
                {},
            )
            started.append(process)
            # Kill at a random point: after the process has made between 0 and N-1 of the
            # changes still needed for one parent (or right after it started, for 0).
            target = rng.choice(list(desired))
            have = (await children(client, namespace))[target]
            needed = abs(desired[target] - have)
            steps = rng.randint(0, max(0, needed - 1))

            async def progressed(
                target: str = target, have: int = have, steps: int = steps
            ) -> bool:
                now = (await children(client, namespace))[target]
                return abs(now - have) >= steps

            await eventually(progressed, within=30.0, what=f"{steps} changes in round {round_}")
            process.kill()
            assert await process.wait() == -9
            # Change what is wanted while nobody runs, so the next process must also delete.
            target = rng.choice(list(desired))
            desired[target] = rng.randint(0, 5)
            change = {"data": {"replicas": str(desired[target])}}
            await client.patch_merge(CONFIG_MAP, ObjectKey(namespace, target), change)
        final = await Process.start(
            replicator_argv(kube_backend.kubeconfig_path, namespace, "final"),
            tmp_path / "final.log",
            {},
        )
        started.append(final)

        async def converged() -> bool:
            return await children(client, namespace) == desired

        await eventually(converged, within=60.0, what=f"children == {desired}")
        # And it stays there: a fresh process makes no further change.
        listed = await client.list(CONFIG_MAP, namespace=namespace, label_selector=f"{CHILD}=true")
        before = {c.name for c in listed.items if not c.is_deleting}
        final.terminate()
        assert await final.wait() == 0
        again = await Process.start(
            replicator_argv(kube_backend.kubeconfig_path, namespace, "again"),
            tmp_path / "again.log",
            {},
        )
        started.append(again)
        await eventually(
            lambda: '"controller started"' in again.output(), within=30.0, what="again started"
        )
        await eventually(converged, within=30.0, what="still converged")
        listed = await client.list(CONFIG_MAP, namespace=namespace, label_selector=f"{CHILD}=true")
        assert {c.name for c in listed.items if not c.is_deleting} == before
