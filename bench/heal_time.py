"""Heal time: a vanished runner pod replaced, a hung runner ended after its grace.

Issue 19, item 9. The whole demo system (``_system.BenchSystem``: the controller manager in its
own process, the embedded API server in another, the listener, simulated kubelet, runners and
fake GitHub in this one). Two measurements, ``--samples`` each (p50, min, max):

Each with zero added latency and with the realistic profile (``--profiles``; see
``_system.REALISTIC``).

1. **Pod vanished.** ``minRunners = maxRunners = 3``, all idle. The pod of one idle runner is
   deleted at once (grace period 0, as a node lost or a pod force-deleted); the time is from that
   delete to the first new runner pod (a pod with a UID not seen before: a new pod for the same
   EphemeralRunner or a replacement EphemeralRunner's pod, whichever L5 chooses). Target ≤ 2 s.
   After each sample the set returns to 3 Running pods before the next.
2. **Hung runner.** ``minRunners 0, maxRunners 1``; the next runner process is armed to hang
   after its job (the demo's hang fault, ``Chaos.hangs_pending``) and a 1 s job is queued. The
   time is from the job's finish on the fake service's ground truth (``finish_time``) to the
   runner pod seen terminating or gone. Target: grace + ≤ 2 s (grace: ``--grace``, default 5 s,
   the demo's).

API objects are polled every 25 ms (resolution of the figures).

    .venv/bin/python bench/heal_time.py [--samples 5] [--grace 5] [--profiles zero,realistic]
        [--quick] [--output PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _report import command_line, run_scope
from _system import (
    PROFILES,
    REALISTIC,
    ApiServerProcess,
    BenchSystem,
    apply_profile,
    header,
    runner_pods,
    running,
    say,
    wait_for_idle_runners,
)
from _system import workdir as make_workdir

from scaleset.demo.system import SCALE_SET_NAME
from scaleset.embedded.actions.model import JobState
from scaleset.kube import NotFound, ObjectKey
from scaleset.kube.resources import POD

RESULTS = Path(__file__).parent / "results"
POLL = 0.025
IDLE = 3
TARGET_REPLACE = 2.0
TARGET_AFTER_GRACE = 2.0


async def _pod_vanished(args: argparse.Namespace, work: Path, profile: str) -> list[float]:
    api = ApiServerProcess(work)
    samples: list[float] = []
    try:
        system = BenchSystem(work, api, min_runners=IDLE, max_runners=IDLE, grace=args.grace)
        await system.start()
        apply_profile(system, api, profile)
        assert system.client is not None
        try:
            for sample in range(args.samples):
                await wait_for_idle_runners(system, IDLE, 120)
                pods = await runner_pods(system)
                seen = {pod.raw["metadata"]["uid"] for pod in pods}
                victim = next(pod for pod in pods if running(pod))
                started = time.monotonic()
                await system.client.delete(
                    POD, ObjectKey(system.runner_namespace, victim.name), grace_period_seconds=0
                )
                while True:
                    now = await runner_pods(system)
                    if any(pod.raw["metadata"]["uid"] not in seen for pod in now):
                        break
                    if time.monotonic() - started > 60:
                        raise TimeoutError("no replacement runner pod within 60 s")
                    await asyncio.sleep(POLL)
                samples.append(time.monotonic() - started)
                label = f"[{profile}: pod vanished {sample + 1}/{args.samples}]"
                say(f"{label} {samples[-1] * 1000:.0f} ms")
        finally:
            await system.stop()
    finally:
        api.stop()
    return samples


async def _hung_runner(
    args: argparse.Namespace, work: Path, profile: str
) -> tuple[list[float], int]:
    api = ApiServerProcess(work)
    samples: list[float] = []
    not_hung = 0
    try:
        system = BenchSystem(work, api, min_runners=0, max_runners=1, grace=args.grace)
        await system.start()
        apply_profile(system, api, profile)
        assert system.client is not None
        assert system.fake is not None
        control = system.fake.control
        try:
            for sample in range(args.samples):
                await wait_for_idle_runners(system, 0, 120)
                system.chaos.hangs_pending = 1
                faulted_before = set(system.chaos.faulted)
                request = control.queue_job([SCALE_SET_NAME], duration_seconds=1.0)
                deadline = time.monotonic() + 120
                while (job := control.snapshot().job(request)).state != JobState.COMPLETED:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"job {request} did not finish within 120 s")
                    await asyncio.sleep(POLL)
                assert job.finish_time is not None
                hung = system.chaos.faulted - faulted_before
                if job.runner_name not in hung:
                    not_hung += 1  # the job ran on a runner that was not armed: no hang to heal
                    continue
                key = ObjectKey(system.runner_namespace, job.runner_name)
                while time.monotonic() < deadline:
                    try:
                        pod = await system.client.get(POD, key)
                    except NotFound:
                        break
                    if pod.raw["metadata"].get("deletionTimestamp"):
                        break
                    await asyncio.sleep(POLL)
                else:
                    raise TimeoutError(f"hung runner {job.runner_name} not ended within 120 s")
                samples.append(time.time() - job.finish_time)
                say(
                    f"[{profile}: hung runner {sample + 1}/{args.samples}] ended "
                    f"{samples[-1]:.2f} s after its job (grace {args.grace:g} s)"
                )
        finally:
            await system.stop()
    finally:
        api.stop()
    return samples, not_hung


@dataclass
class Results:
    vanished: list[float]
    hung: list[float]
    not_hung: int


def _row(profile: str, name: str, values: list[float], unit: float) -> str:
    fmt = ".0f" if unit == 1000 else ".2f"
    if not values:
        return f"| {profile} | {name} | 0 | – | – | – |"
    return (
        f"| {profile} | {name} | {len(values)} | {statistics.median(values) * unit:{fmt}} | "
        f"{min(values) * unit:{fmt}} | {max(values) * unit:{fmt}} |"
    )


def _table(results: dict[str, Results], args: argparse.Namespace) -> str:
    limit = args.grace + TARGET_AFTER_GRACE
    lines = [
        "# Heal time: a vanished pod replaced, a hung runner ended",
        "",
        "Written by `bench/heal_time.py` (issue 19, item 9). The demo system with the",
        "controller manager and the embedded API server each in a process of its own (the",
        "demo's controller settings: client QPS 200, burst 400). Objects polled every",
        f"{POLL * 1000:.0f} ms. Profiles: zero added latency; realistic = {REALISTIC}.",
        "",
        *header(args.command, args.scope, load_at_start=args.load_at_start),
        f"- samples: {args.samples} per measurement and profile, each system fresh per "
        "measurement; hung-runner samples whose job ran on an unarmed runner (skipped): "
        + ", ".join(f"{p} {r.not_hung}" for p, r in results.items()),
        "",
        "| profile | measurement | samples | p50 | min | max |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    verdicts = []
    for profile, r in results.items():
        lines += [
            _row(profile, "pod vanished → replacement runner pod created (ms)", r.vanished, 1000),
            _row(
                profile,
                f"hung runner: job finished → pod ended (s; grace {args.grace:g} s)",
                r.hung,
                1,
            ),
            _row(profile, "hung runner: beyond the grace (s)", [h - args.grace for h in r.hung], 1),
        ]
        replace_ok = bool(r.vanished) and max(r.vanished) <= TARGET_REPLACE
        hung_ok = bool(r.hung) and max(r.hung) <= limit
        verdicts += [
            f"- {profile}: pod vanished, target ≤ {TARGET_REPLACE:g} s (max): "
            + ("**met**" if replace_ok else "**missed**")
            + f"; hung runner, target grace + ≤ {TARGET_AFTER_GRACE:g} s = {limit:g} s (max): "
            + ("**met**." if hung_ok else "**missed**."),
        ]
    return "\n".join([*lines, "", *verdicts]) + "\n"


async def _main(args: argparse.Namespace) -> int:
    results: dict[str, Results] = {}
    for profile in args.profiles:
        with make_workdir("heal-vanished") as work:
            vanished = await _pod_vanished(args, work, profile)
        with make_workdir("heal-hung") as work:
            hung, not_hung = await _hung_runner(args, work, profile)
        results[profile] = Results(vanished, hung, not_hung)
    text = _table(results, args)
    out = args.output or RESULTS / ("heal_time-quick.md" if args.quick else "heal_time.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    say(f"written to {out}")
    return 0 if all(r.vanished and r.hung for r in results.values()) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=5, help="samples per measurement")
    parser.add_argument("--grace", type=float, default=5.0, help="L4 grace after a job (s)")
    parser.add_argument("--profiles", default=",".join(PROFILES), help="zero and/or realistic")
    parser.add_argument("--quick", action="store_true", help="1 sample each, grace 2 s")
    parser.add_argument("--output", type=Path, default=None, help="where the table goes")
    args = parser.parse_args(argv)
    args.scope = run_scope(parser, argv)
    args.command = command_line("bench/heal_time.py", argv)
    args.load_at_start = os.getloadavg()[0]
    if args.quick:
        args.samples, args.grace = 1, 2.0
    args.profiles = [p for p in str(args.profiles).split(",") if p]
    if not args.profiles or any(p not in PROFILES for p in args.profiles):
        parser.error(f"--profiles: a comma-separated subset of {','.join(PROFILES)}")
    if args.samples < 1 or args.grace < 0:
        parser.error("--samples must be >= 1, --grace >= 0")
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
