"""GitHub clients for our objects: an ``ActionsClient`` for an AutoscalingRunnerSet,
EphemeralRunnerSet or EphemeralRunner, built from its ``githubConfigUrl`` and the GitHub config
Secret in its namespace.

The Secret holds either ``github_token`` or ``github_app_id`` + ``github_app_installation_id`` +
``github_app_private_key`` (exactly one kind), as ARC's chart writes it. ``proxy`` (URLs, and
``credentialSecretRef`` Secrets with ``username``/``password``) and ``githubServerTLS`` (a PEM in
a ConfigMap key, appended to the system roots) are read from the object's namespace too.
A Secret that ``watched`` holds (the process's watch of that one Secret, which the
AutoscalingListener controller keeps for each scale set's GitHub config and proxy Secrets) is
taken from it, with no request. Other Secrets, and ConfigMaps, are read with a GET (no watch of
every Secret in the namespace, so no cache of them), and a read is reused for
``reuse_reads_for`` seconds (default 10 s on the injected clock): a scale-up of 100 runners
reads the GitHub config Secret a few times, not 100 times (it was one GET per runner, ~12 % of a
runner's API requests). A rotated Secret takes effect within that window (at once when
watched); a read that did not give a usable client is never reused, so a Secret being fixed is
seen at once.

Clients built from the same credentials share one limiter: GitHub counts a credential's
requests, so an answer saying its quota is spent holds every client of those credentials until
the reset (``scaleset.github.limiter``); the limiter goes when no client of the credential is
left.

``GitHubClients`` keeps one client per distinct input: the namespace, the URL, the Secret's
name, the proxy and TLS settings as the object states them, and the uid + resourceVersion of
every Secret and ConfigMap read for them. Two scale sets that share the Secret and URL but not
the proxy or TLS settings have a client each; a rotated Secret gets a new client. It is a cache,
not state. A client is closed (its connection pool and credentials dropped) only once nobody
holds it and nobody asked for it for ``close_idle_after`` seconds (default 10 minutes on the
injected clock, longer than any call's time budget): a rotated Secret's old client, a deleted
scale set's client, alike. ``use(target)`` holds a client for a block (never closed while
held); ``client_for(target)`` hands one out for a call made at once. Closing is checked
whenever a client is asked for. A transport passed in ``ClientOptions`` is the caller's: no
client closes it. Problems the user must fix raise ``GitHubAccessError`` naming the field (L8);
its text never holds a credential. An ``http://`` config URL is one of them unless the options
allow it (``--allow-http-github-url``): refused here, before any Secret is read, it is refused
for every controller alike (``refusal`` says so without building a client, for a controller that
decides before it calls GitHub). API-server failures propagate as ``scaleset.kube.errors``
(transient: retry).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol

import httpx2
from pydantic import SecretStr, ValidationError

from scaleset.api import (
    AutoscalingRunnerSet,
    EphemeralRunner,
    EphemeralRunnerSet,
    ProxyConfig,
    TLSConfig,
    VaultConfig,
    to_json,
)
from scaleset.api.config_url import parse_config_url
from scaleset.api.validation import INSECURE_URL
from scaleset.clock import Clock
from scaleset.controllers.access_error import GitHubAccessError as GitHubAccessError
from scaleset.controllers.access_error import secret_data as secret_data
from scaleset.controllers.proxy_credentials import ProxyCredentials, credentials_of
from scaleset.github import (
    ActionsClient,
    CredentialLimiters,
    Credentials,
    GitHubApiMetrics,
    GitHubApp,
    InvalidConfigUrl,
    InvalidCredentials,
    PersonalAccessToken,
    RequestLimiter,
    SystemInfo,
)
from scaleset.github import ProxyConfig as ClientProxy
from scaleset.github import ProxyServer as ClientProxyServer
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import NotFound
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import CONFIG_MAP, SECRET, Kind
from scaleset.runtime.named_watches import WatchedRead

TOKEN_KEY = "github_token"  # noqa: S105 (key names, not secrets)
APP_ID_KEY = "github_app_id"
APP_INSTALLATION_ID_KEY = "github_app_installation_id"
APP_PRIVATE_KEY_KEY = "github_app_private_key"


class GitHubSettings(Protocol):
    """The GitHub fields a runner's, a runner set's and a scale set's spec each carry."""

    @property
    def github_config_url(self) -> str: ...
    @property
    def github_config_secret(self) -> str: ...
    @property
    def proxy(self) -> ProxyConfig | None: ...
    @property
    def github_server_tls(self) -> TLSConfig | None: ...
    @property
    def vault_config(self) -> VaultConfig | None: ...


