"""Issue 20's soak report, where a zombie's time goes and whose a lost job event is: the fake
service's record of each job event's fate (queued, delivered, acknowledged, dropped and why),
the ground-truth check that counts only our losses as a broken invariant, and the per-hop
breakdown of a zombie's way to its end (JSON round trip, summary, dominant hop)."""

from __future__ import annotations

from collections import Counter

from scaleset.clock import ManualClock
from scaleset.demo.hops import LostEvent, ZombieHops, hop_summary
from scaleset.demo.report import Report, render_seeds_detail, render_text, seed_detail, seed_row
from scaleset.demo.truth import Truth
from scaleset.embedded.actions.control import JobEventTruth
from scaleset.embedded.actions.model import EventDrop, JobEventKind, Label, Scope, ScopeKind
from scaleset.embedded.actions.service import ActionsService, ServiceSettings

# ---------------------------------------------------------------- the fake's event record


def _service(clock: ManualClock) -> tuple[ActionsService, int, int]:
    service = ActionsService(
        clock, ServiceSettings(session_idle_timeout_seconds=90), real_monotonic=clock.monotonic
    )
    tenant = service.tenant_for_scope(Scope(ScopeKind.ORGANIZATION, "acme"))
    scale_set = service.create_scale_set(
        tenant.id, name="arc", runner_group_id=1, labels=[Label("arc", "System")], runner_setting={}
    )
    return service, tenant.id, scale_set.id


def _run_job(service: ActionsService, tenant_id: int, scale_set_id: int, name: str) -> int:
    """Queue a job and run it to completion on a fresh runner; returns its request id."""
    job = service.queue_job(["arc"], owner="acme", repository="app")
    runner, credential = service.generate_jit_runner(
        tenant_id, scale_set_id, name=name, work_folder=""
    )
    service.open_runner_session(credential)
    dispatched = service.dispatch_job(runner)
    assert dispatched is not None
    assert dispatched.id == job.id
    service.job_started(runner, job.id)
    service.job_completed(runner, job.id, "success")
    return job.id


def _truth(service: ActionsService, request_id: int, kind: JobEventKind) -> JobEventTruth:
    return JobEventTruth.of(service.event_traces[(request_id, kind)])


def test_an_event_delivered_and_acknowledged_is_recorded_with_both_times() -> None:
    clock = ManualClock()
    service, tenant_id, scale_set_id = _service(clock)
    session = service.create_session(tenant_id, scale_set_id, "listener")
    request_id = _run_job(service, tenant_id, scale_set_id, "r1")
    clock.advance(2)
    message = service.take_message(session, 0)
    assert message is not None
    clock.advance(1)
    service.delete_message(session, message.id)
    completed = _truth(service, request_id, JobEventKind.COMPLETED)
    assert completed.delivered_at == completed.emitted_at + 2
    assert completed.acked_at == completed.emitted_at + 3
    assert completed.dropped_at is None
    assert not completed.dropped_by_github


def test_events_queued_when_github_expires_the_session_are_dropped_by_github() -> None:
    clock = ManualClock()
    service, tenant_id, scale_set_id = _service(clock)
    service.create_session(tenant_id, scale_set_id, "listener")
    request_id = _run_job(service, tenant_id, scale_set_id, "r1")
    clock.advance(120)
    service.sweep(strict=True)  # idle past 90 s: the service expires the session
    completed = _truth(service, request_id, JobEventKind.COMPLETED)
    assert (completed.dropped_why, completed.delivered_at) == (EventDrop.SESSION_EXPIRED, None)
    assert completed.dropped_by_github
    # no session at all when the next job finishes: dropped at once, GitHub's doing too
    later = _run_job(service, tenant_id, scale_set_id, "r2")
    started = _truth(service, later, JobEventKind.STARTED)
    assert started.dropped_why == EventDrop.NO_SESSION
    assert started.dropped_by_github


def test_events_dropped_with_a_session_the_listener_deleted_are_not_githubs_drop() -> None:
    clock = ManualClock()
    service, tenant_id, scale_set_id = _service(clock)
    session = service.create_session(tenant_id, scale_set_id, "listener")
    request_id = _run_job(service, tenant_id, scale_set_id, "r1")
    service.delete_session(tenant_id, scale_set_id, session.id)
    completed = _truth(service, request_id, JobEventKind.COMPLETED)
    assert completed.dropped_why == EventDrop.SESSION_DELETED
    assert not completed.dropped_by_github


def test_an_event_delivered_then_dropped_unacknowledged_was_the_listeners() -> None:
    clock = ManualClock()
    service, tenant_id, scale_set_id = _service(clock)
    session = service.create_session(tenant_id, scale_set_id, "listener")
    request_id = _run_job(service, tenant_id, scale_set_id, "r1")
    assert service.take_message(session, 0) is not None
    clock.advance(120)
    service.sweep(strict=True)
    completed = _truth(service, request_id, JobEventKind.COMPLETED)
    assert completed.dropped_why == EventDrop.SESSION_EXPIRED
    assert completed.delivered_at is not None
    assert not completed.dropped_by_github  # it reached a listener: ours to apply


# ---------------------------------------------------------------- lost events in the truth


