"""The embedded server's controllers keep what kube-controller-manager keeps in every namespace:
the ``default`` ServiceAccount and the ``kube-root-ca.crt`` ConfigMap (the conformance suite
holds both backends to pod admission; these are the controller's own rules)."""

from __future__ import annotations

import httpx2
from tests.integration.embedded_apiserver.rest import MERGE, pod, pod_path
from tests.support.waiting import eventually_sync

from scaleset.embedded.apiserver import DEFAULT_TOKEN, RunningApiServer, serve_in_thread

ACCOUNT = "/api/v1/namespaces/{ns}/serviceaccounts/default"
ROOT_CA = "/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"


def exists(client: httpx2.Client, path: str) -> bool:
    return client.get(path).status_code == 200


def test_every_namespace_gets_them_from_the_controller_manager(
    client: httpx2.Client, api: RunningApiServer, ns: str
) -> None:
    for name in ("default", "kube-system", "kube-public", "kube-node-lease", ns):
        eventually_sync(lambda n=name: exists(client, ACCOUNT.format(ns=n)), within=10.0)
        eventually_sync(lambda n=name: exists(client, ROOT_CA.format(ns=n)), within=10.0)

    root_ca = client.get(ROOT_CA.format(ns=ns)).json()
    assert [m["manager"] for m in root_ca["metadata"]["managedFields"]] == [
        "kube-controller-manager"
    ]
    assert root_ca["data"] == {"ca.crt": api.server.cluster_ca_pem.decode()}


def test_a_pod_created_right_after_its_namespace_is_admitted(client: httpx2.Client) -> None:
    # no wait between the two requests: admission waits for the controllers, as the real plugin
    # retries its lookup of `default` while the controller-manager creates it
    assert client.post("/api/v1/namespaces", json={"metadata": {"name": "fresh"}}).is_success

    created = client.post(pod_path("fresh"), json=pod("p"))

    assert created.status_code == 201, created.text
    assert created.json()["spec"]["serviceAccountName"] == "default"


def test_a_deleted_default_service_account_comes_back(client: httpx2.Client, ns: str) -> None:
    eventually_sync(lambda: exists(client, ACCOUNT.format(ns=ns)), within=10.0)
    first_uid = client.get(ACCOUNT.format(ns=ns)).json()["metadata"]["uid"]

    assert client.delete(ACCOUNT.format(ns=ns)).is_success
    created = client.post(pod_path(ns), json=pod("p"))

    assert created.status_code == 201, created.text
    assert client.get(ACCOUNT.format(ns=ns)).json()["metadata"]["uid"] != first_uid


def test_the_root_ca_is_put_back_when_changed_or_deleted(client: httpx2.Client, ns: str) -> None:
    eventually_sync(lambda: exists(client, ROOT_CA.format(ns=ns)), within=10.0)
    published = client.get(ROOT_CA.format(ns=ns)).json()["data"]

    client.patch(ROOT_CA.format(ns=ns), json={"data": {"ca.crt": "tampered"}}, headers=MERGE)
    eventually_sync(
        lambda: client.get(ROOT_CA.format(ns=ns)).json()["data"] == published, within=10.0
    )
    client.delete(ROOT_CA.format(ns=ns))
    eventually_sync(lambda: exists(client, ROOT_CA.format(ns=ns)), within=10.0)

    assert client.get(ROOT_CA.format(ns=ns)).json()["data"] == published


def test_a_terminating_namespace_gets_nothing_back(client: httpx2.Client) -> None:
    held = {"metadata": {"name": "held"}, "spec": {"finalizers": ["example.com/hold"]}}
    assert client.post("/api/v1/namespaces", json=held).is_success
    eventually_sync(lambda: exists(client, ACCOUNT.format(ns="held")), within=10.0)

    client.delete("/api/v1/namespaces/held")
    eventually_sync(lambda: not exists(client, ACCOUNT.format(ns="held")), within=10.0)
    eventually_sync(lambda: not exists(client, ROOT_CA.format(ns="held")), within=10.0)
    # the controllers work in order: once a namespace created now has its defaults, the
    # deletions in "held" have been handled too
    assert client.post("/api/v1/namespaces", json={"metadata": {"name": "later"}}).is_success
    eventually_sync(lambda: exists(client, ACCOUNT.format(ns="later")), within=10.0)

    # the namespace stays (its finalizer) and stays empty: nothing is re-created in it

    assert exists(client, "/api/v1/namespaces/held")
    assert not exists(client, ACCOUNT.format(ns="held"))
    assert not exists(client, ROOT_CA.format(ns="held"))


def test_a_tls_server_publishes_its_serving_ca() -> None:
    with serve_in_thread(tls=True) as running:
        server = running.server
        assert server.certificate is not None
        with httpx2.Client(
            base_url=running.url,
            headers={"Authorization": f"Bearer {DEFAULT_TOKEN}"},
            verify=False,  # the test reads the CA the server publishes
            trust_env=False,
        ) as client:
            eventually_sync(lambda: exists(client, ROOT_CA.format(ns="default")), within=10.0)
            data = client.get(ROOT_CA.format(ns="default")).json()["data"]

    assert data == {"ca.crt": server.certificate.ca_pem.decode()}