@dataclass(frozen=True)
class GitHubTarget:
    """What a client is built from: the object's namespace and its GitHub settings.

    ``field_prefix`` is where the settings live in the object (``spec.`` for an ARS or ER,
    ``spec.ephemeralRunnerSpec.`` for an ERS), so errors name the real field.
    """

    namespace: str
    config_url: str
    config_secret: str
    proxy: ProxyConfig | None = None
    tls: TLSConfig | None = None
    vault: VaultConfig | None = None
    field_prefix: str = "spec."

    @classmethod
    def of_runner(cls, runner: EphemeralRunner) -> GitHubTarget:
        return cls._of(runner.metadata.namespace, runner.spec)

    @classmethod
    def of_runner_set(cls, runner_set: EphemeralRunnerSet) -> GitHubTarget:
        return cls._of(
            runner_set.metadata.namespace,
            runner_set.spec.ephemeral_runner_spec,
            field_prefix="spec.ephemeralRunnerSpec.",
        )

    @classmethod
    def of_scale_set(cls, scale_set: AutoscalingRunnerSet) -> GitHubTarget:
        return cls._of(scale_set.metadata.namespace, scale_set.spec)

    @classmethod
    def _of(
        cls, namespace: str, spec: GitHubSettings, *, field_prefix: str = "spec."
    ) -> GitHubTarget:
        return cls(
            namespace,
            spec.github_config_url,
            spec.github_config_secret,
            spec.proxy,
            spec.github_server_tls,
            spec.vault_config,
            field_prefix,
        )


@dataclass(frozen=True)
class ClientOptions:
    """How every client is built: the clock (token expiry, retry waits), User-Agent, the
    environment (proxy variables when the object sets no proxy; GITHUB_ACTIONS_FORCE_GHES), TLS
    verification, an httpx2 transport (tests), a metrics registry, and whether an ``http://``
    config URL is accepted (the controller's ``--allow-http-github-url``; refused by default)."""

    clock: Clock
    system_info: SystemInfo | None = None
    environ: Mapping[str, str] | None = None
    verify_tls: bool = True
    transport: httpx2.AsyncBaseTransport | None = None
    metrics: GitHubApiMetrics | None = None
    allow_http_github_url: bool = False


DEFAULT_REUSE_READS_FOR = 10.0
"""Seconds a Secret or ConfigMap read that gave a usable client is reused."""
DEFAULT_CLOSE_IDLE_AFTER = 600.0
"""Seconds a client nobody holds or asked for is kept before it is closed."""


@dataclass
class _Held:
    """A cached client: how many ``use`` blocks hold it, and when it was last asked for or
    let go (the clock's monotonic seconds)."""

    client: ActionsClient
    used_at: float
    holders: int = 0


