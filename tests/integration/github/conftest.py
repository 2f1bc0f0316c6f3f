"""The client against the embedded fake GitHub/Actions service over real HTTP.

`harness` starts one fake per test on a shared ManualClock (the fake's token lifetimes and the
client's expiry checks read the same time), registers every secret the fake issues with the
secret guard, and builds clients whose retry sleeps are recorded instead of slept: tests assert
the exact backoff and Retry-After waits without waiting. With `sleeps_advance_clock` a recorded
sleep also moves the ManualClock, so the clients' per-call time budgets run out as they would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from tests.plugins.secret_guard import register_secret, register_secret_source

from scaleset.embedded.actions import FakeGitHub, FakeSettings, ManualClock
from scaleset.github import (
    ActionsClient,
    Credentials,
    GitHubApiMetrics,
    PersonalAccessToken,
    ProxyConfig,
)

PAT = "ghp_integrationTestToken0123456789abcdef"
POLL_HOLD_SECONDS = 0.3


@dataclass
class Harness:
    fake: FakeGitHub
    clock: ManualClock
    metrics_registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    sleeps: list[float] = field(default_factory=list)
    clients: list[ActionsClient] = field(default_factory=list)
    sleeps_advance_clock: bool = False

    def __post_init__(self) -> None:
        self.metrics = GitHubApiMetrics(self.metrics_registry)

    async def sleep(self, seconds: float) -> None:
        """Recorded instead of slept; yields once so other tasks run."""
        self.sleeps.append(seconds)
        if self.sleeps_advance_clock:
            self.clock.advance(seconds)
        await asyncio.sleep(0)

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
            sleep=self.sleep,
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
    clock = ManualClock()
    fake = FakeGitHub(
        clock=clock, poll_hold_seconds=POLL_HOLD_SECONDS, settings=settings, **fake_options
    )
    await fake.start()
    register_secret_source(fake.control.issued_secrets)
    fake.add_pat(register_secret(PAT))
    return Harness(fake, clock), fake


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    harness, fake = await start_harness()
    try:
        yield harness
    finally:
        for client in harness.clients:
            await client.aclose()
        await fake.stop()
