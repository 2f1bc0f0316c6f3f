"""API cost of one job: every request scaleset makes for a job, by component, verb and resource.

Issue 19, item 4. The whole system runs as ``scaleset demo`` runs it (embedded API server,
embedded GitHub Actions service, simulated kubelet and runner, the real controller manager and
the real listener), against an API server this script starts itself so that it can read the
server's access log (every resource request with its User-Agent: ``scaleset-controller/…``,
``scaleset-listener/…``; the demo's own setup client and the simulated kubelet are other agents).

A job's cost is measured as a difference, so that set-up (CRDs, the AutoscalingRunnerSet, the
listener's objects) cancel out: run A queues 1 job, run B queues ``1 + K`` jobs over the same
arrival window, each on a fresh system with ``maxRunners`` = 1 (the jobs run one after another,
each on its own ephemeral runner); the cost per job is ``(B - A) / K``. Lease renewals are left
out; run B's longer idle time (more empty long polls, each followed by the listener's patch and
the runner set's acknowledgement) is charged to the jobs, so the figure is an upper bound. The
fake holds an empty poll ``--poll-hold`` seconds (default 50, as GitHub does; the demo's fake
holds 2 s, which charged about one listener patch per 2 s of run B's extra time to the jobs).
Events are counted apart (the target excludes them), and so are the node's own writes (pod
status, bindings).

Beside it, ARC's count for the same lifecycle, derived request by request from ARC's
controller code (ARC cannot run here).

Each profile (issue 19, ``--profiles``) on fresh systems: ``zero`` adds no latency,
``realistic`` adds 10 ms per API server request (the embedded server's faults) and 300 ms per
GitHub call with JIT configs at 3/s (``_system.REALISTIC``; the demo builds its fake GitHub
inside ``run_demo_report``, so this script hands it a ``DemoSystem`` subclass that adds the
profile once the fake is up).

Writes a Markdown table to bench/results/api_cost.md (``--quick``: K = 2, zero only, a 2 s
hold, results to bench/results/api_cost-quick.md, for CI's smoke test).

    .venv/bin/python bench/api_cost.py [--extra-jobs 10] [--duration 40] [--runs 3]
        [--poll-hold 50] [--profiles zero,realistic] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

from _report import command_line, header, run_scope
from _system import API_LATENCY, PROFILES, REALISTIC, apply_github_profile

from scaleset.controllers.ephemeralrunnerset.settings import PlanSettings
from scaleset.demo import run as demo_run
from scaleset.demo.run import DemoOptions, run_demo_report
from scaleset.demo.system import DemoSystem
from scaleset.embedded.apiserver import serve_in_thread
from scaleset.embedded.apiserver._access import AccessEntry

RESULTS = Path(__file__).parent / "results"
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
COMPONENTS = ("scaleset-controller", "scaleset-listener")
TARGET_WRITES = 8

ARC_PER_JOB: tuple[tuple[str, str, int, int, str], ...] = (
    (
        "listener",
        "patch ephemeralrunnersets",
        3,
        3,
        "§2.5: HandleDesiredRunnerCount after each "
        "message batch (JobAssigned, JobStarted, JobCompleted; more with more batches)",
    ),
    ("listener", "patch ephemeralrunners/status", 1, 1, "§2.5 HandleJobStarted (job fields)"),
    ("ERS controller", "create ephemeralrunners", 1, 1, "§3.2 scale up"),
    (
        "ERS controller",
        "patch ephemeralrunnersets/status",
        3,
        0,
        "§2.2 step 9: counts change at create (pending), at Running, at removal; 0.15.0: the "
        "status keeps only the phase, which a job does not change",
    ),
    ("ER controller", "create secrets", 1, 1, "§2.3 step 5 JIT Secret"),
    (
        "ER controller",
        "patch ephemeralrunners/status",
        3,
        3,
        "§2.3 step 6 runnerId/name; step 10 phase Pending, then Running + ready",
    ),
    ("ER controller", "create pods", 1, 1, "§2.3 step 9"),
    ("ER controller", "delete ephemeralrunners", 1, 1, "§2.3 step 10: runner exit 0"),
    (
        "ER controller",
        "patch ephemeralrunners",
        2,
        2,
        "§2.3 step 2: registration finalizer, then main finalizer removed",
    ),
    ("ER controller", "delete pods", 1, 1, "§2.3 step 2b"),
    ("ER controller", "delete secrets", 1, 1, "§2.3 step 2b"),
    (
        "ARS controller",
        "patch autoscalingrunnersets/status",
        3,
        0,
        "§2.1: status mirrors the runner set's counts (same three changes); 0.15.0: counts "
        "moved to metrics, nothing to mirror per job",
    ),
)
"""ARC's writes for one job on a scale set idle at minRunners 0, request by request (no Events:
ARC records none for this lifecycle), for 0.14.2 and for 0.15.0 (columns 3 and 4).

