"""What one ``scaleset demo`` run is told (``DemoOptions``), the soak's defaults, the CLI's
options turned into it (``demo_options``), and its JSON form for a seed run in a process of its
own (``seed_worker``). Its own module so that ``run`` and ``seed_worker`` both import it and not
each other."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scaleset.api import warm_windows
from scaleset.demo.system import CONTROLLER_NAMESPACE, RUNNER_NAMESPACE
from scaleset.demo.workload import CHAOS_PROFILES, SOAK, parse_runners
from scaleset.embedded.actions import FakeSettings


@dataclass(frozen=True)
class DemoOptions:
    """What one demo run is told. The CLI states the defaults of jobs, duration, runners, seed,
    chaos and grace again in its options (tests/unit/test_cli.py holds them equal)."""

    jobs: int = 30
    duration: float = 30.0
    min_runners: int = 0
    max_runners: int = 10
    seed: int = 1
    chaos: str = "none"
    kubeconfig: Path | None = None
    report_html: Path | None = None
    grace: float = 5.0
    settle_timeout: float = 90.0
    outage_seconds: float = 8.0
    """How long the ``github-outage`` fault keeps GitHub down."""
    burst_seconds: float = 5.0
    """How long the ``github-5xx-burst`` fault answers 500."""
    session_idle_seconds: float = FakeSettings.session_idle_timeout_seconds
    """The fake service expires a listener session idle this long (a stale one, too)."""
    stale_session_seconds: float = 20.0
    """How long the stale-session restart keeps GitHub from deleting message sessions (longer
    than the GitHub client's own retries, so the restarted listener's delete fails)."""
    controller_namespace: str = CONTROLLER_NAMESPACE
    runner_namespace: str = RUNNER_NAMESPACE
    warm_windows: tuple[str, ...] = ()
    """The scale set's warm windows, each as ``scaleset.api.warm_windows.TEXT_FORM``."""
    registration_pass_interval: float = 30.0
    """Seconds between two registration passes (``SCALESET_REGISTRATION_PASS_INTERVAL``; 5 min
    by default), compressed as the grace is: L6 promises that a registration left without a
    runner is removed within one pass, and the run is settled only once none is left, so one
    pass must fit in it."""


@dataclass(frozen=True)
class SoakDefaults:
    jobs: int = 1000
    duration: float = 120.0
    runners: str = "0:40"
    outage_seconds: float = 60.0
    session_idle_seconds: float = 90.0
    settle_timeout: float = 240.0


SOAK_DEFAULTS = SoakDefaults()
"""``--chaos soak`` without ``--jobs``/``--duration``/``--runners``: 1,000 short jobs over two
minutes on up to 40 runners, a one-minute outage, sessions idle-expired after 90 s (longer than
the outage, so only the stale-session restart waits for an expiry)."""


def demo_options(
    *,
    chaos: str = "none",
    jobs: int | None = None,
    duration: float | None = None,
    runners: str | None = None,
    seed: int = 1,
    grace: float = 5.0,
    kubeconfig: Path | None = None,
    report_html: Path | None = None,
    windows: tuple[str, ...] = (),
) -> DemoOptions:
    """The options of ``scaleset demo``: ``None`` takes the profile's default (the soak has its
    own, ``SOAK_DEFAULTS``). Raises ``ValueError`` naming a bad option."""
    if chaos not in CHAOS_PROFILES:
        raise ValueError(f"--chaos {chaos!r}: unknown profile (known: {', '.join(CHAOS_PROFILES)})")
    soak = chaos == SOAK
    extra: dict[str, Any] = {}
    if soak:
        extra = {
            "outage_seconds": SOAK_DEFAULTS.outage_seconds,
            "session_idle_seconds": SOAK_DEFAULTS.session_idle_seconds,
            "settle_timeout": SOAK_DEFAULTS.settle_timeout,
        }
        jobs = SOAK_DEFAULTS.jobs if jobs is None else jobs
        duration = SOAK_DEFAULTS.duration if duration is None else duration
        runners = SOAK_DEFAULTS.runners if runners is None else runners
    jobs = 30 if jobs is None else jobs
    duration = 30.0 if duration is None else duration
    min_runners, max_runners = parse_runners("0:10" if runners is None else runners)
    if jobs < 0 or duration <= 0 or grace < 0:
        raise ValueError("--jobs must be >= 0, --duration > 0 and --grace >= 0")
    problem = warm_windows.parse_texts(windows, "--window", max_runners=max_runners)[2]
    if problem is not None:
        raise ValueError(problem)
    return DemoOptions(
        jobs=jobs,
        duration=duration,
        min_runners=min_runners,
        max_runners=max_runners,
        seed=seed,
        chaos=chaos,
        kubeconfig=kubeconfig,
        report_html=report_html,
        grace=grace,
        warm_windows=tuple(windows),
        **extra,
    )


PATH_FIELDS = ("kubeconfig", "report_html")


def options_to_json(options: DemoOptions) -> str:
    data: dict[str, Any] = dict(vars(options))
    for name in PATH_FIELDS:
        data[name] = None if data[name] is None else str(data[name])
    return json.dumps(data)


def options_from_json(text: str) -> DemoOptions:
    data: dict[str, Any] = json.loads(text)
    for name in PATH_FIELDS:
        data[name] = None if data.get(name) is None else Path(data[name])
    data["warm_windows"] = tuple(data.get("warm_windows") or ())
    return DemoOptions(**data)
