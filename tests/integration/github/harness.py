"""The client against the embedded fake GitHub/Actions service over real HTTP: the harness.

``start_harness`` starts one fake and a ``Harness`` that builds clients on one
``WaitRecordingClock`` (a ``scaleset.clock.ManualClock``): the fake's token lifetimes, the
client's expiry checks, its call budgets and its retry waits all read the same time. Every sleep
on it is recorded and passes at once by advancing the clock, so tests assert the exact backoff
and Retry-After waits without waiting, and the per-call time budgets run out as they would in
real time. It also registers every secret the fake issues with the secret guard. The
``harness`` fixture (conftest) starts one per test.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from tests.plugins.secret_guard import register_secret, register_secret_source

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub, FakeSettings
from scaleset.github import (
    ActionsClient,
    Credentials,
    GitHubApiMetrics,
    PersonalAccessToken,
    ProxyConfig,
)

PAT = "ghp_integrationTestToken0123456789abcdef"
POLL_HOLD_SECONDS = 0.3


class WaitRecordingClock(ManualClock):
    """A ManualClock whose sleeps are recorded and end at once: each moves the clock forward by
    its length (then yields once so other tasks run). Fits clients whose waits need no other
    task to act meanwhile (retry back-off, Retry-After, the limiter's pause)."""

    def __init__(self) -> None:
        super().__init__()
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(max(0.0, seconds))
        await asyncio.sleep(0)


@dataclass
class Harness:
    fake: FakeGitHub
    clock: WaitRecordingClock
    metrics_registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    clients: list[ActionsClient] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.metrics = GitHubApiMetrics(self.metrics_registry)

    @property
    def sleeps(self) -> list[float]:
        """Every wait slept on the clock so far, in order."""
        return self.clock.sleeps

    @property
    def org_url(self) -> str:
        return self.fake.config_url("acme")

    def pat(self) -> PersonalAccessToken:
        return PersonalAccessToken(token=SecretStr(PAT))

    def client(
        self,
        config_url: str | None = None,
        credentials: Credentials | None = None,
        **options: Any,
    ) -> ActionsClient:
        options.setdefault("proxy", ProxyConfig())
        options.setdefault("environ", {})
        client = ActionsClient(
            config_url or self.org_url,
            credentials or self.pat(),
            clock=self.clock,
            metrics=self.metrics,
            **options,
        )
        self.clients.append(client)
        return client

    def requests(self, path_contains: str, method: str | None = None) -> list[int]:
        """Statuses the fake answered for matching requests, in order."""
        return [r.status for r in self.fake.control.requests_to(path_contains, method)]

    def counted(self, method: str, endpoint: str, status: str) -> float:
        value = self.metrics_registry.get_sample_value(
            "github_api_requests_total",
            {"method": method, "endpoint": endpoint, "status_code": status},
        )
        return value or 0.0


async def start_harness(
    settings: FakeSettings | None = None, **fake_options: Any
) -> tuple[Harness, FakeGitHub]:
    clock = WaitRecordingClock()
    fake = FakeGitHub(
        clock=clock, poll_hold_seconds=POLL_HOLD_SECONDS, settings=settings, **fake_options
    )
    await fake.start()
    register_secret_source(fake.control.issued_secrets)
    fake.add_pat(register_secret(PAT))
    return Harness(fake, clock), fake
