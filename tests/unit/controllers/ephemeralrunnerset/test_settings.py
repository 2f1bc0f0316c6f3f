"""The controller's tunables from the environment."""

from __future__ import annotations

import pytest

from scaleset.controllers.ephemeralrunnerset.setup import ENVIRONMENT


def test_defaults_and_overrides() -> None:
    default = ENVIRONMENT.read({})
    assert default.apply.max_concurrent_creates == 64
    assert default.plan.breaker_threshold == 5
    tuned = ENVIRONMENT.read(
        {
            "SCALESET_RUNNER_SET_MAX_CONCURRENT_CREATES": "200",
            "SCALESET_RUNNER_SET_BREAKER_THRESHOLD": "3",
        }
    )
    assert tuned.apply.max_concurrent_creates == 200
    assert tuned.plan.breaker_threshold == 3


@pytest.mark.parametrize("value", ["0", "-1", "many", "2.5"])
def test_a_bad_value_is_one_clear_error(value: str) -> None:
    with pytest.raises(ValueError, match="SCALESET_RUNNER_SET_MAX_CONCURRENT_CREATES"):
        ENVIRONMENT.read({"SCALESET_RUNNER_SET_MAX_CONCURRENT_CREATES": value})
