"""Proxy routing and TLS trust against the fake (§1.8): a loopback proxy, CAs made by trustme.

The proxy resolves every host name to 127.0.0.1, so a config URL on the made-up host
`fake.test` is reachable only through it: a successful call proves the proxy carried it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx2
import pytest
import trustme
from pydantic import SecretStr
from tests.integration.github.harness import Harness, start_harness
from tests.plugins.secret_guard import SecretRegistry

from scaleset.embedded.actions import FakeGitHub
from scaleset.github import (
    CallKind,
    ProxyConfig,
    ProxyServer,
    RetryPolicy,
    Timeouts,
    TlsVerificationFailed,
    TransportFailure,
)

FAKE_HOST = "fake.test"


@dataclass
class ProxiedRequest:
    method: str
    target: str
    proxy_authorization: str | None


@dataclass
class LoopbackProxy:
    """A minimal HTTP proxy: CONNECT tunnels, and one absolute-form request per connection."""

    requests: list[ProxiedRequest] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        headers = [line.split(":", 1) for line in lines[1:] if ":" in line]
        auth = next((v.strip() for k, v in headers if k.lower() == "proxy-authorization"), None)
        self.requests.append(ProxiedRequest(method, target, auth))
        if method == "CONNECT":
            port = int(target.rsplit(":", 1)[1])
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await _pipe_both(reader, writer, up_reader, up_writer)
            return
        parts = urlsplit(target)
        origin_form = parts.path + (f"?{parts.query}" if parts.query else "")
        kept = [
            f"{k}:{v}"
            for k, v in headers
            if k.lower() not in ("proxy-authorization", "connection", "proxy-connection")
        ]
        length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
        body = await reader.readexactly(length) if length else b""
        request = "\r\n".join([f"{method} {origin_form} {version}", *kept, "Connection: close"])
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", parts.port or 80)
        up_writer.write(request.encode("latin-1") + b"\r\n\r\n" + body)
        await up_writer.drain()
        await _pipe_both(reader, writer, up_reader, up_writer)


async def _pipe_both(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while chunk := await source.read(65536):
                sink.write(chunk)
                await sink.drain()
        except ConnectionError:
            pass
        finally:
            with contextlib.suppress(Exception):
                sink.close()

    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


@pytest.fixture
async def proxy() -> AsyncIterator[LoopbackProxy]:
    server = LoopbackProxy()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def hidden_url(harness: Harness, scheme: str = "http") -> str:
    """The org config URL on a host name only the proxy can resolve."""
    port = urlsplit(harness.fake.base_url).port
    return f"{scheme}://{FAKE_HOST}:{port}/acme"


GITHUB_CALLS = ("/registration-token", "/actions/runner-registration")


async def test_http_proxy_from_config_carries_the_github_calls(
    harness: Harness, proxy: LoopbackProxy
) -> None:
    client = harness.client(hidden_url(harness), proxy=ProxyConfig(http=ProxyServer(url=proxy.url)))
    assert await client.get_runner_scale_set(1, "x") is None
    targets = [(r.method, r.target) for r in proxy.requests]
    port = urlsplit(harness.fake.base_url).port
    assert targets == [
        ("POST", f"http://{FAKE_HOST}:{port}/api/v3/orgs/acme/actions/runners/registration-token"),
        ("POST", f"http://{FAKE_HOST}:{port}/api/v3/actions/runner-registration"),
    ]
    # The tenant URL the fake hands out is loopback, which is never proxied.
    assert harness.requests("runnerscalesets") == [200]


async def test_proxy_from_environment_with_credentials(
    harness: Harness, proxy: LoopbackProxy, secret_guard: SecretRegistry
) -> None:
    password = secret_guard.register("proxy-password-1234")
    proxy_url = proxy.url.replace("http://", f"http://scaleset:{password}@")
    client = harness.client(hidden_url(harness), proxy=None, environ={"HTTP_PROXY": proxy_url})
    assert await client.get_runner_scale_set(1, "x") is None
    expected = "Basic " + base64.b64encode(f"scaleset:{password}".encode()).decode()
    assert [r.proxy_authorization for r in proxy.requests] == [expected, expected]
    secret_guard.assert_clean(client.proxy, repr(client))


async def test_no_proxy_bypasses_the_proxy(harness: Harness, proxy: LoopbackProxy) -> None:
    quick = Timeouts().replace(CallKind.GITHUB_API, httpx2.Timeout(1.0))
    client = harness.client(
        hidden_url(harness),
        proxy=None,
        environ={"HTTP_PROXY": proxy.url, "NO_PROXY": f".example,{FAKE_HOST}"},
        retry=RetryPolicy(max_retries=0),
        timeouts=quick,
    )
    with pytest.raises(TransportFailure):  # fake.test cannot be reached directly
        await client.get_runner_scale_set(1, "x")
    assert proxy.requests == []


async def test_loopback_targets_skip_a_configured_proxy(
    harness: Harness, proxy: LoopbackProxy
) -> None:
    client = harness.client(proxy=ProxyConfig(http=ProxyServer(url=proxy.url)))
    assert await client.get_runner_scale_set(1, "x") is None
    assert proxy.requests == []


# --- TLS ------------------------------------------------------------------------------


@dataclass
class TlsFake:
    harness: Harness
    ca: trustme.CA


async def start_tls_fake(ca: trustme.CA, issuer: trustme.CA) -> tuple[TlsFake, FakeGitHub]:
    server_cert = issuer.issue_cert(FAKE_HOST, "127.0.0.1", "localhost")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_cert.configure_cert(context)
    harness, fake = await start_harness(ssl_context=context)
    return TlsFake(harness, ca), fake


@pytest.fixture(params=["root", "intermediate"])
async def tls_fake(request: pytest.FixtureRequest) -> AsyncIterator[TlsFake]:
    ca = trustme.CA()
    issuer = ca if request.param == "root" else ca.create_child_ca()
    tls, fake = await start_tls_fake(ca, issuer)
    try:
        yield tls
    finally:
        for client in tls.harness.clients:
            await client.aclose()
        await fake.stop()


def ca_pem(ca: trustme.CA) -> str:
    return ca.cert_pem.bytes().decode()


async def test_custom_root_ca_is_trusted(tls_fake: TlsFake) -> None:
    harness = tls_fake.harness
    assert harness.fake.base_url.startswith("https://")
    client = harness.client(root_ca_pem=ca_pem(tls_fake.ca))
    assert await client.get_runner_scale_set(1, "x") is None
    admin = client.auth.current
    assert admin is not None
    assert admin.url.startswith("https://")


async def test_unknown_authority_fails_without_retry(tls_fake: TlsFake) -> None:
    harness = tls_fake.harness
    client = harness.client()
    with pytest.raises(TlsVerificationFailed, match="CERTIFICATE_VERIFY_FAILED"):
        await client.get_runner_scale_set(1, "x")
    assert harness.sleeps == []
    assert harness.fake.control.requests == []


async def test_tls_verification_can_be_disabled(tls_fake: TlsFake) -> None:
    client = tls_fake.harness.client(verify_tls=False)
    assert await client.get_runner_scale_set(1, "x") is None


async def test_https_through_the_proxy_tunnel(tls_fake: TlsFake, proxy: LoopbackProxy) -> None:
    harness = tls_fake.harness
    client = harness.client(
        hidden_url(harness, "https"),
        root_ca_pem=ca_pem(tls_fake.ca),
        proxy=ProxyConfig(
            https=ProxyServer(url=proxy.url, username="u", password=SecretStr("p-1234567"))
        ),
    )
    assert await client.get_runner_scale_set(1, "x") is None
    port = urlsplit(harness.fake.base_url).port
    assert {(r.method, r.target) for r in proxy.requests} == {("CONNECT", f"{FAKE_HOST}:{port}")}
    assert harness.requests("runner-registration") == [201]


def test_invalid_custom_ca_is_a_clear_error(harness: Harness) -> None:
    with pytest.raises(ValueError, match="custom root CA"):
        harness.client(root_ca_pem="-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n")
