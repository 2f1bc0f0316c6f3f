"""Leader-election timings are held to client-go's constraints, with an error that says which."""

from __future__ import annotations

import pytest

from scaleset.runtime.leader import LeaderElectionConfig


def config(lease: float, renew: float, retry: float) -> LeaderElectionConfig:
    return LeaderElectionConfig(
        lease_name="l",
        namespace="ns",
        identity="me",
        lease_duration=lease,
        renew_deadline=renew,
        retry_period=retry,
    )


def test_client_go_defaults_are_accepted() -> None:
    defaults = LeaderElectionConfig(lease_name="l", namespace="ns", identity="me")
    assert (defaults.lease_duration, defaults.renew_deadline, defaults.retry_period) == (
        15.0,
        10.0,
        2.0,
    )
    config(3.0, 2.0, 1.6)  # 2.0 > 1.6 x 1.2 = 1.92


@pytest.mark.parametrize(
    ("lease", "renew", "retry", "message"),
    [
        (10.0, 10.0, 2.0, "lease duration must be greater than the renew deadline"),
        (8.0, 10.0, 2.0, "lease duration must be greater than the renew deadline"),
        (15.0, 10.0, 9.0, r"renew deadline must be greater than the retry period x 1\.2"),
        (3.0, 2.0, 1.8, r"renew deadline must be greater than the retry period x 1\.2"),
        (15.0, 10.0, 0.0, "greater than zero"),
        (15.0, -1.0, 2.0, "greater than zero"),
    ],
)
def test_timings_client_go_refuses_are_refused_with_the_rule(
    lease: float, renew: float, retry: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        config(lease, renew, retry)
