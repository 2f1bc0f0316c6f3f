"""Impersonated requests are authorized by Roles and RoleBindings, as the RBAC authorizer does."""

from __future__ import annotations

import httpx2
from tests.integration.embedded_apiserver.rest import MERGE, cm_path, configmap, pod, pod_path

RBAC = "/apis/rbac.authorization.k8s.io/v1/namespaces"


def _as_bot(ns: str) -> dict[str, str]:
    return {"Impersonate-User": f"system:serviceaccount:{ns}:bot"}


def test_role_rules_decide_what_a_service_account_may_do(client: httpx2.Client, ns: str) -> None:
    client.post(pod_path(ns), json=pod("p"))
    client.post(cm_path(ns), json=configmap("mine"))
    client.post(cm_path(ns), json=configmap("theirs"))
    client.post(
        f"{RBAC}/{ns}/roles",
        json={
            "metadata": {"name": "bot"},
            "rules": [
                {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]},
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "verbs": ["get"],
                    "resourceNames": ["mine"],
                },
            ],
        },
    )
    client.post(
        f"{RBAC}/{ns}/rolebindings",
        json={
            "metadata": {"name": "bot"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bot"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": ns}],
        },
    )
    bot = _as_bot(ns)

    status = client.patch(
        pod_path(ns, "p", "status"), json={"status": {"phase": "Running"}}, headers={**MERGE, **bot}
    )
    spec = client.patch(
        pod_path(ns, "p"), json={"metadata": {"labels": {"a": "b"}}}, headers={**MERGE, **bot}
    )
    mine = client.get(cm_path(ns, "mine"), headers=bot)
    theirs = client.get(cm_path(ns, "theirs"), headers=bot)
    listing = client.get(cm_path(ns), headers=bot)
    admin = client.get(cm_path(ns, "theirs"))

    assert (status.status_code, mine.status_code, admin.status_code) == (200, 200, 200)
    assert (spec.status_code, theirs.status_code, listing.status_code) == (403, 403, 403)
    assert spec.json()["message"] == (
        f'pods "p" is forbidden: User "system:serviceaccount:{ns}:bot" cannot patch resource '
        f'"pods" in API group "" in the namespace "{ns}"'
    )


def test_discovery_stays_open_and_cluster_scope_is_denied(client: httpx2.Client, ns: str) -> None:
    bot = _as_bot(ns)

    assert client.get("/api/v1", headers=bot).status_code == 200
    assert client.get("/api/v1/namespaces", headers=bot).status_code == 403