0.15.0 is derived the same way from 0.14.2's requests and what 0.15.0 changed (its changelog of
2026-09-30 and the pull requests it names: actions/actions-runner-controller #4557, #4570): the
runner counts left the EphemeralRunnerSet's and AutoscalingRunnerSet's status for metrics, so
their status holds only the phase, which a job does not change; patches replaced updates (the
same number of requests); incoming events are filtered (fewer reconciles, not fewer writes of
this lifecycle). Everything else is 0.14.2's count."""

ARC_RELEASES = ("0.14.2", "0.15.0")


def arc_total(release: str) -> int:
    """ARC's derived writes per job for ``release`` (one of ``ARC_RELEASES``)."""
    column = 2 + ARC_RELEASES.index(release)
    return sum(int(row[column]) for row in ARC_PER_JOB)


@dataclass(frozen=True)
class RunCost:
    """What one demo run cost: writes per (component, "verb resource"), and Events."""

    writes: Counter[tuple[str, str]]
    refused: Counter[tuple[str, str]]
    """Of ``writes``, those answered 409 (a resourceVersion precondition that no longer held,
    or a name that exists): sent and counted, but they changed nothing."""
    events: int
    node_writes: int
    reads: int
    wall: float
    ok: bool
    gets: Counter[tuple[str, str]] = field(default_factory=Counter)
    """scaleset's GETs (one object from the API server; lists and watches apart) per
    (component, "get resource")."""


def _category(entry: AccessEntry) -> str:
    return f"{entry.verb} {entry.rbac_resource}"


def _component(entry: AccessEntry) -> str:
    name = entry.component
    return name if name in COMPONENTS else "other (demo set-up, simulated kubelet)"


def _demo_system(profile: str, poll_hold: float) -> type[DemoSystem]:
    """The demo's system with the fake's empty-poll hold set to ``poll_hold`` seconds (the demo
    holds 2 s) and, for the realistic profile, its GitHub side added once the fake is up."""

    class _BenchDemoSystem(DemoSystem):
        async def start(self) -> None:
            await super().start()
            assert self.fake is not None
            self.fake._context.poll_hold_seconds = poll_hold
            if profile == "realistic":
                apply_github_profile(self.fake.control.faults)

    return _BenchDemoSystem


async def _run(jobs: int, args: argparse.Namespace, seed: int, profile: str) -> RunCost:
    realistic = profile == "realistic"
    duration = args.duration
    with (
        serve_in_thread(host="127.0.0.1", port=0) as running,
        mock.patch.object(demo_run, "DemoSystem", _demo_system(profile, args.poll_hold)),
    ):
        if realistic:
            running.server.faults.add_latency(API_LATENCY)
        options = DemoOptions(
            jobs=jobs,
            duration=duration,
            min_runners=0,
            max_runners=1,
            seed=seed,
            kubeconfig=running.kubeconfig_path,
        )
        started = time.perf_counter()
        code, _ = await run_demo_report(options, stream=io.StringIO())
        wall = time.perf_counter() - started
        counts = running.server.access.counts()
        refused_counts = running.server.access.refused()
    writes: Counter[tuple[str, str]] = Counter()
    refused: Counter[tuple[str, str]] = Counter()
    gets: Counter[tuple[str, str]] = Counter()
    events = node = reads = 0
    for entry, n in counts.items():
        if entry.verb not in WRITE_VERBS:
            reads += n
            if entry.verb == "get" and entry.component in COMPONENTS:
                gets[(entry.component, _category(entry))] += n
        elif entry.resource == "events":
            events += n
        elif entry.rbac_resource in ("pods/status", "pods/binding") or entry.resource == "leases":
            node += n  # the node's own writes; leases are time-driven, not per job
        else:
            writes[(_component(entry), _category(entry))] += n
            refused[(_component(entry), _category(entry))] += refused_counts.get(entry, 0)
    return RunCost(writes, refused, events, node, reads, wall, code == 0, gets)