@dataclass
class GitHubClients:
    """One ``ActionsClient`` per distinct GitHub configuration, rebuilt when a Secret changes,
    closed once unused (see the module docstring)."""

    kube: KubeClient
    options: ClientOptions
    reuse_reads_for: float = DEFAULT_REUSE_READS_FOR
    """Seconds a read of a Secret or ConfigMap that gave a usable client is reused (0: never)."""
    close_idle_after: float = DEFAULT_CLOSE_IDLE_AFTER
    """Seconds a client nobody holds (``use``) or asked for (``client_for``) is kept."""
    watched: WatchedRead | None = None
    """A Secret as a watch holds it (None from it, or no ``watched``: read it)."""
    _clients: dict[tuple[str, ...], _Held] = field(default_factory=dict)
    _reads: dict[tuple[str, str, str], tuple[KubeObject, float]] = field(default_factory=dict)
    """(kind, namespace, name) -> (the object read, when, on the clock's monotonic seconds)."""
    _in_flight: dict[tuple[str, str, str], asyncio.Future[KubeObject]] = field(default_factory=dict)
    _limiters: CredentialLimiters = field(init=False)
    """One limiter per credential identity, shared by every client built from it: a spent quota
    met by one holds them all (``scaleset.github.limiter``); no cap and no rate of its own."""

    def __post_init__(self) -> None:
        clock = self.options.clock
        self._limiters = CredentialLimiters(
            lambda: RequestLimiter(max_concurrent=None, clock=clock)
        )

    def refusal(self, config_url: str, field_prefix: str = "spec.") -> GitHubAccessError | None:
        """Why these options refuse ``config_url`` (at ``field_prefix`` in its object), or None;
        no I/O: a URL that does not parse is left to ``client_for`` and ``validate``."""
        if self.options.allow_http_github_url:
            return None
        try:
            insecure = parse_config_url(config_url, environ=self.options.environ).insecure
        except InvalidConfigUrl:
            return None
        if not insecure:
            return None
        return GitHubAccessError(
            INSECURE_URL,
            f"{field_prefix}githubConfigUrl",
            "uses http://: the GitHub credentials of this namespace would cross the network in "
            "clear text, to whatever host the URL names; use https:// (a cluster admin may allow "
            "http for a test GitHub: the controller's --allow-http-github-url)",
        )

    async def client_for(self, target: GitHubTarget) -> ActionsClient:
        """The client for ``target``, for calls made at once (it stays open for at least
        ``close_idle_after`` seconds); ``GitHubAccessError`` when its settings are unusable.
        A caller that keeps the client across a longer piece of work holds it with ``use``."""
        return (await self._held_for(target)).client

    @asynccontextmanager
    async def use(self, target: GitHubTarget) -> AsyncIterator[ActionsClient]:
        """Hold the client for ``target`` for the block: it is not closed while held, whatever
        changes meanwhile (a rotated Secret gives later callers a new client)."""
        held = await self._held_for(target)
        held.holders += 1
        try:
            yield held.client
        finally:
            held.holders -= 1
            held.used_at = self.options.clock.monotonic()

    async def _held_for(self, target: GitHubTarget) -> _Held:
        await self._close_idle()
        used: list[tuple[str, str, str]] = []
        try:
            return await self._client_for(target, used)
        except GitHubAccessError:
            for read in used:  # what the user is fixing is read afresh next time
                self._reads.pop(read, None)
            raise

    async def _client_for(self, target: GitHubTarget, used: list[tuple[str, str, str]]) -> _Held:
        prefix = target.field_prefix
        if target.vault is not None and target.vault.type:
            raise GitHubAccessError(
                "VaultNotSupported",
                f"{prefix}vaultConfig",
                f"vault type {target.vault.type!r} is not supported by scaleset; "
                "use a Secret with github_token or GitHub App keys",
            )
        if not target.config_url:
            raise GitHubAccessError("InvalidConfigUrl", f"{prefix}githubConfigUrl", "is empty")
        try:
            config = parse_config_url(target.config_url, environ=self.options.environ)
        except InvalidConfigUrl as error:
            raise GitHubAccessError(
                "InvalidConfigUrl", f"{prefix}githubConfigUrl", str(error)
            ) from None
        refused = self.refusal(target.config_url, prefix)
        if refused is not None:
            raise refused
        if not target.config_secret:
            raise GitHubAccessError(
                "GitHubSecretMissing", f"{prefix}githubConfigSecret", "is empty"
            )
        secret = await self._read(
            SECRET, target.namespace, target.config_secret, f"{prefix}githubConfigSecret", used
        )
        proxy_reads = await self._proxy_secrets(target, used)
        ca_map = await self._ca_config_map(target, used)
        # everything the client is built from: what the object states, and the versions read
        key = (
            target.namespace,
            config.url,
            target.config_secret,
            _version(secret),
            json.dumps(to_json(target.proxy) if target.proxy else None, sort_keys=True),
            *(f"{name}={_version(obj)}" for name, obj in sorted(proxy_reads.items())),
            json.dumps(to_json(target.tls) if target.tls else None, sort_keys=True),
            _version(ca_map) if ca_map is not None else "",
        )
        now = self.options.clock.monotonic()
        cached = self._clients.get(key)
        if cached is not None:
            cached.used_at = now
            return cached
        credentials = _credentials(secret, f"{prefix}githubConfigSecret", target.config_secret)
        client = ActionsClient(
            config,
            credentials,
            system_info=self.options.system_info,
            proxy=self._proxy(target, proxy_reads),
            root_ca_pem=self._root_ca(target, ca_map),
            verify_tls=self.options.verify_tls,
            metrics=self.options.metrics,
            limiter=self._limiters.for_identity(credentials.identity()),
            clock=self.options.clock,
            environ=self.options.environ,
            transport=_KeptOpen(self.options.transport) if self.options.transport else None,
        )
        held = self._clients[key] = _Held(client, now)  # no await since the lookup: one build
        return held

    async def _close_idle(self) -> None:
        """Close the clients nobody holds and nobody asked for within ``close_idle_after``."""
        now = self.options.clock.monotonic()

        def idle(held: _Held) -> bool:
            return held.holders == 0 and now - held.used_at >= self.close_idle_after

        closed = False
        for key in [key for key, held in self._clients.items() if idle(held)]:
            held = self._clients.get(key)  # (a sweep running alongside may have closed it)
            if held is not None and idle(held):
                del self._clients[key]
                await held.client.aclose()
                closed = True
        if closed:  # a credential no client uses any more takes its limiter with it
            in_use = {held.client.credentials.identity() for held in self._clients.values()}
            self._limiters.retain(in_use)

    async def aclose(self) -> None:
        """Close every client (the process is stopping)."""
        held = list(self._clients.values())
        self._clients.clear()
        self._reads.clear()
        for entry in held:
            await entry.client.aclose()

    def __len__(self) -> int:
        """How many clients are open."""
        return len(self._clients)

    # --- reads -------------------------------------------------------------------------------

    async def _read(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        field_: str,
        used: list[tuple[str, str, str]],
    ) -> KubeObject:
        read_key = (kind.kind, namespace, name)
        used.append(read_key)
        held = self.watched(kind, namespace, name) if self.watched is not None else None
        if held is not None:
            return held
        now = self.options.clock.monotonic()
        reused = self._reads.get(read_key)
        if reused is not None and now - reused[1] < self.reuse_reads_for:
            return reused[0]
        self._forget_old_reads(now)
        try:
            obj = await self._shared_get(kind, read_key, now)
        except NotFound:
            self._reads.pop(read_key, None)
            what = "Secret" if kind is SECRET else "ConfigMap"
            reason = "GitHubSecretMissing" if kind is SECRET else "ConfigMapMissing"
            raise GitHubAccessError(
                reason, field_, f"{what} {namespace}/{name} does not exist"
            ) from None
        return obj

    async def _shared_get(
        self, kind: Kind, read_key: tuple[str, str, str], now: float
    ) -> KubeObject:
        """GET the object and remember it; callers asking while a GET of it is under way share
        its answer (two workers starting on a burst at once read the Secret once). The read is
        remembered before the shared GET counts as done, so a caller arriving just after it
        finds it (CI showed a second GET in that gap)."""
        pending = self._in_flight.get(read_key)
        if pending is None:
            _, namespace, name = read_key

            async def get_and_remember() -> KubeObject:
                obj = await self.kube.get(kind, ObjectKey(namespace, name))
                if self.reuse_reads_for > 0:
                    self._reads[read_key] = (obj, now)
                return obj

            pending = asyncio.ensure_future(get_and_remember())
            self._in_flight[read_key] = pending

            def finished(done: asyncio.Future[KubeObject]) -> None:
                if self._in_flight.get(read_key) is done:
                    del self._in_flight[read_key]
                if not done.cancelled():
                    done.exception()  # retrieved: every caller may have gone away

            pending.add_done_callback(finished)
        return await asyncio.shield(pending)

    def _forget_old_reads(self, now: float) -> None:
        """Drop reads past their window, so the memo holds only what recent calls used."""
        for read_key, (_, read_at) in list(self._reads.items()):
            if now - read_at >= self.reuse_reads_for:
                del self._reads[read_key]

    async def _proxy_secrets(
        self, target: GitHubTarget, used: list[tuple[str, str, str]]
    ) -> dict[str, KubeObject]:
        found: dict[str, KubeObject] = {}
        proxy = target.proxy
        if proxy is None:
            return found
        for scheme, server in (("http", proxy.http), ("https", proxy.https)):
            if server is None or not server.credential_secret_ref:
                continue
            name = server.credential_secret_ref
            if name not in found:
                found[name] = await self._read(
                    SECRET,
                    target.namespace,
                    name,
                    f"{target.field_prefix}proxy.{scheme}.credentialSecretRef",
                    used,
                )
        return found

    async def _ca_config_map(
        self, target: GitHubTarget, used: list[tuple[str, str, str]]
    ) -> KubeObject | None:
        ref = _ca_ref(target)
        if ref is None:
            return None
        name, _ = ref
        return await self._read(
            CONFIG_MAP,
            target.namespace,
            name,
            f"{target.field_prefix}githubServerTLS.certificateFrom.configMapKeyRef.name",
            used,
        )

    # --- building -----------------------------------------------------------------------------

    def _proxy(self, target: GitHubTarget, secrets: Mapping[str, KubeObject]) -> ClientProxy:
        proxy = target.proxy
        if proxy is None:
            return ClientProxy.from_environ(self.options.environ)
        servers: dict[str, ClientProxyServer | None] = {}
        for scheme, server in (("http", proxy.http), ("https", proxy.https)):
            if server is None or not server.url:
                servers[scheme] = None
                continue
            field_ = f"{target.field_prefix}proxy.{scheme}"
            credentials = ProxyCredentials()
            if server.credential_secret_ref:
                credentials = credentials_of(secrets[server.credential_secret_ref], field_)
            try:
                servers[scheme] = ClientProxyServer(
                    url=server.url, username=credentials.username, password=credentials.password
                )
            except ValidationError:
                raise GitHubAccessError(
                    "InvalidProxy", f"{field_}.url", "is not an http(s) proxy URL"
                ) from None
        return ClientProxy(
            http=servers["http"], https=servers["https"], no_proxy=tuple(proxy.no_proxy)
        )

    def _root_ca(self, target: GitHubTarget, config_map: KubeObject | None) -> str | None:
        ref = _ca_ref(target)
        if ref is None or config_map is None:
            return None
        name, key = ref
        return root_ca_pem(
            config_map,
            ObjectKey(target.namespace, name),
            key,
            f"{target.field_prefix}githubServerTLS.certificateFrom.configMapKeyRef.key",
        )