def test_only_our_lost_events_break_the_invariant_githubs_are_recorded_apart() -> None:
    truth = Truth(zombie_bound=15)
    truth.job_event_lost("JobCompleted", "7", "r-a", 16.0, 20.0, "github-dropped (no-session)")
    truth.job_event_lost("JobCompleted", "8", "r-b", 16.0, 20.0, "delivered (acknowledged)")
    truth.job_event_lost("JobStarted", "9", "r-c", 16.0, 20.0, "queued (never delivered)")
    assert truth.broken() == Counter({"no-lost-job-event": 2})
    truth.runner_seen(
        "r-c", 30.0, job_request_id=9, completion_job="", observed_at=None, deleting=False
    )
    lost = {event.request_id: event for event in truth.lost({7: "j7", 8: "j8", 9: "j9"})}
    assert lost[7].github_dropped
    assert not lost[8].github_dropped
    assert lost[8].delivered
    assert lost[8].landed_at is None
    assert lost[9].landed_at == 30.0  # applied late
    report = _report(lost_events=list(lost.values()), violations=truth.violations)
    assert (report.lost_ours, report.lost_by_github, report.lost_delivered_never_applied) == (
        2,
        1,
        1,
    )
    assert seed_row(report, 10)["lost"] == "2 (1)"
    assert "lost job events 2 ours (1 delivered and never applied) + 1 dropped by GitHub" in (
        render_text(report)
    )


# ---------------------------------------------------------------- zombie hops


def _hung(pod: str, **times: float | None) -> ZombieHops:
    base: dict[str, float | None] = {
        "finished_at": 10.0,
        "delivered_at": 11.0,
        "acked_at": 11.6,
        "written_at": 11.5,
        "observed_at": 14.0,
        "deadline_at": 19.0,
        "runner_deleting_at": 19.5,
        "sigterm_at": 19.8,
        "gone_at": 20.9,
    }
    base.update(times)
    return ZombieHops(pod=pod, phase="hanging", since=10.0, judged_age=10.9, blackout=0.0, **base)  # type: ignore[arg-type]


def test_a_zombies_hops_are_the_spans_between_its_steps() -> None:
    hops = _hung("a")
    spans = hops.hops()
    assert spans == {
        "github": 1.0,
        "listener": 0.5,
        "observe": 2.5,
        "act": 0.8000000000000007,
        "stop": 1.0999999999999979,
    }
    assert hops.dominant() == "observe"
    assert hops.ended_by == "L4 deadline"
    assert ZombieHops.from_json(hops.to_json()) == hops


def test_a_zombie_whose_completion_never_came_is_ended_by_its_runners_deletion() -> None:
    hops = _hung(
        "b",
        delivered_at=None,
        acked_at=None,
        written_at=None,
        observed_at=None,
        deadline_at=None,
        sigterm_at=200.0,
        runner_deleting_at=199.8,
        gone_at=201.0,
    )
    assert hops.hops()["github"] is None
    assert hops.hops()["stop"] == 1.0
    assert hops.ended_by == "runner deleted without an L4 deadline"
    assert _hung("c", gone_at=None).ended_by == "alive at the end"


def test_hop_summary_gives_median_and_max_per_hop_and_the_dominant_hop() -> None:
    crossings = [
        _hung("a", delivered_at=40.0, written_at=40.5, observed_at=43.0),  # github 30 s
        _hung("b", delivered_at=12.0, written_at=12.5, observed_at=13.0),  # github 2 s
        _hung("c", delivered_at=10.5, written_at=11.0, observed_at=30.0),  # observe 19 s
    ]
    lines = hop_summary(crossings, title="past the bound")
    assert lines[0] == "past the bound: 3"
    github = next(line for line in lines if line.strip().startswith("github"))
    assert "n 3, median 2.0s, max 30.0s" in github
    assert "  longest hop: github 2, observe 1" in lines
    assert hop_summary([], title="none here") == ["none here: none"]


def test_seed_details_add_up_over_seeds() -> None:
    one = _report(crossings=[_hung("a")], hung=[_hung("a"), _hung("b")])
    two = _report(
        lost_events=[
            LostEvent("JobCompleted", 3, "r", 20.0, 16.0, "github-dropped (session-expired)"),
            LostEvent("JobStarted", 4, "r", 20.0, 16.0, "delivered (acknowledged)", 25.0),
        ]
    )
    text = render_seeds_detail([seed_detail(one), seed_detail(two)])
    assert "zombies past the bound over all seeds, by hop: 1" in text
    assert "runners hung after their job over all seeds: 2" in text
    assert "lost job events: 1 dropped by GitHub, 1 ours (1 applied late, 0 delivered and" in text


def _report(**extra: object) -> Report:
    base: dict[str, object] = {
        "seed": 3,
        "jobs_planned": 10,
        "jobs_succeeded": 10,
        "jobs_failed": 0,
        "jobs_cancelled": 0,
        "waits": [],
        "runner_seconds": 10.0,
        "busy_seconds": 5.0,
        "api_writes": 100,
        "zombie_seconds": 1.5,
        "max_zombie_age": 7.0,
        "leaked_registrations": 0,
        "wall_seconds": 60.0,
        "violations": [],
        "assumptions": [],
        "chaos": "soak",
        "zombie_bound": 15.0,
        "max_judged_zombie_age": 6.0,
    }
    base.update(extra)
    return Report(**base)  # type: ignore[arg-type]