def _per_job(
    a: Counter[tuple[str, str]], b: Counter[tuple[str, str]], extra: int
) -> dict[tuple[str, str], float]:
    """Run B's count less run A's, per extra job, for each (component, request)."""
    return {key: (b[key] - a[key]) / extra for key in set(a) | set(b)}


@dataclass
class ProfileResult:
    """One profile's pairs of runs."""

    samples: list[dict[tuple[str, str], float]]
    events: list[float]
    totals: list[float]
    refused: list[float]
    """Per pair: of the writes per job, those answered 409."""
    refused_samples: list[dict[tuple[str, str], float]]
    """Per pair: the 409s per job by (component, request)."""
    walls: list[float]
    failures: int
    read_samples: list[dict[tuple[str, str], float]] = field(default_factory=list)
    """Per pair: scaleset's GETs per job by (component, request)."""


def _table(results: dict[str, ProfileResult], args: argparse.Namespace) -> str:
    arc = {release: arc_total(release) for release in ARC_RELEASES}
    lines = [
        "# API cost of one job",
        "",
        "Written by `bench/api_cost.py` (issue 19, item 4). The whole demo system per run",
        "(embedded API server, fake GitHub Actions service, simulated kubelet and runner, the",
        "real controller manager and listener); the server's access log attributes each request",
        "to its User-Agent. Cost per job = (run with 1 + K jobs − run with 1 job) / K on",
        "maxRunners 1, so set-up cancels out; lease renewals are left out. The fake holds an",
        f"empty message poll {args.poll_hold:g} s (GitHub: about 50 s; the demo's own default",
        "is 2 s). Run B lasts longer than run A, so its extra empty polls (ARC's protocol",
        "patches the runner set after each) are charged to the jobs: an upper bound, the",
        "tighter the longer the hold. Events and the node's own writes (pod status, binding) are",
        f"counted apart. Profiles: zero added latency; realistic = {REALISTIC}. Each run on a",
        "fresh system.",
        "",
        *header(args.command, args.scope, load_at_start=args.load_at_start),
        *(
            f"- {profile}: {args.runs} pairs; wall per run {min(r.walls):.0f}–"
            f"{max(r.walls):.0f} s; runs with a broken invariant: {r.failures}"
            for profile, r in results.items()
        ),
        "",
        "## scaleset, writes per job (median over runs; min–max)",
        "",
        "| profile | component | request | per job | min–max |",
        "| --- | --- | --- | ---: | ---: |",
    ]
    verdicts: list[str] = []
    for profile, r in results.items():
        lines += _request_rows(profile, r.samples)
        total = statistics.median(r.totals)
        events = r.events
        lines += [
            f"| {profile} | **all** | **writes, Events excluded** | **{total:.1f}** | "
            f"{min(r.totals):.1f}–{max(r.totals):.1f} |",
            f"| {profile} | | of those, answered 409 (changed nothing) | "
            f"{statistics.median(r.refused):.1f} | {min(r.refused):.1f}–{max(r.refused):.1f} |",
            f"| {profile} | | Events | {statistics.median(events):.1f} | "
            f"{min(events):.1f}–{max(events):.1f} |",
        ]
        ratios = ", ".join(
            f"ARC {release} (derived, {count}): **{total / count:.2f}**"
            for release, count in arc.items()
        )
        verdicts += [
            f"- {profile}: target ≤ {TARGET_WRITES} writes per job, Events excluded (a count: "
            "it holds for every profile): "
            + ("**met**." if total <= TARGET_WRITES else f"**missed** ({total:.1f}).")
            + f" scaleset ÷ {ratios}.",
            _refused_line(profile, r),
        ]
    lines += ["", *verdicts, "", *_reads(results), ""]
    if len(results) > 1:
        lines += [*_profile_difference(results), ""]
    first = next(iter(results))
    lines += [
        *_where_the_writes_go(results[first].samples, first),
        "",
        *_floor_and_tried(results[first].samples, first),
        "",
        "## ARC, the same lifecycle (derived request by request; no run: ARC cannot run here)",
        "",
        "0.14.2 from its controllers' code; 0.15.0 from 0.14.2 and what "
        "0.15.0 changed (its changelog of 2026-09-30; actions/actions-runner-controller #4557 "
        "and #4570): the runner counts moved from the EphemeralRunnerSet's and "
        "AutoscalingRunnerSet's status to metrics, so their status keeps only the phase, which "
        "a job does not change; patches instead of updates (as many requests) and filtered "
        "events (fewer reconciles) change no count of this lifecycle.",
        "",
        "| component | request | 0.14.2 | 0.15.0 | where |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    lines += [f"| {c} | {r} | {a} | {b} | {w} |" for c, r, a, b, w in ARC_PER_JOB]
    lines += [f"| **all** | | **{arc['0.14.2']}** | **{arc['0.15.0']}** | |", ""]
    return "\n".join(lines) + "\n"


def _request_rows(profile: str, samples: list[dict[tuple[str, str], float]]) -> list[str]:
    """One table row per (component, request): median per job over the pairs, min–max (rows
    under 0.05 in every pair left out)."""
    rows = []
    for key in sorted({k for sample in samples for k in sample}):
        values = [sample.get(key, 0.0) for sample in samples]
        if max(abs(v) for v in values) < 0.05:
            continue
        rows.append(
            f"| {profile} | {key[0]} | {key[1]} | {statistics.median(values):.1f} | "
            f"{min(values):.1f}–{max(values):.1f} |"
        )
    return rows


def _reads(results: dict[str, ProfileResult]) -> list[str]:
    """scaleset's GETs per job, request by request (no target: what a job costs in reads)."""
    lines = [
        "## scaleset, reads per job (GETs; median over runs; min–max)",
        "",
        "A GET reads one object from the API server, not from a cache; the watches and lists",
        "that fill the caches are not counted here.",
        "",
        "| profile | component | request | per job | min–max |",
        "| --- | --- | --- | ---: | ---: |",
    ]
    for profile, r in results.items():
        lines += _request_rows(profile, r.read_samples)
        totals = [sum(sample.values()) for sample in r.read_samples]
        lines.append(
            f"| {profile} | **all** | **GETs** | **{statistics.median(totals):.1f}** | "
            f"{min(totals):.1f}–{max(totals):.1f} |"
        )
    return lines


def _refused_line(profile: str, r: ProfileResult) -> str:
    """Which of the counted writes were answered 409: sent (so counted), but they changed
    nothing; the writer reads again and decides again."""
    keys = sorted({k for sample in r.refused_samples for k in sample})
    medians = {k: statistics.median(s.get(k, 0.0) for s in r.refused_samples) for k in keys}
    named = [f"{k[0]} {k[1]} {v:.1f}" for k, v in medians.items() if v >= 0.05]
    total = statistics.median(r.refused)
    return (
        f"- {profile}: of the writes per job, {total:.1f} were answered 409 Conflict (a "
        "resourceVersion precondition that no longer held, or a name that exists) and changed "
        "nothing; the writer reads again and decides again. By request: "
        + (", ".join(named) if named else "none of 0.05 or more")
        + "."
    )


def _profile_difference(results: dict[str, ProfileResult]) -> list[str]:
    """What the realistic profile changed, request by request (medians per job)."""
    medians = {
        profile: {
            key: statistics.median(s.get(key, 0.0) for s in r.samples)
            for key in {k for s in r.samples for k in s}
        }
        for profile, r in results.items()
    }
    keys = sorted({k for m in medians.values() for k in m})
    changed = []
    for key in keys:
        values = [m.get(key, 0.0) for m in medians.values()]
        if max(values) - min(values) >= 0.3:
            shown = " vs ".join(f"{v:.1f}" for v in values)
            changed.append(f"{key[0].removeprefix('scaleset-')} {key[1]} {shown}")
    profiles = " vs ".join(results)
    return [
        "What the realistic profile changes: the lifecycle's writes are the same requests (each "
        "runner is created, registered, started, finished and deleted once whatever the "
        "latency); what can move is the part driven by time and batching — how many message "
        "batches a job's events arrive in (each batch is followed by the listener's runner-set "
        "patch), how many empty "
        "polls fall into run B's longer wall time, and how many count changes the status "
        "mirroring sees separately or coalesced. Measured, per job, "
        f"requests differing by 0.3 or more ({profiles}): "
        + ("; ".join(changed) if changed else "none")
        + ".",
    ]


MIRRORING = frozenset({"patch ephemeralrunnersets/status", "patch autoscalingrunnersets/status"})


def _where_the_writes_go(samples: list[dict[tuple[str, str], float]], profile: str) -> list[str]:
    """The per-job writes in three groups, each beside ARC's (both releases), and what is left
    of the target once the lifecycle's own writes are counted — all from the numbers."""

    def median_of(select: Callable[[tuple[str, str]], bool]) -> float:
        return statistics.median(sum(v for k, v in s.items() if select(k)) for s in samples)

    def arc(select: Callable[[str, str], bool]) -> str:
        counts = [
            sum(int(row[2 + i]) for row in ARC_PER_JOB if select(row[0], row[1]))
            for i in range(len(ARC_RELEASES))
        ]
        return ", ".join(f"{release} {n}" for release, n in zip(ARC_RELEASES, counts, strict=True))

    listener = median_of(lambda k: k[0] == "scaleset-listener")
    mirroring = median_of(lambda k: k[0] != "scaleset-listener" and k[1] in MIRRORING)
    runner = median_of(lambda k: k[0] != "scaleset-listener" and k[1] not in MIRRORING)
    own = runner + listener
    lines = [
        f"Where the writes go ({profile} profile, medians per job):",
        "",
        f"- **The runner's own life, {runner:.1f}** (controller): create the EphemeralRunner, "
        "its JIT Secret and its pod; record the runner id and the pod's progress in status; "
        "write the job onto the pod's annotations (one patch; ARC has none); delete runner, pod "
        "and Secret; add and remove the finalizer. ARC: "
        + arc(lambda c, r: c != "listener" and r not in MIRRORING)
        + ".",
        f"- **Status mirroring, {mirroring:.1f}**: the runner sets' status (counts, the "
        "acknowledgement of the listener's patch) written by the controller, the counts at "
        f"most once per {PlanSettings().status_interval:g} s per EphemeralRunnerSet (a pass "
        "inside that interval defers them); the AutoscalingRunnerSet's status does not copy "
        "them (phase, conditions and warm window only). "
        "ARC: " + arc(lambda c, r: c != "listener" and r in MIRRORING) + ".",
        f"- **The listener, {listener:.1f}**: JobStarted → Running and JobCompleted on the exact "
        "runner (L1, L4), and ARC's runner-set patch after each message batch. ARC: "
        + arc(lambda c, r: c == "listener")
        + ".",
        "",
        f"Without any mirroring the runner's own writes and the listener's come to {own:.1f} "
        f"per job: the target of {TARGET_WRITES} "
        + (
            "is within reach of coalescing the mirroring alone."
            if own <= TARGET_WRITES
            else f"needs {own - TARGET_WRITES:.1f} fewer writes in the lifecycle itself too."
        ),
    ]
    return lines


RULES_FLOOR: tuple[tuple[str, str, int, str], ...] = (
    (
        "scaleset-controller",
        "create ephemeralrunners",
        1,
        "ARC's CRDs: one EphemeralRunner per runner",
    ),
    (
        "scaleset-controller",
        "create secrets",
        1,
        "the JIT config reaches the pod through a Secret, never through the pod spec (which "
        "anyone who may read pods reads)",
    ),
    ("scaleset-controller", "create pods", 1, "the runner itself"),
    (
        "scaleset-controller",
        "patch ephemeralrunners/status",
        2,
        "the record before the pod (L5: a pod that vanished is never given the same JIT config; "
        "the runner id that L3, L4 and L6 check), then the runner's start and readiness (L5: the "
        "start spends the JIT config; L1: `ready` follows the pod)",
    ),
    (
        "scaleset-controller",
        "delete secrets",
        1,
        "L5: the JIT Secret is deleted once the runner container started",
    ),
    (
        "scaleset-controller",
        "patch pods",
        1,
        "job ↔ pod traceability: the job's fields on its pod's annotations",
    ),
    (
        "scaleset-controller",
        "delete ephemeralrunners",
        1,
        "an ephemeral runner that ran its job is removed",
    ),
    ("scaleset-controller", "delete pods", 1, "its pod goes with it"),
    (
        "scaleset-controller",
        "patch ephemeralrunners",
        1,
        "the registration finalizer, removed once the registration is (L3: no registration "
        "leaks; the finalizers are set at creation)",
    ),
    (
        "scaleset-controller",
        "patch ephemeralrunnersets/status",
        2,
        "the runner set's `kubectl get` columns change when the runner is created and when it is "
        "removed",
    ),
    (
        "scaleset-listener",
        "patch ephemeralrunners/status",
        2,
        "L1: JobStarted → Running on the exact runner; L4: JobCompleted recorded on it",
    ),
    (
        "scaleset-listener",
        "patch ephemeralrunnersets",
        2,
        "ARC's protocol: the desired count raised for the job and lowered after it",
    ),
)
"""Per job at maxRunners 1, the writes scaleset's own rules require, with the rule: the floor
no coalescing goes below while the rules stand."""

TRIED = (
    "The runner set's status is written only when a `kubectl get` column, a condition or its "
    "memory changes, and its counts at most once per interval (they were the largest share at "
    "the issue's review).",
    "The AutoscalingRunnerSet's status no longer copies the counts (as in ARC 0.15.0).",
    "The job's annotations are written once per pod: the controller remembers its own patch "
    "while its cache lags behind it.",
    "The runner's start and readiness go in one status write where the pod shows them together.",
    "Below the floor, not done: folding the record before the pod into the JIT Secret's "
    "creation (one write per job). The controller skips every read of a runner with no "
    "record — no record means no pod and no Secret — and the registration pass and the "
    "scale-down read the runner id from the record; each would have to learn it from the "
    "Secret instead, and a restart between the Secret and the pod would have to count as "
    "'may have run'.",
    "Below the floor, decided against: moving the runner set's counts to metrics as ARC 0.15.0 "
    "did (two writes per job); its `kubectl get` columns would stop being true.",
)
"""What was done and weighed to bring the writes per job down, as text with no figures."""


def _floor_and_tried(samples: list[dict[tuple[str, str], float]], profile: str) -> list[str]:
    """The writes per job each rule requires beside the measured ones, and what was tried."""
    measured = {
        key: statistics.median(s.get(key, 0.0) for s in samples)
        for key in {k for s in samples for k in s}
    }
    floor = sum(count for _, _, count, _ in RULES_FLOOR)
    total = statistics.median(sum(s.values()) for s in samples)
    lines = [
        "### The floor under scaleset's rules",
        "",
        f"The writes one job needs while the lifecycle rules stand ({profile} profile measured "
        "beside them, medians per job):",
        "",
        "| component | request | the rules | measured | required by |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for component, request, count, why in RULES_FLOOR:
        got = measured.get((component, request), 0.0)
        lines.append(f"| {component} | {request} | {count} | {got:.1f} | {why} |")
    lines += [
        f"| **all** | | **{floor}** | **{total:.1f}** | |",
        "",
        f"Measured {total:.1f} against a floor of {floor}: {total - floor:+.1f} per job"
        + (
            " (the 409 answers above: a write refused is sent again after a fresh read)."
            if total > floor
            else "."
        )
        + f" The target of {TARGET_WRITES} is "
        + (
            f"{floor - TARGET_WRITES} writes below the floor itself: it needs rules to change, "
            "not coalescing."
            if floor > TARGET_WRITES
            else "above the floor."
        ),
        "",
        "What was tried (see git history for each):",
        "",
        *(f"- {item}" for item in TRIED),
    ]
    return lines


async def _profile(args: argparse.Namespace, profile: str) -> ProfileResult:
    r = ProfileResult([], [], [], [], [], [], 0)
    for run in range(args.runs):
        seed = 1 + run
        label = f"[{profile} {run + 1}/{args.runs}]"
        print(f"{label} run A: 1 job, seed {seed}", file=sys.stderr, flush=True)
        a = await _run(1, args, seed, profile)
        print(
            f"{label} run B: {1 + args.extra_jobs} jobs ({a.wall:.0f} s for A)",
            file=sys.stderr,
            flush=True,
        )
        b = await _run(1 + args.extra_jobs, args, seed, profile)
        r.walls += [a.wall, b.wall]
        r.failures += (not a.ok) + (not b.ok)
        per_job = _per_job(a.writes, b.writes, args.extra_jobs)
        r.samples.append(per_job)
        r.totals.append(sum(per_job.values()))
        refused = _per_job(a.refused, b.refused, args.extra_jobs)
        r.refused_samples.append(refused)
        r.refused.append(sum(refused.values()))
        r.events.append((b.events - a.events) / args.extra_jobs)
        r.read_samples.append(_per_job(a.gets, b.gets, args.extra_jobs))
        print(
            f"{label} {r.totals[-1]:.1f} writes per job ({b.wall:.0f} s for B)",
            file=sys.stderr,
            flush=True,
        )
    return r


async def _main(args: argparse.Namespace) -> int:
    results = {profile: await _profile(args, profile) for profile in args.profiles}
    failures = sum(r.failures for r in results.values())
    text = _table(results, args)
    out = args.output or RESULTS / ("api_cost-quick.md" if args.quick else "api_cost.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    print(f"written to {out}", file=sys.stderr)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extra-jobs", type=int, default=10, help="K: jobs beyond run A's one")
    parser.add_argument("--duration", type=float, default=40.0, help="seconds the jobs arrive over")
    parser.add_argument(
        "--poll-hold",
        type=float,
        default=50.0,
        help="seconds the fake holds an empty message poll (GitHub: about 50; the demo: 2)",
    )
    parser.add_argument("--runs", type=int, default=3, help="pairs of runs (median reported)")
    parser.add_argument("--profiles", default=None, help="zero and/or realistic (default both)")
    parser.add_argument(
        "--quick", action="store_true", help="K=2, 1 pair, 8 s, zero, 2 s poll hold: a smoke test"
    )
    parser.add_argument("--output", type=Path, default=None, help="where the table goes")
    args = parser.parse_args(argv)
    args.scope = run_scope(parser, argv)
    args.command = command_line("bench/api_cost.py", argv)
    args.load_at_start = os.getloadavg()[0]
    if args.quick:
        args.extra_jobs, args.runs, args.duration = 2, 1, 8.0
        args.poll_hold = min(args.poll_hold, 2.0)  # a smoke test: a run B of seconds, not a minute
    if args.extra_jobs < 1 or args.runs < 1 or args.duration <= 0:
        parser.error("--extra-jobs and --runs must be >= 1, --duration > 0")
    if args.profiles is None:
        args.profiles = "zero" if args.quick else ",".join(PROFILES)
    args.profiles = [p for p in str(args.profiles).split(",") if p]
    if not args.profiles or any(p not in PROFILES for p in args.profiles):
        parser.error(f"--profiles: a comma-separated subset of {','.join(PROFILES)}")
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