class _KeptOpen(httpx2.AsyncBaseTransport):
    """The caller's transport, shared by every client built with it: closing a client leaves
    it open (its owner closes it)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        return None


def _ca_ref(target: GitHubTarget) -> tuple[str, str] | None:
    tls = target.tls
    if tls is None or tls.certificate_from is None:
        return None
    ref = tls.certificate_from.config_map_key_ref
    if ref is None or not ref.name:
        return None
    return ref.name, ref.key


def _version(obj: KubeObject) -> str:
    return f"{obj.uid}@{obj.resource_version}"


def _credentials(secret: KubeObject, field_: str, name: str) -> Credentials:
    data = secret_data(secret, field_)
    token = data.get(TOKEN_KEY, "").strip()
    app_keys = [
        key for key in (APP_ID_KEY, APP_INSTALLATION_ID_KEY, APP_PRIVATE_KEY_KEY) if data.get(key)
    ]
    if token and app_keys:
        raise GitHubAccessError(
            "InvalidGitHubSecret",
            field_,
            f"Secret {secret.namespace}/{name} has both {TOKEN_KEY} and GitHub App keys; keep one",
        )
    if token:
        return PersonalAccessToken(token=SecretStr(token))
    if len(app_keys) != 3:
        missing = [
            key
            for key in (APP_ID_KEY, APP_INSTALLATION_ID_KEY, APP_PRIVATE_KEY_KEY)
            if key not in app_keys
        ]
        detail = (
            f"has no {TOKEN_KEY} and no GitHub App keys"
            if not app_keys
            else f"lacks {', '.join(missing)}"
        )
        raise GitHubAccessError(
            "InvalidGitHubSecret", field_, f"Secret {secret.namespace}/{name} {detail}"
        )
    installation = data[APP_INSTALLATION_ID_KEY].strip()
    # ASCII digits only ("²".isdigit() is true, int() refuses it), at most int64's 19 digits
    if not (installation.isascii() and installation.isdigit() and len(installation) <= 19) or (
        int(installation) <= 0
    ):
        raise GitHubAccessError(
            "InvalidGitHubSecret",
            field_,
            f"Secret {secret.namespace}/{name}: {APP_INSTALLATION_ID_KEY} is not a positive number",
        )
    try:
        return GitHubApp(
            app_id=data[APP_ID_KEY].strip(),
            installation_id=int(installation),
            private_key=SecretStr(data[APP_PRIVATE_KEY_KEY]),
        )
    except (ValidationError, InvalidCredentials):
        raise GitHubAccessError(
            "InvalidGitHubSecret",
            field_,
            f"Secret {secret.namespace}/{name}: {APP_PRIVATE_KEY_KEY} is not a PEM RSA key",
        ) from None


def credentials_from_secret(secret: KubeObject, field_: str) -> Credentials:
    """The PAT or GitHub App credentials in a GitHub config Secret, checked as ``client_for``
    checks them (``GitHubAccessError`` naming ``field_`` when unusable)."""
    return _credentials(secret, field_, secret.name)


def root_ca_pem(config_map: KubeObject, where: ObjectKey, key: str, key_field: str) -> str:
    """The PEM certificate under ``key`` of the ``githubServerTLS`` ConfigMap read at ``where``
    (``GitHubAccessError`` ``InvalidTlsConfig`` naming ``key_field`` when there is none)."""
    data = config_map.raw.get("data")
    pem = data.get(key) if isinstance(data, dict) else None
    if not isinstance(pem, str) or "BEGIN CERTIFICATE" not in pem:
        raise GitHubAccessError(
            "InvalidTlsConfig",
            key_field,
            f"ConfigMap {where.namespace}/{where.name} has no PEM certificate under {key!r}",
        )
    return pem
