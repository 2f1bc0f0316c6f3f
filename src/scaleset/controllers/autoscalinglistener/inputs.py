"""What a listener's config needs from the scale set's namespace: the GitHub credentials (the
GitHub config Secret, checked as ``github_access`` checks it), the custom CA
(``githubServerTLS``: a PEM in a ConfigMap key) and the proxy credentials (``credentialSecretRef``
Secrets with ``username``/``password``).

Reading them at every reconcile is what makes a rotated credential reach the listener: the config
Secret is compared with what these reads give, by content (ARC compares labels only and leaves
stale data, §11.4). These Secrets live in the scale set's namespace, where the controller caches
no Secret of its own: ``secret_keys`` names the ones a listener reads, which the reconciler
watches one by one (``runtime.named_watches``), and ``read_inputs`` takes them from that watch
when it holds them (a change queues the listener at once) and with a GET otherwise. The CA
ConfigMap is always read with a GET.

Problems a user must fix come back as a ``ConfigProblem`` naming the field (L8), never with a
value read from a Secret; API-server failures propagate (transient: the work queue backs off).
``Inputs`` holds credentials: its repr shows none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scaleset.api import AutoscalingListener, keys
from scaleset.api.config_url import InvalidConfigUrl, parse_config_url
from scaleset.controllers.github_access import (
    GitHubAccessError,
    credentials_from_secret,
    root_ca_pem,
)
from scaleset.controllers.proxy_credentials import proxy_url, servers
from scaleset.github import GitHubApp, PersonalAccessToken
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import CONFIG_MAP, SECRET, Kind
from scaleset.runtime.named_watches import WatchedRead


@dataclass(frozen=True)
class ConfigProblem:
    """Why no listener config can be written: a stable CamelCase ``reason`` (condition and Event
    reason), the ``field`` of the AutoscalingListener to fix, and a message without secrets."""

    reason: str
    field: str
    message: str

    @property
    def text(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True)
class Credentials:
    """The credential keys of ARC's listener config (a PAT, or the three GitHub App keys)."""

    token: str = field(default="", repr=False)
    app_id: str = ""
    installation_id: int = 0
    private_key: str = field(default="", repr=False)


@dataclass(frozen=True)
class Inputs:
    """Everything read for the config and the proxy Secret (credentials inside: no repr)."""

    credentials: Credentials
    root_ca: str = ""
    proxy: Mapping[str, str] | None = None
    """``http_proxy``, ``https_proxy``, ``no_proxy`` (credentials in the URLs), or None."""

    def __repr__(self) -> str:
        return f"Inputs(root_ca={bool(self.root_ca)}, proxy={self.proxy is not None})"


def secret_keys(listener: AutoscalingListener) -> frozenset[ObjectKey]:
    """The Secrets ``listener``'s config is made from: the GitHub config Secret and the proxy
    credential Secrets, in the scale set's namespace."""
    spec = listener.spec
    namespace = spec.autoscaling_runner_set_namespace
    names = {spec.github_config_secret}
    if spec.proxy is not None:
        names.update(
            server.credential_secret_ref
            for _, _, server in servers(spec.proxy)
            if server is not None
        )
    return frozenset(ObjectKey(namespace, name) for name in names if name and namespace)


async def read_inputs(
    kube: KubeClient, listener: AutoscalingListener, watched: WatchedRead | None = None
) -> Inputs | ConfigProblem:
    """The inputs of ``listener``'s config, or the first problem that prevents them; an object
    ``watched`` holds is taken from it, any other read is a GET."""
    try:
        return await _read(_Reader(kube, watched), listener)
    except GitHubAccessError as error:
        return ConfigProblem(error.reason, error.field, error.message)


@dataclass(frozen=True)
class _Reader:
    kube: KubeClient
    watched: WatchedRead | None

    async def get(self, kind: Kind, namespace: str, name: str, field_: str) -> KubeObject:
        held = self.watched(kind, namespace, name) if self.watched is not None else None
        if held is not None:
            return held
        return await _get(self.kube, kind, namespace, name, field_)


async def _read(reader: _Reader, listener: AutoscalingListener) -> Inputs:
    spec = listener.spec
    namespace = spec.autoscaling_runner_set_namespace
    if spec.vault_config is not None and spec.vault_config.type:
        raise GitHubAccessError(
            "VaultNotSupported",
            "spec.vaultConfig",
            f"vault type {spec.vault_config.type[:40]!r} is not supported by scaleset; use a "
            "Secret with github_token or GitHub App keys",
        )
    try:
        parse_config_url(spec.github_config_url)
    except InvalidConfigUrl as error:
        raise GitHubAccessError("InvalidConfigUrl", "spec.githubConfigUrl", str(error)) from None
    secret = await reader.get(
        SECRET, namespace, spec.github_config_secret, "spec.githubConfigSecret"
    )
    return Inputs(
        credentials=_credential_values(secret),
        root_ca=await _root_ca(reader, listener),
        proxy=await _proxy(reader, listener),
    )


def _credential_values(secret: KubeObject) -> Credentials:
    credentials = credentials_from_secret(secret, "spec.githubConfigSecret")
    if isinstance(credentials, PersonalAccessToken):
        return Credentials(token=credentials.token.get_secret_value())
    assert isinstance(credentials, GitHubApp)
    return Credentials(
        app_id=credentials.app_id,
        installation_id=credentials.installation_id,
        private_key=credentials.private_key.get_secret_value(),
    )


async def _get(kube: KubeClient, kind: Kind, namespace: str, name: str, field_: str) -> KubeObject:
    what = "Secret" if kind is SECRET else "ConfigMap"
    if not name:
        raise GitHubAccessError(
            "GitHubSecretMissing" if kind is SECRET else "ConfigMapMissing", field_, "is empty"
        )
    try:
        return await kube.get(kind, ObjectKey(namespace, name))
    except NotFound:
        reason = "GitHubSecretMissing" if kind is SECRET else "ConfigMapMissing"
        raise GitHubAccessError(
            reason, field_, f"{what} {namespace}/{name} does not exist"
        ) from None


async def _root_ca(reader: _Reader, listener: AutoscalingListener) -> str:
    tls = listener.spec.github_server_tls
    if tls is None or tls.certificate_from is None:
        return ""
    ref = tls.certificate_from.config_map_key_ref
    if ref is None or not ref.name:
        return ""
    prefix = "spec.githubServerTLS.certificateFrom.configMapKeyRef"
    namespace = listener.spec.autoscaling_runner_set_namespace
    config_map = await reader.get(CONFIG_MAP, namespace, ref.name, f"{prefix}.name")
    return root_ca_pem(config_map, ObjectKey(namespace, ref.name), ref.key, f"{prefix}.key")


async def _proxy(reader: _Reader, listener: AutoscalingListener) -> dict[str, str] | None:
    proxy = listener.spec.proxy
    if proxy is None:
        return None
    namespace = listener.spec.autoscaling_runner_set_namespace

    async def read_secret(name: str, field_: str) -> KubeObject:
        return await reader.get(SECRET, namespace, name, field_)

    data = {keys.PROXY_HTTP_KEY: "", keys.PROXY_HTTPS_KEY: "", keys.PROXY_NO_PROXY_KEY: ""}
    for scheme, key, server in servers(proxy):
        if server is not None:
            data[key] = await proxy_url(server, f"spec.proxy.{scheme}", read_secret)
    data[keys.PROXY_NO_PROXY_KEY] = ",".join(proxy.no_proxy)
    return data
