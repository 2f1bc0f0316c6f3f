"""Fixtures of the GitHub client integration tests: ``harness`` (``harness.py``), one fake
GitHub/Actions service per test, its clients closed afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.integration.github.harness import Harness, start_harness


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    harness, fake = await start_harness()
    try:
        yield harness
    finally:
        for client in harness.clients:
            await client.aclose()
        await fake.stop()
