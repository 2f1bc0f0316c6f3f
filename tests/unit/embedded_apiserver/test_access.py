"""The embedded server's access log: each resource request, in RBAC terms, with who sent it.

Requests go through our production client (its User-Agent is the identity) or plain HTTP (for
impersonation and refused requests); the log is read in process and over ``/_scaleset/access``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from scaleset.embedded.apiserver import DEFAULT_TOKEN, EmbeddedApiServer
from scaleset.embedded.apiserver._access import AccessEntry, entries_from_document
from scaleset.kube import KubeClient, NotFound, ObjectKey
from scaleset.kube.client import ClientSettings
from scaleset.kube.errors import AlreadyExists, Conflict
from scaleset.kube.resources import CONFIG_MAP, NAMESPACE, POD

AGENT = "probe/1.2"


@pytest.fixture
async def server() -> AsyncIterator[EmbeddedApiServer]:
    async with EmbeddedApiServer() as running:
        yield running


@pytest.fixture
async def client(server: EmbeddedApiServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    kube = KubeClient.from_kubeconfig(path, settings=ClientSettings(user_agent=AGENT))
    try:
        yield kube
    finally:
        await kube.close()


def entry(verb: str, resource: str, namespace: str = "", name: str = "", **kw: str) -> AccessEntry:
    return AccessEntry(
        agent=kw.get("agent", AGENT),
        user=kw.get("user", ""),
        verb=verb,
        group=kw.get("group", ""),
        resource=resource,
        subresource=kw.get("subresource", ""),
        namespace=namespace,
        name=name,
    )


async def test_each_request_is_logged_with_the_user_agent_verb_and_scope(
    server: EmbeddedApiServer, client: KubeClient
) -> None:
    await client.create(NAMESPACE, {"metadata": {"name": "team"}})
    body = {"metadata": {"name": "cm", "namespace": "team"}, "data": {"a": "1"}}
    await client.create(CONFIG_MAP, body)
    await client.patch_merge(CONFIG_MAP, ObjectKey("team", "cm"), {"data": {"a": "2"}})
    await client.get(CONFIG_MAP, ObjectKey("team", "cm"))
    await client.get(CONFIG_MAP, ObjectKey("team", "cm"))
    await client.list(CONFIG_MAP)  # all namespaces
    await client.list(POD, namespace="team")
    with pytest.raises(NotFound):  # refused requests are logged: it is what was attempted
        await client.get(POD, ObjectKey("team", "missing"))
    await client.delete(CONFIG_MAP, ObjectKey("team", "cm"))

    counts = server.access.counts()
    assert set(counts) == {
        entry("create", "namespaces"),
        entry("create", "configmaps", "team"),
        entry("patch", "configmaps", "team", "cm"),
        entry("get", "configmaps", "team", "cm"),
        entry("list", "configmaps"),
        entry("list", "pods", "team"),
        entry("get", "pods", "team", "missing"),
        entry("delete", "configmaps", "team", "cm"),
    }
    assert counts[entry("get", "configmaps", "team", "cm")] == 2
    assert {e.component for e in counts} == {"probe"}


async def test_subresources_impersonation_and_refusals_are_logged(
    server: EmbeddedApiServer,
) -> None:
    headers = {
        "Authorization": f"Bearer {DEFAULT_TOKEN}",
        "User-Agent": "scaleset-listener/9",
        "Impersonate-User": "system:serviceaccount:ns:listener",
    }
    async with httpx2.AsyncClient(base_url=server.url, headers=headers) as http:
        status = await http.get("/api/v1/namespaces/default/pods/p/status")
        discovery = await http.get("/apis")
    assert status.status_code == 403  # RBAC refuses the impersonated account
    assert discovery.status_code == 200  # discovery is not a resource request

    assert server.access.entries() == [
        AccessEntry(
            agent="scaleset-listener/9",
            user="system:serviceaccount:ns:listener",
            verb="get",
            group="",
            resource="pods",
            subresource="status",
            namespace="default",
            name="p",
        )
    ]
    assert server.access.entries()[0].rbac_resource == "pods/status"
    assert server.access.entries()[0].component == "scaleset-listener"


async def test_the_log_is_served_and_cleared_over_http(
    server: EmbeddedApiServer, client: KubeClient
) -> None:
    await client.get(NAMESPACE, ObjectKey("", "default"))
    async with httpx2.AsyncClient(base_url=server.url) as anonymous:
        refused = await anonymous.get("/_scaleset/access")
    async with httpx2.AsyncClient(
        base_url=server.url, headers={"Authorization": f"Bearer {DEFAULT_TOKEN}"}
    ) as http:
        served = entries_from_document((await http.get("/_scaleset/access")).json())
        cleared = await http.delete("/_scaleset/access")
        after = (await http.get("/_scaleset/access")).json()

    assert refused.status_code == 401  # the control routes want the API's token too

    assert served == {entry("get", "namespaces", name="default"): 1}
    assert cleared.json() == {"ok": True}
    assert after == {"accesses": []}
    assert server.access.entries() == []


async def test_requests_answered_409_are_counted_apart_as_refused(
    server: EmbeddedApiServer, client: KubeClient
) -> None:
    """A write refused with 409 (a stale resourceVersion, a name that exists) changed nothing:
    it stays in ``counts()``, as it was sent, and is also in ``refused()``; one that went
    through, or failed otherwise, is not."""
    await client.create(NAMESPACE, {"metadata": {"name": "team"}})
    body = {"metadata": {"name": "cm", "namespace": "team"}, "data": {"a": "1"}}
    first = await client.create(CONFIG_MAP, body)
    with pytest.raises(AlreadyExists):
        await client.create(CONFIG_MAP, body)
    await client.patch_with_lock(first, {"data": {"a": "2"}})
    with pytest.raises(Conflict):  # ``first`` is now a version behind
        await client.patch_with_lock(first, {"data": {"a": "3"}})
    with pytest.raises(NotFound):
        await client.patch_merge(CONFIG_MAP, ObjectKey("team", "gone"), {"data": {"a": "1"}})

    assert server.access.refused() == {
        entry("create", "configmaps", "team"): 1,
        entry("patch", "configmaps", "team", "cm"): 1,
    }
    counts = server.access.counts()
    assert counts[entry("create", "configmaps", "team")] == 2
    assert counts[entry("patch", "configmaps", "team", "cm")] == 2
    server.access.clear()
    assert server.access.refused() == {}
