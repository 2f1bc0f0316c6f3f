"""ServiceAccount admission of pods, as every production cluster runs it.

A pod created without ``serviceAccountName`` gets ``default``; a pod naming a ServiceAccount that
does not exist is refused (403) before validation; the bound token volume (projected
``kube-api-access-*``) is mounted into every container unless automount is off; a pod without
imagePullSecrets gets its ServiceAccount's; only creates are admitted. Every test namespace
holds the ``default`` ServiceAccount and the ``kube-root-ca.crt`` ConfigMap, as the
controller-manager keeps them.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from lightkube import AsyncClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ServiceAccount

TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_SOURCES = [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    {
        "downwardAPI": {
            "items": [
                {
                    "path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                }
            ]
        }
    },
]


def pod(name: str = "p", *, generate_name: str = "", **spec: Any) -> dict[str, Any]:
    metadata = {"generateName": generate_name} if generate_name else {"name": name}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "c", "image": "runner:latest"}], **spec},
    }


def pods_path(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/pods" + (f"/{name}" if name else "")


def token_volumes(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in spec.get("volumes") or [] if v["name"].startswith("kube-api-access-")]


async def service_account(kube: AsyncClient, namespace: str, name: str, **fields: Any) -> None:
    await kube.create(
        ServiceAccount.from_dict({"metadata": {"name": name, "namespace": namespace}, **fields})
    )


async def test_namespace_holds_the_default_service_account_and_the_root_ca(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    account = await kube_http.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
    root_ca = await kube_http.get(f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt")

    assert account.status_code == 200
    assert root_ca.status_code == 200
    assert root_ca.json()["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")


async def test_pod_without_service_account_gets_default(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    created = await kube_http.post(pods_path(namespace), json=pod())

    assert created.status_code == 201, created.text
    spec = created.json()["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    stored = (await kube_http.get(pods_path(namespace, "p"))).json()["spec"]
    assert stored["serviceAccountName"] == "default"


async def test_every_container_mounts_the_projected_token_volume(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    own_mount = {"name": "own", "mountPath": TOKEN_PATH}
    body = pod(
        initContainers=[{"name": "init", "image": "busybox"}],
        volumes=[{"name": "own", "emptyDir": {}}],
    )
    body["spec"]["containers"].append({"name": "d", "image": "i", "volumeMounts": [own_mount]})

    created = await kube_http.post(pods_path(namespace), json=body)

    assert created.status_code == 201, created.text
    spec = created.json()["spec"]
    [volume] = token_volumes(spec)
    assert len(volume["name"]) == len("kube-api-access-") + 5
    assert volume["projected"] == {"sources": TOKEN_SOURCES, "defaultMode": 420}
    mount = {"name": volume["name"], "readOnly": True, "mountPath": TOKEN_PATH}
    assert spec["initContainers"][0]["volumeMounts"] == [mount]
    assert spec["containers"][0]["volumeMounts"] == [mount]
    # a container that already mounts something at the token path keeps its own mount
    assert spec["containers"][1]["volumeMounts"] == [own_mount]
    # what admission added is not owned by the creating manager
    [owned] = created.json()["metadata"]["managedFields"]
    assert "f:serviceAccountName" not in owned["fieldsV1"]["f:spec"]
    assert set(owned["fieldsV1"]["f:spec"]["f:volumes"]) == {".", 'k:{"name":"own"}'}


async def test_an_existing_kube_api_access_volume_is_mounted_not_added(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    body = pod(volumes=[{"name": "kube-api-access-mine", "emptyDir": {}}])

    created = await kube_http.post(pods_path(namespace), json=body)

    spec = created.json()["spec"]
    assert spec["volumes"] == [{"name": "kube-api-access-mine", "emptyDir": {}}]
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": "kube-api-access-mine", "readOnly": True, "mountPath": TOKEN_PATH}
    ]


async def test_automount_is_decided_by_the_pod_first_then_the_service_account(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    await service_account(kube, namespace, "quiet", automountServiceAccountToken=False)

    pod_off = await kube_http.post(
        pods_path(namespace), json=pod("pod-off", automountServiceAccountToken=False)
    )
    account_off = await kube_http.post(
        pods_path(namespace), json=pod("account-off", serviceAccountName="quiet")
    )
    pod_on = await kube_http.post(
        pods_path(namespace),
        json=pod("pod-on", serviceAccountName="quiet", automountServiceAccountToken=True),
    )

    for off in (pod_off, account_off):
        assert off.status_code == 201, off.text
        assert "volumes" not in off.json()["spec"]
        assert "volumeMounts" not in off.json()["spec"]["containers"][0]
    assert account_off.json()["spec"]["serviceAccountName"] == "quiet"
    assert len(token_volumes(pod_on.json()["spec"])) == 1


@pytest.mark.parametrize(
    ("body", "named", "account"),
    [
        (pod("p", serviceAccountName="runner"), "p", "runner"),
        (pod(generate_name="runner-", serviceAccountName="runner"), "runner-", "runner"),
        (pod("p", serviceAccount="legacy"), "p", "legacy"),
        # admission comes before validation: an invalid pod is refused for its account
        ({**pod("p"), "spec": {"serviceAccountName": "runner"}}, "p", "runner"),
    ],
    ids=["name", "generate-name", "deprecated-field", "invalid-pod"],
)
async def test_pod_naming_a_missing_service_account_is_forbidden(
    kube_http: httpx2.AsyncClient, namespace: str, body: dict[str, Any], named: str, account: str
) -> None:
    for dry_run in ("?dryRun=All", ""):
        response = await kube_http.post(pods_path(namespace) + dry_run, json=body)

        assert response.status_code == 403, response.text
        status = response.json()
        assert status["reason"] == "Forbidden"
        assert status["details"] == {"name": named, "kind": "pods"}
        assert status["message"] == (
            f'pods "{named}" is forbidden: error looking up service account '
            f'{namespace}/{account}: serviceaccount "{account}" not found'
        )
    listed = await kube_http.get(pods_path(namespace))
    assert listed.json()["items"] == []


async def test_image_pull_secrets_come_from_the_service_account_if_the_pod_has_none(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    await service_account(kube, namespace, "puller", imagePullSecrets=[{"name": "registry"}])

    inherited = await kube_http.post(
        pods_path(namespace), json=pod("a", serviceAccountName="puller")
    )
    own = await kube_http.post(
        pods_path(namespace),
        json=pod("b", serviceAccountName="puller", imagePullSecrets=[{"name": "mine"}]),
    )

    assert inherited.json()["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    assert own.json()["spec"]["imagePullSecrets"] == [{"name": "mine"}]


async def test_only_creates_are_admitted(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    await service_account(kube, namespace, "runner")
    await kube_http.post(pods_path(namespace), json=pod(serviceAccountName="runner"))
    await kube.delete(ServiceAccount, "runner", namespace=namespace)

    relabelled = await kube_http.patch(
        pods_path(namespace, "p"),
        json={"metadata": {"labels": {"still": "admitted"}}},
        headers={"Content-Type": "application/merge-patch+json"},
    )

    assert relabelled.status_code == 200, relabelled.text
    assert relabelled.json()["spec"]["serviceAccountName"] == "runner"


async def test_mirror_pods_keep_no_service_account_and_may_not_name_one(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    mirror = {"kubernetes.io/config.mirror": "static"}
    plain = pod("static", nodeName="node-1")
    plain["metadata"]["annotations"] = mirror
    named = pod("named", nodeName="node-1", serviceAccountName="default")
    named["metadata"]["annotations"] = mirror

    created = await kube_http.post(pods_path(namespace), json=plain)
    refused = await kube_http.post(pods_path(namespace), json=named)

    assert created.status_code == 201, created.text
    assert "serviceAccountName" not in created.json()["spec"]
    assert "volumes" not in created.json()["spec"]
    assert refused.status_code == 403
    assert refused.json()["message"] == (
        'pods "named" is forbidden: a mirror pod may not reference service accounts'
    )


async def test_a_service_account_created_with_the_namespace_is_usable_at_once(
    kube_http: httpx2.AsyncClient, kube: AsyncClient, namespace: str
) -> None:
    # what a controller does: create the ServiceAccount, then the pod naming it, no wait between
    await kube.create(ServiceAccount(metadata=ObjectMeta(name="runner", namespace=namespace)))

    created = await kube_http.post(pods_path(namespace), json=pod(serviceAccountName="runner"))

    assert created.status_code == 201, created.text
