"""The runner proxy Secret of an EphemeralRunnerSet (ARC §2.2 step 6): when
``spec.ephemeralRunnerSpec.proxy`` is set, the Secret ``<set>-<h8(namespace)>-runner-proxy``
holds ``http_proxy``, ``https_proxy`` (the proxy URL, with ``username:password@`` from its
``credentialSecretRef`` Secret, as ``controllers.proxy_credentials`` builds it) and ``no_proxy``
(comma-separated); every runner gets ``spec.proxySecretRef`` naming it, and the runner
controller puts those values into the runner pod's environment. It is deleted with the set.

``read_proxy`` gathers what ``plan`` needs (the wanted data and the Secret as it is) with fresh
GETs — the Secrets of a runner namespace are never cached, as in ARC. A key whose value would
be empty is left out.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scaleset.api import ProxyConfig, keys
from scaleset.api.naming import ephemeral_runner_set_proxy_secret_name
from scaleset.api.owned import controller_reference
from scaleset.controllers.github_access import GitHubAccessError, secret_data
from scaleset.controllers.proxy_credentials import proxy_url, servers
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import SECRET

FIELD = "spec.ephemeralRunnerSpec.proxy"


@dataclass(frozen=True)
class ProxyState:
    """The proxy Secret wanted (``data``, or ``problem`` when the proxy cannot be built) and the
    Secret found (``existing``: its decoded data, ``None`` when there is none)."""

    name: str
    data: Mapping[str, str] | None = field(repr=False)
    existing: Mapping[str, str] | None = field(repr=False)
    problem: GitHubAccessError | None = None

    @property
    def up_to_date(self) -> bool:
        return self.data is not None and dict(self.data) == dict(self.existing or {})


def proxy_of(runner_set: KubeObject) -> ProxyConfig | None:
    spec = runner_set.spec.get("ephemeralRunnerSpec")
    raw = spec.get("proxy") if isinstance(spec, dict) else None
    if not isinstance(raw, dict) or not raw:
        return None
    return ProxyConfig.model_validate(raw)


def proxy_secret_name(runner_set: KubeObject) -> str:
    return ephemeral_runner_set_proxy_secret_name(runner_set.name, runner_set.namespace)


async def read_proxy(client: KubeClient, runner_set: KubeObject) -> ProxyState | None:
    """What ``plan`` needs about the proxy Secret, or ``None`` when the set has no proxy and no
    Secret is expected (a set being deleted is still asked about its Secret)."""
    name = proxy_secret_name(runner_set)
    proxy = proxy_of(runner_set)
    if proxy is None and not runner_set.is_deleting:
        return None
    try:
        found = await client.get(SECRET, ObjectKey(runner_set.namespace, name))
        existing: Mapping[str, str] | None = secret_data(found, FIELD)
    except NotFound:
        existing = None
    if proxy is None:
        return ProxyState(name, None, existing)
    try:
        data = await _wanted(client, runner_set.namespace, proxy)
    except GitHubAccessError as problem:
        return ProxyState(name, None, existing, problem)
    return ProxyState(name, data, existing)


async def _wanted(client: KubeClient, namespace: str, proxy: ProxyConfig) -> dict[str, str]:
    async def read_secret(name: str, field_: str) -> KubeObject:
        try:
            return await client.get(SECRET, ObjectKey(namespace, name))
        except NotFound:
            raise GitHubAccessError(
                "ProxySecretMissing", field_, f"Secret {namespace}/{name} does not exist"
            ) from None

    data: dict[str, str] = {}
    for scheme, key, server in servers(proxy):
        if server is not None and server.url:
            data[key] = await proxy_url(server, f"{FIELD}.{scheme}", read_secret)
    if proxy.no_proxy:
        data[keys.PROXY_NO_PROXY_KEY] = ",".join(proxy.no_proxy)
    return data


def secret_body(runner_set: KubeObject, name: str, data: Mapping[str, str]) -> dict[str, Any]:
    """The proxy Secret, owned by the set."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": runner_set.namespace,
            "labels": {
                keys.SCALE_SET_NAME_LABEL: runner_set.labels.get(
                    keys.SCALE_SET_NAME_LABEL, runner_set.name
                ),
                keys.SCALE_SET_NAMESPACE_LABEL: runner_set.namespace,
            },
            "ownerReferences": [
                controller_reference("EphemeralRunnerSet", runner_set.name, runner_set.uid)
            ],
        },
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }
