"""GitHub clients built from an object's githubConfigUrl and the GitHub config Secret in its
namespace (PAT or GitHub App keys, as ARC's chart writes them), on both API-server backends and
the fake GitHub service: the client works, is reused until the Secret changes, and every unusable
setting is a ``GitHubAccessError`` naming the field (L8), with no credential in its text."""

from __future__ import annotations

import asyncio
import base64
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
import pytest
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import SecretRegistry, register_secret, register_secret_source
from tests.support.kube import make_client
from tests.support.request_log import request_log
from tests.support.waiting import eventually

from scaleset.api import EphemeralRunner
from scaleset.certs import (
    CertifiedKey,
    certificate_pem,
    issue_serving_certificate,
    new_certificate_authority,
    private_key_pem,
)
from scaleset.clock import ManualClock
from scaleset.controllers.github_access import (
    ClientOptions,
    GitHubAccessError,
    GitHubClients,
    GitHubTarget,
)
from scaleset.embedded.actions import FakeGitHub
from scaleset.github import ActionsClient, GitHubApp, PersonalAccessToken, TlsVerificationFailed
from scaleset.kube import ClientSettings, KubeClient, ObjectKey
from scaleset.kube.resources import CONFIG_MAP, SECRET
from scaleset.runtime.named_watches import NamedWatches

PAT = "ghp_githubAccessTestToken0123456789abcd"
CONFIG_SECRET = "github-config"


@pytest.fixture(scope="session")
async def client(kube_backend: KubeBackend) -> AsyncIterator[KubeClient]:
    settings = ClientSettings(qps=500.0, burst=1000, field_manager="scaleset-access-tests")
    async with KubeClient.from_kubeconfig(kube_backend.kubeconfig_path, settings=settings) as kc:
        yield kc


@pytest.fixture
async def fake() -> AsyncIterator[FakeGitHub]:
    clock = ManualClock()
    async with FakeGitHub(clock=clock, poll_hold_seconds=0.05) as server:
        server.add_pat(register_secret(PAT))
        register_secret_source(server.control.issued_secrets)
        yield server


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def clients(client: KubeClient, clock: ManualClock) -> AsyncIterator[GitHubClients]:
    access = GitHubClients(
        client, ClientOptions(clock=clock, environ={}, allow_http_github_url=True)
    )
    yield access
    await access.aclose()


def runner(
    namespace: str, url: str, config_secret: str = CONFIG_SECRET, **spec: object
) -> EphemeralRunner:
    return EphemeralRunner.model_validate(
        {
            "metadata": {"name": "r", "namespace": namespace},
            "spec": {"githubConfigUrl": url, "githubConfigSecret": config_secret, **spec},
        }
    )


async def put_secret(client: KubeClient, namespace: str, name: str, data: dict[str, str]) -> None:
    encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
    await client.create(SECRET, {"metadata": {"name": name}, "data": encoded}, namespace=namespace)


async def test_a_pat_secret_gives_a_working_client_reused_until_the_secret_changes(
    client: KubeClient,
    namespace: str,
    fake: FakeGitHub,
    clients: GitHubClients,
    clock: ManualClock,
) -> None:
    await put_secret(client, namespace, "github-config", {"github_token": PAT})
    target = GitHubTarget.of_runner(runner(namespace, fake.config_url("acme")))
    actions = await clients.client_for(target)
    assert isinstance(actions.credentials, PersonalAccessToken)
    scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), "arc")
    config = await actions.generate_jit_runner_config(scale_set_id, "r-1")
    assert config.runner.id > 0
    assert await clients.client_for(target) is actions

    other = "ghp_rotatedAccessTestToken0123456789abcd"
    fake.add_pat(register_secret(other))
    encoded = base64.b64encode(other.encode()).decode()
    await client.patch_merge(
        SECRET, ObjectKey(namespace, "github-config"), {"data": {"github_token": encoded}}
    )
    clock.advance(clients.reuse_reads_for)  # the earlier read is no longer reused
    rotated = await clients.client_for(target)
    assert rotated is not actions
    assert isinstance(rotated.credentials, PersonalAccessToken)
    assert rotated.credentials.token.get_secret_value() == other


async def test_a_secret_read_is_reused_within_the_window_and_read_again_after_it(
    client: KubeClient,
    namespace: str,
    fake: FakeGitHub,
    clients: GitHubClients,
    clock: ManualClock,
) -> None:
    await put_secret(client, namespace, CONFIG_SECRET, {"github_token": PAT})
    target = GitHubTarget.of_runner(runner(namespace, fake.config_url("acme")))
    actions = await clients.client_for(target)
    await client.delete(SECRET, ObjectKey(namespace, CONFIG_SECRET))

    clock.advance(clients.reuse_reads_for - 0.5)
    assert await clients.client_for(target) is actions  # no GET: the read is reused

    clock.advance(0.5)
    with pytest.raises(GitHubAccessError) as raised:
        await clients.client_for(target)
    assert raised.value.reason == "GitHubSecretMissing"


async def test_a_watched_secret_is_read_from_its_watch_and_a_rotation_counts_at_once(
    client: KubeClient, kube_backend: KubeBackend, namespace: str, fake: FakeGitHub
) -> None:
    """With the process's watch of the GitHub Secret (``NamedWatches``, as the manager process
    wires it), the client is built from the watch with no GET, and a rotated Secret gives a new
    client as soon as the watch shows it, with the clock standing still (no reuse window)."""
    await put_secret(client, namespace, CONFIG_SECRET, {"github_token": PAT})
    key = ObjectKey(namespace, CONFIG_SECRET)
    requests: list[str] = []
    clock = ManualClock()
    async with make_client(kube_backend, clock=clock, hooks=request_log(requests)) as counted:
        watches = NamedWatches(counted, SECRET, clock=clock)
        watches.follow("listener", [key], lambda: None)
        access = GitHubClients(
            counted,
            ClientOptions(clock=clock, environ={}, allow_http_github_url=True),
            watched=watches.holds,
        )
        task = asyncio.ensure_future(watches.run())
        try:

            async def listed() -> bool:
                return watches.cached(key) is not None

            await eventually(listed, what="the Secret's watch listed")
            target = GitHubTarget.of_runner(runner(namespace, fake.config_url("acme")))
            actions = await access.client_for(target)
            assert isinstance(actions.credentials, PersonalAccessToken)
            assert f"GET secrets/{CONFIG_SECRET}" not in requests, requests

            other = register_secret("ghp_watchedAccessTestToken0123456789abc")
            fake.add_pat(other)
            encoded = base64.b64encode(other.encode()).decode()
            patched = await client.patch_merge(SECRET, key, {"data": {"github_token": encoded}})

            def rotated() -> bool:
                cached = watches.cached(key)
                return cached is not None and cached.resource_version == patched.resource_version

            await eventually(rotated, what="the rotation in the watch")
            again = await access.client_for(target)
            assert again is not actions
            assert isinstance(again.credentials, PersonalAccessToken)
            assert again.credentials.token.get_secret_value() == other
            assert f"GET secrets/{CONFIG_SECRET}" not in requests, requests
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await access.aclose()


async def test_a_secret_being_fixed_is_read_afresh_at_once(
    client: KubeClient, namespace: str, fake: FakeGitHub, clients: GitHubClients
) -> None:
    """A read that gave no usable client is not reused: the fix counts at the next call, with
    the clock standing still."""
    await put_secret(client, namespace, CONFIG_SECRET, {"github_app_id": "1"})
    target = GitHubTarget.of_runner(runner(namespace, fake.config_url("acme")))
    with pytest.raises(GitHubAccessError) as raised:
        await clients.client_for(target)
    assert raised.value.reason == "InvalidGitHubSecret"

    encoded = base64.b64encode(PAT.encode()).decode()
    await client.replace(
        SECRET,
        {
            "metadata": {"name": CONFIG_SECRET, "namespace": namespace},
            "data": {"github_token": encoded},
        },
    )
    actions = await clients.client_for(target)
    assert isinstance(actions.credentials, PersonalAccessToken)


async def test_github_app_keys_give_an_app_client(
    client: KubeClient, namespace: str, fake: FakeGitHub, clients: GitHubClients
) -> None:
    app = fake.add_github_app(app_id="4242", installation_id=77)
    register_secret(app.private_key_pem)
    await put_secret(
        client,
        namespace,
        "github-config",
        {
            "github_app_id": "4242",
            "github_app_installation_id": "77",
            "github_app_private_key": app.private_key_pem,
        },
    )
    actions = await clients.client_for(
        GitHubTarget.of_runner(runner(namespace, fake.config_url("acme")))
    )
    assert isinstance(actions.credentials, GitHubApp)
    scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), "arc")
    assert (await actions.generate_jit_runner_config(scale_set_id, "r-2")).runner.id > 0


