"""A synthetic bursty weekday, the same for the same seed: ``weekday(seed=...)``.

The shape of a product team's CI on a working day, in local time: quiet nights (a few jobs an
hour, and a nightly schedule that queues a burst at 02:00), a morning ramp from 07:00, a busy
plateau with a lunch dip, merge storms (a merged pull request starts a matrix of 15 to 40 jobs
within a minute and a half) scattered over working hours, and an evening tail. About 2,000 jobs.
Arrivals within each hour are a Poisson process at that hour's rate; durations are log-normal
(median 4 minutes, one in twenty over 17 minutes, capped at an hour).
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta

from scaleset.api.warm_windows import local_to_utc
from scaleset.simulate.trace import Job

HOURLY_RATE = (
    4, 4, 4, 4, 4, 4, 10, 60, 140, 170, 180, 170,
    100, 160, 180, 175, 150, 90, 45, 20, 12, 8, 6, 4,
)  # fmt: skip
"""Jobs an hour by local hour of the day (before the nightly burst and the merge storms)."""
NIGHTLY_AT = timedelta(hours=2)
NIGHTLY_JOBS = 40
STORMS = 8
STORM_HOURS = (9, 17)
STORM_JOBS = (15, 40)
STORM_SECONDS = 90.0
MEDIAN_DURATION = 240.0
DURATION_SIGMA = 0.9
MAX_DURATION = 3600.0
LABELS = ("self-hosted", "linux")
DEFAULT_DAY = date(2027, 1, 13)
"""A Wednesday."""


def weekday(
    seed: int = 1, day: date = DEFAULT_DAY, zone: str = "UTC", scale: float = 1.0
) -> list[Job]:
    """The jobs of one synthetic working day ``day`` in ``zone`` (``scale`` multiplies every
    rate and burst size), sorted by queue time."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible workload, not a secret
    midnight = datetime(day.year, day.month, day.day)
    starts: list[tuple[float, str]] = []  # (seconds after local midnight, kind)
    for hour, rate in enumerate(HOURLY_RATE):
        at = hour * 3600.0
        while True:
            at += rng.expovariate(rate * scale / 3600.0)
            if at >= (hour + 1) * 3600.0:
                break
            starts.append((at, "steady"))
    nightly = NIGHTLY_AT.total_seconds()
    starts.extend(
        (nightly + rng.uniform(0, 60), "nightly") for _ in range(round(NIGHTLY_JOBS * scale))
    )
    for _ in range(STORMS):
        begin = rng.uniform(STORM_HOURS[0] * 3600.0, STORM_HOURS[1] * 3600.0)
        size = round(rng.randint(*STORM_JOBS) * scale)
        starts.extend((begin + rng.uniform(0, STORM_SECONDS), "storm") for _ in range(size))
    jobs = []
    for seconds, _kind in sorted(starts):
        local = midnight + timedelta(seconds=seconds)
        queued = local_to_utc(local.replace(microsecond=0), zone) if zone != "UTC" else None
        queued_at = queued if queued is not None else local.replace(microsecond=0, tzinfo=UTC)
        duration = min(
            MAX_DURATION, round(rng.lognormvariate(0.0, DURATION_SIGMA) * MEDIAN_DURATION)
        )
        jobs.append(Job(queued_at, float(max(duration, 5)), LABELS))
    return sorted(jobs)
