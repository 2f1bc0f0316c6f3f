"""Policies drive the real ``Scaler``: ARC's rule is exactly it; a window's minimum applies
while it is open and the patch sequence keeps growing across a change of minimum; the windows
policy wakes at window edges; headroom follows the recent arrival rate. The report's
percentiles are nearest-rank, and its HTML page is self-contained."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scaleset.listener.scaler import Scaler
from scaleset.simulate.model import PolicyOutcome, Sample
from scaleset.simulate.policies import ArcRule, Headroom, HeadroomSettings, Windows
from scaleset.simulate.report import figures, html_page, markdown_table, percentile, text_table
from scaleset.simulate.run import parse_windows

NOW = datetime(2027, 1, 13, 7, 0, tzinfo=UTC)  # a Wednesday


def test_arc_rule_is_the_scaler() -> None:
    policy, scaler = ArcRule(2, 5), Scaler(2, 5)
    for assigned, event in ((0, False), (3, True), (9, True), (0, False), (0, False)):
        if event:
            policy.job_event()
            scaler.job_event()
        assert policy.desired(assigned, NOW) == scaler.desired(assigned)


def test_windows_apply_their_minimum_and_the_patch_sequence_keeps_growing() -> None:
    windows = parse_windows(["Mon-Fri 08:00-18:00 UTC min=4"], 10)
    policy = Windows(windows, 1, 10)
    before = policy.desired(0, NOW)
    inside = policy.desired(0, NOW + timedelta(hours=2))
    after = policy.desired(0, NOW + timedelta(hours=12))
    assert (before.target, inside.target, after.target) == (1, 4, 1)
    assert before.patch_seq < inside.patch_seq < after.patch_seq
    assert inside.patch_id != 0, "a new minimum is a new target, never a force-state patch"
    assert policy.desired(0, NOW + timedelta(hours=12)).patch_id == 0, "then settled"
    assert policy.wake_at(NOW) == NOW + timedelta(hours=1)
    assert policy.wake_at(NOW + timedelta(hours=2)) == NOW + timedelta(hours=11)


def test_headroom_follows_the_recent_arrival_rate() -> None:
    policy = Headroom(1, 50, HeadroomSettings(lookback=600, cover=60, factor=1))
    assert policy.desired(0, NOW).target == 1
    for second in range(0, 600, 20):  # 3 a minute: 3 expected within 60 s
        policy.job_assigned(NOW + timedelta(seconds=second))
    assert policy.desired(0, NOW + timedelta(seconds=600)).target == 1 + 3
    assert policy.desired(0, NOW + timedelta(seconds=1300)).target == 1, "the rate fell"
    assert policy.wake_at(NOW) == NOW + timedelta(seconds=60)


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.95) == 95.0
    assert percentile([7.0], 0.95) == 7.0
    assert percentile([], 0.5) == 0.0


def _outcome(name: str) -> PolicyOutcome:
    samples = [Sample(0.0, 0, 0, 0, 0, 0), Sample(30.0, 5, 2, 1, 3, 6), Sample(90.0, 0, 0, 2, 1, 3)]
    return PolicyOutcome(
        policy=name,
        queue_times=[1.0, 2.0, 63.5],
        not_started=0,
        runner_seconds=600.0,
        idle_seconds=120.0,
        jit_configs=3,
        patches=4,
        plan_calls=5,
        samples=samples,
        span=3600.0,
    )


def test_the_tables_show_every_figure() -> None:
    table = [figures(_outcome("arc min=0")), figures(_outcome("windows <b>"))]
    text = text_table(table)
    assert text.splitlines()[0].split()[:3] == ["policy", "jobs", "queue"]
    assert "63.5" in text
    assert "10" in text.splitlines()[2]
    assert markdown_table(table).count("\n") == 4


def test_the_html_page_is_self_contained() -> None:
    page = html_page([_outcome("arc min=0"), _outcome("windows <b>")], NOW, notes=["a & b"])
    assert page.startswith("<!DOCTYPE html>")
    for outside in ("<script", "src=", "href=", "<link", "@import", "url("):
        assert outside not in page
    assert "windows &lt;b&gt;" in page
    assert "a &amp; b" in page
    assert page.count("<svg") == 5
    assert page.count("<polyline") == 10
