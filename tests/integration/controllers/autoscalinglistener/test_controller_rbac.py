"""The controller can only grant what it holds (kube-apiserver's RBAC escalation check on Role
create/update and the ``bind`` check on RoleBindings), so its own rules
(``controllers.autoscalinglistener.rbac``) must cover the listener Role. Real kube-apiserver only:
the embedded server serves no ClusterRoles.

- Running as a ServiceAccount bound to exactly ``controller_rules()`` (plus leases for leader
  election), the controller builds a listener, keeps it in step and deletes it without one 403,
  and the requests it made are exactly ``OWN_ACCESS``: no rule is missing, none unused.
- Holding only ``OWN_ACCESS`` (what it calls, without the listener's grants) it may not create
  the listener Role: the escalation check is real, and ``LISTENER_ROLE_GRANTS`` is why the
  controller's ClusterRole must list them. The controller says so on the listener
  (``Configured=False RoleForbidden`` and a Warning Event) instead of only logging errors.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from tests.integration.controllers.autoscalinglistener.listener_process import (
    service_account_client,
)
from tests.integration.controllers.autoscalinglistener.world import World
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret

from scaleset.api.listener_rbac import RBAC_GROUP, granted_accesses
from scaleset.controllers.autoscalinglistener import resources
from scaleset.controllers.autoscalinglistener.rbac import OWN_ACCESS, controller_rules
from scaleset.controllers.autoscalinglistener.settings import Settings
from scaleset.devtools.transports import ServiceAccountRef
from scaleset.kube import Forbidden, NotFound
from scaleset.kube.access import AccessRecorder
from scaleset.kube.resources import AUTOSCALING_LISTENER, CONFIG_MAP, ROLE, SERVICE_ACCOUNT

ROTATED = (
    "ghp_controllerRbacRotatedFirst0123456789ab",
    "ghp_controllerRbacRotatedSecond012345678ab",
)
RBAC_PATH = f"/apis/{RBAC_GROUP}/v1"
LEASE_RULES = [
    {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["get", "create", "update"],
    }
]


@pytest.fixture(autouse=True)
def real_only(kube_backend: KubeBackend) -> None:
    if kube_backend.name != "real":
        pytest.skip("the embedded API server serves no ClusterRoles")


@asynccontextmanager
async def bound_to(
    http: httpx2.AsyncClient, namespace: str, account: str, rules: list[dict[str, Any]]
) -> AsyncIterator[None]:
    """A ClusterRole with ``rules`` bound to ``namespace/account`` (and a Role for leases)."""
    name = f"scaleset-test-{secrets.token_hex(4)}"
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    created = [
        (f"{RBAC_PATH}/clusterroles", {"metadata": {"name": name}, "rules": rules}),
        (
            f"{RBAC_PATH}/clusterrolebindings",
            {
                "metadata": {"name": name},
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
                "subjects": subject,
            },
        ),
        (
            f"{RBAC_PATH}/namespaces/{namespace}/roles",
            {"metadata": {"name": name}, "rules": LEASE_RULES},
        ),
        (
            f"{RBAC_PATH}/namespaces/{namespace}/rolebindings",
            {
                "metadata": {"name": name},
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
                "subjects": subject,
            },
        ),
    ]
    try:
        for path, body in created:
            answer = await http.post(path, json=body)
            assert answer.status_code == 201, answer.text
        yield
    finally:
        for path, _ in created:
            await http.delete(f"{path}/{name}")


async def test_the_controller_holding_exactly_its_rules_runs_a_listener_from_start_to_end(
    world: World, kube_http: httpx2.AsyncClient
) -> None:
    account = ServiceAccountRef(world.namespace, "controller")
    await world.client.create(
        SERVICE_ACCOUNT, {"metadata": {"name": "controller", "namespace": world.namespace}}
    )
    await world.client.create(
        CONFIG_MAP,
        {
            "metadata": {"name": "github-ca", "namespace": world.scale_set_namespace},
            "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
        },
    )
    access = AccessRecorder()
    statuses: list[tuple[str, str, int]] = []
    async with bound_to(kube_http, world.namespace, "controller", controller_rules()):
        probe = service_account_client(world.backend, account, world.clock)

        async def effective() -> bool:
            try:
                await probe.get(AUTOSCALING_LISTENER, world.key())
            except Forbidden:
                return False
            except NotFound:
                return True
            return True

        await world.until_still(effective, "the controller's ClusterRoleBinding in force")
        await probe.close()
        own = service_account_client(
            world.backend, account, world.clock, access=access, statuses=statuses
        )
        async with world.kubelet(), world.controller(client=own):
            tls = {"certificateFrom": {"configMapKeyRef": {"name": "github-ca", "key": "ca.crt"}}}
            await world.create_listener(githubServerTLS=tls, proxy={"noProxy": ["example.com"]})
            await world.running_pod()
            await world.condition_where(
                "Configured", lambda c: c["status"] == "True", "Configured=True"
            )
            await world.patch_listener({"metadata": {"labels": {"team": "ci"}}})

            async def relabelled() -> bool:
                pod = await world.pod()
                return pod is not None and pod.labels.get("team") == "ci"

            await world.until(relabelled, "the pod relabelled")
            for token in ROTATED:  # the config rewritten twice: the same Event counted twice
                await world.github_secret(register_secret(token))

                async def rewritten(token: str = token) -> bool:
                    return (await world.config_json())["github_token"] == token

                await world.until(rewritten, "the rotated token in the config")
                await world.running_pod()
            await world.patch_listener({"spec": {"autoscalingRunnerSetName": "gone"}})

            async def gone() -> bool:
                return await world.listener() is None

            await world.until(gone, "the orphaned listener deleted and cleaned up")

    assert [s for s in statuses if s[2] == 403] == []
    used = {(a.verb, a.group, a.rbac_resource) for a in access.accesses() if a.resource != "leases"}
    own_grants = {
        (verb, group, resource) for group, resource, verbs in OWN_ACCESS for verb in verbs
    }
    assert used == own_grants, (
        f"granted, unused: {sorted(own_grants - used)}; used, not declared: "
        f"{sorted(used - own_grants)}"
    )
    assert used <= granted_accesses(controller_rules())


async def test_without_the_listener_grants_the_controller_may_not_create_the_listener_role(
    world: World, kube_http: httpx2.AsyncClient
) -> None:
    account = ServiceAccountRef(world.namespace, "too-little")
    own_only = [
        {"apiGroups": [group], "resources": [resource], "verbs": list(verbs)}
        for group, resource, verbs in OWN_ACCESS
    ]
    await world.create_listener()
    listener = await world.listener()
    assert listener is not None
    role = resources.role(listener, Settings())
    async with bound_to(kube_http, world.namespace, "too-little", own_only):
        client = service_account_client(world.backend, account, world.clock)
        try:

            async def refused() -> bool:
                try:
                    await client.create(ROLE, role)
                except Forbidden as error:
                    return "not currently held" in error.message or "escalat" in error.message
                raise AssertionError("the Role was created without the permissions it grants")

            await world.until_still(refused, "the escalation check refusing the Role")
        finally:
            await client.close()
        own = service_account_client(world.backend, account, world.clock)
        async with world.controller(client=own):
            configured = await world.condition_where(
                "Configured", lambda c: c["status"] == "False", "Configured=False"
            )
            assert configured["reason"] == "RoleForbidden"
            assert "ClusterRole must include" in configured["message"]
            await world.event_where(
                lambda kind, reason, _: (kind, reason) == ("Warning", "RoleForbidden"),
                "a Warning Event about the Role",
            )