@pytest.mark.parametrize(
    ("data", "spec", "reason", "field"),
    [
        (None, {}, "GitHubSecretMissing", "spec.githubConfigSecret"),
        ({"other": "x"}, {}, "InvalidGitHubSecret", "spec.githubConfigSecret"),
        (
            {"github_app_id": "1", "github_app_private_key": "-----BEGIN nothing"},
            {},
            "InvalidGitHubSecret",
            "spec.githubConfigSecret",
        ),
        (
            {
                "github_app_id": "1",
                "github_app_installation_id": "2",
                "github_app_private_key": "no",
            },
            {},
            "InvalidGitHubSecret",
            "spec.githubConfigSecret",
        ),
        (
            {"github_token": PAT},
            {"vaultConfig": {"type": "azure_key_vault"}},
            "VaultNotSupported",
            "spec.vaultConfig",
        ),
        (
            {"github_token": PAT},
            {"proxy": {"https": {"url": "http://proxy:3128", "credentialSecretRef": "nope"}}},
            "GitHubSecretMissing",
            "spec.proxy.https.credentialSecretRef",
        ),
        (
            {"github_token": PAT},
            {
                "githubServerTLS": {
                    "certificateFrom": {"configMapKeyRef": {"name": "ca", "key": "ca.crt"}}
                }
            },
            "ConfigMapMissing",
            "spec.githubServerTLS.certificateFrom.configMapKeyRef.name",
        ),
    ],
)
async def test_L8_unusable_settings_name_the_field(
    client: KubeClient,
    namespace: str,
    fake: FakeGitHub,
    clients: GitHubClients,
    secret_guard: SecretRegistry,
    data: dict[str, str] | None,
    spec: dict[str, object],
    reason: str,
    field: str,
) -> None:
    if data is not None:
        await put_secret(client, namespace, "github-config", data)
    target = GitHubTarget.of_runner(runner(namespace, fake.config_url("acme"), **spec))
    with pytest.raises(GitHubAccessError) as caught:
        await clients.client_for(target)
    assert (caught.value.reason, caught.value.field) == (reason, field)
    assert str(caught.value).startswith(field)
    secret_guard.assert_clean(caught.value)


async def test_L8_a_bad_config_url_names_the_field(namespace: str, clients: GitHubClients) -> None:
    with pytest.raises(GitHubAccessError) as caught:
        await clients.client_for(GitHubTarget.of_runner(runner(namespace, "not a url")))
    assert (caught.value.reason, caught.value.field) == ("InvalidConfigUrl", "spec.githubConfigUrl")


def serving_context() -> tuple[CertifiedKey, ssl.SSLContext]:
    """A fresh CA and a server context with a leaf it signed for 127.0.0.1."""
    now = datetime.now(UTC)
    ca = new_certificate_authority("test github CA", now, timedelta(days=1))
    leaf = issue_serving_certificate(
        ca,
        "127.0.0.1",
        dns_names=[],
        ip_addresses=["127.0.0.1"],
        now=now,
        validity=timedelta(days=1),
    )
    with tempfile.TemporaryDirectory() as directory:
        cert_file, key_file = Path(directory, "tls.crt"), Path(directory, "tls.key")
        cert_file.write_bytes(certificate_pem(leaf.cert))
        key_file.write_bytes(private_key_pem(leaf.key))
        server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_context.load_cert_chain(cert_file, key_file)
    return ca, server_context


async def test_the_custom_ca_from_the_configmap_is_trusted(
    client: KubeClient, namespace: str, clients: GitHubClients
) -> None:
    ca, server_context = serving_context()
    async with FakeGitHub(clock=ManualClock(), ssl_context=server_context) as fake:
        fake.add_pat(PAT)
        register_secret_source(fake.control.issued_secrets)
        await put_secret(client, namespace, CONFIG_SECRET, {"github_token": PAT})
        await client.create(
            CONFIG_MAP,
            {
                "metadata": {"name": "github-ca"},
                "data": {"ca.crt": certificate_pem(ca.cert).decode()},
            },
            namespace=namespace,
        )
        tls = {"certificateFrom": {"configMapKeyRef": {"name": "github-ca", "key": "ca.crt"}}}
        scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), "arc")
        trusting = await clients.client_for(
            GitHubTarget.of_runner(runner(namespace, fake.config_url("acme"), githubServerTLS=tls))
        )
        assert (await trusting.generate_jit_runner_config(scale_set_id, "r-tls")).runner.id > 0
        plain = await clients.client_for(
            GitHubTarget.of_runner(runner(namespace, fake.config_url("acme")))
        )
        with pytest.raises(TlsVerificationFailed):
            await plain.generate_jit_runner_config(scale_set_id, "r-plain")


async def test_the_proxy_and_its_credentials_come_from_the_spec(
    client: KubeClient, namespace: str, clients: GitHubClients
) -> None:
    await put_secret(client, namespace, CONFIG_SECRET, {"github_token": PAT})
    password = register_secret("proxy-password-0123456789")
    await put_secret(client, namespace, "proxy-auth", {"username": "me", "password": password})
    proxy = {
        "https": {"url": "http://proxy.internal:3128", "credentialSecretRef": "proxy-auth"},
        "noProxy": ["github.internal"],
    }
    actions = await clients.client_for(
        GitHubTarget.of_runner(runner(namespace, "https://github.com/acme", proxy=proxy))
    )
    assert actions.proxy.https is not None
    assert actions.proxy.https.url == "http://proxy.internal:3128"
    assert actions.proxy.https.username == "me"
    assert actions.proxy.https.password is not None
    assert actions.proxy.https.password.get_secret_value() == password
    assert actions.proxy.http is None
    assert actions.proxy.no_proxy == ("github.internal",)


async def test_scale_sets_sharing_the_secret_and_url_but_not_proxy_or_tls_keep_a_client_each(
    client: KubeClient, namespace: str, fake: FakeGitHub, clients: GitHubClients
) -> None:
    """Three scale sets in one namespace, one Secret and one URL: one plain, one with a proxy
    (bypassed for the fake's address), one trusting a CA from a ConfigMap. Each has its own
    client, all work side by side, and asking for one never closes or rebuilds another (they
    used to close each other's: a RuntimeError out of the next call, and a new token
    bootstrap on every switch)."""
    await put_secret(client, namespace, CONFIG_SECRET, {"github_token": PAT})
    ca, _ = serving_context()
    await client.create(
        CONFIG_MAP,
        {"metadata": {"name": "github-ca"}, "data": {"ca.crt": certificate_pem(ca.cert).decode()}},
        namespace=namespace,
    )
    url = fake.config_url("acme")
    proxy = {"http": {"url": "http://proxy.invalid:3128"}, "noProxy": ["127.0.0.1"]}
    tls = {"certificateFrom": {"configMapKeyRef": {"name": "github-ca", "key": "ca.crt"}}}
    targets = [
        GitHubTarget.of_runner(runner(namespace, url)),
        GitHubTarget.of_runner(runner(namespace, url, proxy=proxy)),
        GitHubTarget.of_runner(runner(namespace, url, githubServerTLS=tls)),
    ]
    scale_set_id = fake.control.create_scale_set(url, "arc")
    handed = [await clients.client_for(target) for target in targets]
    assert len({id(actions) for actions in handed}) == 3

    async def register(actions: ActionsClient, name: str) -> int:
        return (await actions.generate_jit_runner_config(scale_set_id, name)).runner.id

    ids = await asyncio.gather(
        *(register(actions, f"r-{n}-{i}") for i, actions in enumerate(handed) for n in range(3))
    )
    assert all(ids)
    assert [await clients.client_for(target) for target in targets] == handed
    assert len(clients) == 3


class CallHook(httpx2.AsyncBaseTransport):
    """The test's transport for the GitHub clients: runs ``action`` once, while the first
    request whose path contains ``path`` is in flight (before it is sent on)."""

    def __init__(self, path: str, action: Callable[[], Awaitable[None]]) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._path = path
        self._action: Callable[[], Awaitable[None]] | None = action

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._action is not None and self._path in request.url.path:
            action, self._action = self._action, None
            await action()
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_a_client_in_use_is_not_closed_when_its_secret_rotates_mid_call(
    client: KubeClient, namespace: str, fake: FakeGitHub, clock: ManualClock
) -> None:
    """The Secret rotates while a call of a held client is in flight, and another caller gets
    the new client: the held one keeps working (its next call too) and is closed only once
    nobody has used it for the idle period."""
    await put_secret(client, namespace, CONFIG_SECRET, {"github_token": PAT})
    target = GitHubTarget.of_runner(runner(namespace, fake.config_url("acme")))
    scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), "arc")
    rotated: list[ActionsClient] = []

    async def rotate_and_ask() -> None:
        other = register_secret("ghp_rotatedMidCallToken0123456789abcdef")
        fake.add_pat(other)
        encoded = base64.b64encode(other.encode()).decode()
        await client.patch_merge(
            SECRET, ObjectKey(namespace, CONFIG_SECRET), {"data": {"github_token": encoded}}
        )
        clock.advance(clients.reuse_reads_for)
        rotated.append(await clients.client_for(target))

    transport = CallHook("generatejitconfig", rotate_and_ask)
    clients = GitHubClients(
        client,
        ClientOptions(clock=clock, environ={}, allow_http_github_url=True, transport=transport),
    )
    try:
        async with clients.use(target) as held:
            config = await held.generate_jit_runner_config(scale_set_id, "r-held")
            assert rotated
            assert rotated[0] is not held
            await held.remove_runner(config.runner.id)  # the held client still works
        half = clients.close_idle_after / 2
        clock.advance(half)
        assert await clients.client_for(target) is rotated[0]
        assert not held.engine.http.is_closed
        clock.advance(half)
        assert await clients.client_for(target) is rotated[0]
        assert held.engine.http.is_closed
        assert await rotated[0].get_runner_by_name("r-held") is None  # the shared transport too
    finally:
        await clients.aclose()
        await transport.aclose()


