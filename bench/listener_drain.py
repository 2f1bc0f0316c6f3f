"""Listener benchmark: how fast a backlog of messages drains after a blackout.

The session holds ``--backlog`` messages when the listener starts (the blackout's backlog: a
listener killed until its successor polls), each with the JobCompleted of one Running runner
and the JobStarted of another: the real ``Listener`` (our ``KubeClient`` and GitHub client)
against the fake GitHub service in this process and the embedded API server in its own
process. Timed from the fake's answer to the first poll with a message to its answer to the last
message's acknowledgement; the rate is messages per second. A second row per profile: one
message of 45 JobStarted (Pending runners) followed by 5 JobCompleted, timed to the last
JobCompleted written (where a JobCompleted waits inside its message). Profiles: ``zero`` (no added
latency) and ``realistic`` (``_system.REALISTIC``: GitHub +300 ms per call, the API server
+10 ms per request). Prints each row and writes the Markdown table to
bench/results/listener-drain.md (``--quick``: one run of 5 messages, zero latency only).

    .venv/bin/python bench/listener_drain.py [--backlog 20] [--runs 3] [--profiles zero,realistic]
        [--quick] [--output PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import command_line, header, run_scope
from _system import API_LATENCY, PROFILES, apply_github_profile
from listener_jobstarted import (
    NAMESPACE_NAME,
    PAT,
    RUNNER_SET,
    _pin,
    _serve,
    create_pending,
    inject,
    job_started,
    setup_cluster,
)
from prometheus_client import CollectorRegistry

from scaleset.clock import SystemClock
from scaleset.embedded.actions import FakeGitHub
from scaleset.github import ActionsClient, ProxyConfig, SystemInfo
from scaleset.kube.client import ClientSettings, KubeClient
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER
from scaleset.listener.config import parse_config
from scaleset.listener.loop import Listener, LoopSettings
from scaleset.listener.main import KUBE_SETTINGS
from scaleset.listener.metrics import ListenerMetrics, ScaleSetIdentity

RESULTS = Path(__file__).parent / "results"
MIXED_STARTED = 45
MIXED_COMPLETED = 5


def job_completed(name: str, request_id: int) -> dict[str, Any]:
    return {**job_started(name, request_id), "messageType": "JobCompleted", "result": "succeeded"}


async def running_runner(admin: KubeClient, name: str) -> None:
    await create_pending(admin, name)
    await admin.patch_merge(
        EPHEMERAL_RUNNER,
        ObjectKey(NAMESPACE_NAME, name),
        {"status": {"phase": "Running"}},
        status=True,
    )


async def queue_backlog(admin: KubeClient, fake: FakeGitHub, run: int, backlog: int) -> list[int]:
    """``backlog`` messages: message i completes runner i's job and starts runner i+1's."""
    names = [f"drain-{run}-{i:03d}" for i in range(backlog + 1)]
    for name in names:
        await running_runner(admin, name)
    first_id = (run + 1) * 10_000
    ids = [first_id + i for i in range(backlog)]
    for i, message_id in enumerate(ids):
        jobs = [job_completed(names[i], message_id), job_started(names[i + 1], message_id + 5000)]
        inject(fake, message_id, jobs)
    return ids


async def queue_mixed(admin: KubeClient, fake: FakeGitHub, run: int) -> list[int]:
    """One message of ``MIXED_STARTED`` JobStarted on Pending runners, then ``MIXED_COMPLETED``
    JobCompleted on Running ones (the shape of a blackout's batch)."""
    started = [f"mixed-{run}-s{i:03d}" for i in range(MIXED_STARTED)]
    completed = [f"mixed-{run}-c{i:03d}" for i in range(MIXED_COMPLETED)]
    for name in started:
        await create_pending(admin, name)
    for name in completed:
        await running_runner(admin, name)
    message_id = (run + 1) * 10_000 + 9_000
    jobs = [job_started(n, message_id + i) for i, n in enumerate(started)]
    jobs += [job_completed(n, message_id + 100 + i) for i, n in enumerate(completed)]
    inject(fake, message_id, jobs)
    return [message_id]


async def one_run(
    admin: KubeClient,
    kubeconfig: str,
    fake: FakeGitHub,
    scale_set_id: int,
    run: int,
    backlog: int,
    *,
    mixed: bool = False,
) -> float:
    """Seconds from the first message answered to the last acknowledgement answered (with
    ``mixed``: to the last JobCompleted written)."""
    ids = await (
        queue_mixed(admin, fake, run) if mixed else queue_backlog(admin, fake, run, backlog)
    )
    fake.control.clear_requests()
    clock = SystemClock()
    config = parse_config(
        {
            "configure_url": fake.config_url("acme"),
            "github_token": PAT,
            "ephemeral_runner_set_namespace": NAMESPACE_NAME,
            "ephemeral_runner_set_name": RUNNER_SET,
            "max_runners": 1000,
            "runner_scale_set_id": scale_set_id,
        }
    )
    metrics = ListenerMetrics(
        ScaleSetIdentity(RUNNER_SET, NAMESPACE_NAME), registry=CollectorRegistry()
    )
    kube = KubeClient.from_kubeconfig(
        kubeconfig, settings=KUBE_SETTINGS, metrics=metrics.runtime, clock=clock
    )
    actions = ActionsClient(
        config.configure_url,
        config.credentials(),
        system_info=SystemInfo(scale_set_id=scale_set_id, subsystem="ghalistener"),
        proxy=ProxyConfig(),
        environ={},
        clock=clock,
        metrics=metrics.github,
    )
    listener = Listener(
        config,
        actions,
        kube,
        owner=f"bench-drain-{run}",
        clock=clock,
        metrics=metrics,
        settings=LoopSettings(),
    )
    stop = asyncio.Event()
    task = asyncio.create_task(listener.run(stop))

    def acked() -> list[float]:
        return [
            r.at
            for r in fake.control.requests_to("/messages/", "DELETE")
            if r.status == 204 and r.path.endswith(f"/{ids[-1]}")
        ]

    completed_at: list[float] = []

    def done() -> bool:
        if not mixed:
            return bool(acked())
        recorded = metrics.registry.get_sample_value(
            "scaleset_listener_job_events_total", {"type": "JobCompleted", "outcome": "recorded"}
        )
        if not completed_at and (recorded or 0) >= MIXED_COMPLETED:
            completed_at.append(time.time())
        return bool(completed_at) and bool(acked())

    try:
        for _ in range(60_000):
            if done():
                break
            await asyncio.sleep(0.001)
        else:
            raise TimeoutError("the backlog did not drain in 60 s")
        first = min(r.at for r in fake.control.requests_to("/messages", "GET") if r.status == 200)
        return (completed_at[0] if mixed else acked()[0]) - first
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await kube.close()
        await actions.aclose()


async def bench(profile: str, runs: int, backlog: int, *, mixed: bool = False) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        parent, child = multiprocessing.Pipe()
        server = multiprocessing.get_context("spawn").Process(
            target=_serve,
            args=(child, kubeconfig, API_LATENCY if profile == "realistic" else 0.0),
            daemon=True,
        )
        server.start()
        parent.recv()
        _pin(1)
        admin = KubeClient.from_kubeconfig(
            kubeconfig, settings=ClientSettings(qps=math.inf, burst=1000)
        )
        fake = FakeGitHub(clock=SystemClock(), poll_hold_seconds=0.05)
        await fake.start()
        if profile == "realistic":
            apply_github_profile(fake.control.faults)
        try:
            fake.add_pat(PAT)
            scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), "arc")
            await setup_cluster(admin)
            return [
                await one_run(admin, kubeconfig, fake, scale_set_id, run, backlog, mixed=mixed)
                for run in range(runs)
            ]
        finally:
            await fake.stop()
            await admin.close()
            parent.send("stop")
            server.join(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--backlog", type=int, default=20, help="messages queued at the start")
    parser.add_argument("--runs", type=int, default=3, help="backlogs drained per profile")
    parser.add_argument("--profiles", default=",".join(PROFILES), help="zero and/or realistic")
    parser.add_argument("--quick", action="store_true", help="one run of 5 messages, zero only")
    parser.add_argument("--output", type=Path, default=None, help="where the table goes")
    args = parser.parse_args(argv)
    scope = run_scope(parser, argv)
    command = command_line("bench/listener_drain.py", argv)
    load = os.getloadavg()[0]
    if args.quick:
        args.backlog, args.runs, args.profiles = 5, 1, "zero"
    profiles = [p for p in str(args.profiles).split(",") if p]
    if args.backlog < 1 or args.runs < 1 or any(p not in PROFILES for p in profiles):
        parser.error(f"--backlog/--runs >= 1; --profiles a subset of {','.join(PROFILES)}")
    lines = [
        "# Listener: a backlog drained after a blackout",
        "",
        *header(command, scope, load_at_start=load),
        "",
        "| profile | queued | drained in (each run) | median messages/s | median per message |",
        "| --- | --- | --- | ---: | ---: |",
    ]
    for profile in profiles:
        times = asyncio.run(bench(profile, args.runs, args.backlog))
        median = statistics.median(times)
        row = (
            f"| {profile} | backlog of {args.backlog} | "
            f"{', '.join(f'{t:.2f} s' for t in times)} | {args.backlog / median:.1f} "
            f"| {median / args.backlog * 1000:.0f} ms |"
        )
        print(row, flush=True)
        lines.append(row)
        times = asyncio.run(bench(profile, args.runs, args.backlog, mixed=True))
        row = (
            f"| {profile} | one message: {MIXED_STARTED} JobStarted, then {MIXED_COMPLETED} "
            f"JobCompleted (to the last JobCompleted written) | "
            f"{', '.join(f'{t:.3f} s' for t in times)} | | |"
        )
        print(row, flush=True)
        lines.append(row)
    out = args.output or RESULTS / f"listener-drain{'-quick' * args.quick}.md"
    out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
