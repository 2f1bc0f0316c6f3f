"""A small test controller built only on ``scaleset.kube`` — the shape of the ERS controller.

A *parent* ConfigMap (label ``scaleset.test/parent=true``, ``data.replicas: N``) owns exactly N
*child* ConfigMaps, created with ``generateName`` (so a create is not idempotent) and tracked with
``Expectations`` (so a reconcile working from a cache that has not seen its own creates does not
create again). Run in-process (``add_replicator``) or as its own process (``python -m``), which
the crash-consistency and leader-election tests kill with SIGKILL.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from scaleset import logs
from scaleset.kube.client import ClientSettings, KubeClient
from scaleset.kube.errors import KubeError, NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import CONFIG_MAP
from scaleset.runtime.controller import Controller, Result
from scaleset.runtime.expectations import Expectations, observe_owned
from scaleset.runtime.informer import Informer
from scaleset.runtime.leader import LeaderElectionConfig, LeadershipLost
from scaleset.runtime.manager import Manager, ManagerSettings
from scaleset.runtime.store import InformerEvent

PARENT = "scaleset.test/parent"
CHILD = "scaleset.test/child"

log = logs.get_logger(__name__)


def parent_body(name: str, namespace: str, replicas: int) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {PARENT: "true"}},
        "data": {"replicas": str(replicas)},
    }


def live_children(children: Informer, parent: KubeObject) -> list[KubeObject]:
    return [c for c in children.by_owner(parent.uid) if not c.is_deleting]


class Replicator:
    """Keeps each parent's live children at ``data.replicas``."""

    def __init__(self, manager: Manager, *, workers: int = 2) -> None:
        self.client = manager.client
        self.expectations: Expectations[str] = Expectations()
        self.controller: Controller = manager.controller(
            "replicator",
            for_kind=CONFIG_MAP,
            reconcile=self.reconcile,
            workers=workers,
            label_selector=f"{PARENT}=true",
        )
        self.parents = self.controller.informer
        self.children = self.controller.owns(CONFIG_MAP, label_selector=f"{CHILD}=true")
        self.children.add_handler(self._observe)
        self.creates = 0
        self.deletes = 0

    def _observe(self, event: InformerEvent) -> None:
        observe_owned(self.expectations, event)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        parent = self.parents.get(key)
        if parent is None or parent.is_deleting:
            return None
        if not self.expectations.satisfied(parent.uid):
            return None  # the owned objects' events will bring us back
        try:
            want = int(parent.raw.get("data", {}).get("replicas", "0"))
        except ValueError:
            return None
        have = sorted(live_children(self.children, parent), key=lambda c: c.name)
        if len(have) < want:
            missing = want - len(have)
            self.expectations.expect_creations(parent.uid, missing)
            for _ in range(missing):
                try:
                    await self.client.create(CONFIG_MAP, self._child(parent))
                    self.creates += 1
                except KubeError:
                    self.expectations.creation_failed(parent.uid)
                    raise
        elif len(have) > want:
            extra = have[want:]
            self.expectations.expect_deletions(parent.uid, [c.key for c in extra])
            for child in extra:
                try:
                    await self.client.delete(CONFIG_MAP, child.key, uid=child.uid)
                    self.deletes += 1
                except NotFound:
                    self.expectations.deletion_failed(parent.uid, child.key)
        return None

    @staticmethod
    def _child(parent: KubeObject) -> dict[str, object]:
        return {
            "metadata": {
                "generateName": f"{parent.name}-child-",
                "namespace": parent.namespace,
                "labels": {CHILD: "true"},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": parent.name,
                        "uid": parent.uid,
                        "controller": True,
                    }
                ],
            },
            "data": {"parent": parent.name},
        }


async def _main(args: argparse.Namespace) -> int:
    client = KubeClient.from_kubeconfig(
        args.kubeconfig, settings=ClientSettings(qps=200.0, burst=200)
    )
    manager = Manager(
        client,
        ManagerSettings(
            election=LeaderElectionConfig(
                lease_name=args.lease,
                namespace=args.namespace,
                identity=args.identity,
                lease_duration=args.lease_duration,
                renew_deadline=args.lease_duration * 2 / 3,
                retry_period=args.lease_duration / 6,
            ),
            namespaces=[args.namespace],
            metrics_address="0",
            graceful_shutdown=5.0,
            freeze_gc=True,  # its own process, like the controller
        ),
    )
    Replicator(manager)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, manager.stop)
    try:
        await manager.run()
        return 0
    except LeadershipLost:
        return 1
    finally:
        await client.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--identity", required=True)
    parser.add_argument("--lease", default="replicator")
    parser.add_argument("--lease-duration", type=float, default=3.0)
    args = parser.parse_args(argv)
    logs.configure("info", "json")
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