async def test_a_client_nobody_uses_is_closed_after_the_idle_period(
    client: KubeClient, namespace: str, fake: FakeGitHub, clients: GitHubClients, clock: ManualClock
) -> None:
    """A deleted scale set's client (its connection pool, its credentials) does not stay for
    ever: once nobody has asked for it or held it for ``close_idle_after`` seconds on the
    clock, it is closed the next time any client is asked for; a held one never is."""
    await put_secret(client, namespace, CONFIG_SECRET, {"github_token": PAT})
    await put_secret(client, namespace, "other-config", {"github_token": PAT})
    deleted = GitHubTarget.of_runner(runner(namespace, fake.config_url("acme")))
    active = GitHubTarget.of_runner(runner(namespace, fake.config_url("acme"), "other-config"))
    gone = await clients.client_for(deleted)
    await clients.client_for(active)

    clock.advance(clients.close_idle_after - 1)
    await clients.client_for(active)
    assert not gone.engine.http.is_closed
    clock.advance(1)
    await clients.client_for(active)
    assert gone.engine.http.is_closed
    assert len(clients) == 1

    async with clients.use(deleted) as held:
        clock.advance(10 * clients.close_idle_after)
        await clients.client_for(active)
        assert not held.engine.http.is_closed
    clock.advance(clients.close_idle_after)
    await clients.client_for(active)
    assert held.engine.http.is_closed


async def test_a_spent_quota_holds_every_client_of_those_credentials(
    client: KubeClient, namespace: str, fake: FakeGitHub, clients: GitHubClients, clock: ManualClock
) -> None:
    """GitHub counts a credential's requests, not a client's. Two scale sets share one Secret (a
    client each: their proxy settings differ). When one's JIT request is answered that the
    quota is spent (403, x-ratelimit-remaining 0, the reset 20 s away), the other's waits those
    20 s on the clock without sending; a scale set with other credentials goes on."""
    other_pat = "ghp_githubAccessOtherToken0123456789abc"
    fake.add_pat(register_secret(other_pat))
    await put_secret(client, namespace, CONFIG_SECRET, {"github_token": PAT})
    await put_secret(client, namespace, "other-config", {"github_token": other_pat})
    url = fake.config_url("acme")
    proxy = {"http": {"url": "http://proxy.invalid:3128"}, "noProxy": ["127.0.0.1"]}
    first = await clients.client_for(GitHubTarget.of_runner(runner(namespace, url)))
    second = await clients.client_for(GitHubTarget.of_runner(runner(namespace, url, proxy=proxy)))
    third = await clients.client_for(GitHubTarget.of_runner(runner(namespace, url, "other-config")))
    assert len({id(first), id(second), id(third)}) == 3
    scale_set_id = fake.control.create_scale_set(url, "arc")
    fake.control.faults.fail_next(
        1,
        403,
        body='{"message": "API rate limit exceeded"}',
        content_type="application/json",
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(clock.time()) + 20)},
        surface=None,
        path_contains="generatejitconfig",
    )

    def jit_statuses() -> list[int]:
        return [r.status for r in fake.control.requests_to("generatejitconfig")]

    limited = asyncio.create_task(first.generate_jit_runner_config(scale_set_id, "r-1"))
    await eventually(lambda: clock.sleepers == 1, what="the limited call waiting for its retry")
    assert jit_statuses() == [403]
    held = asyncio.create_task(second.generate_jit_runner_config(scale_set_id, "r-2"))
    await eventually(lambda: clock.sleepers == 2, what="the other client's JIT request held")
    assert (await third.generate_jit_runner_config(scale_set_id, "r-3")).runner.id > 0
    assert jit_statuses() == [403, 200]  # the held client sent nothing meanwhile
    clock.advance(20)
    async with asyncio.timeout(10):
        configs = await asyncio.gather(limited, held)
    assert all(config.runner.id > 0 for config in configs)
    assert jit_statuses() == [403, 200, 200, 200]
