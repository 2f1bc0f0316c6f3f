"""The idle-cost table says its verdict: whether the goal (watch traffic, lease renewals and the
listener's patch only) is met, and where the other requests go — after the table, not inside it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import idle_cost  # bench/ is a directory of scripts, not a package


def test_the_table_is_followed_by_its_verdict_and_where_the_requests_go() -> None:
    window = {
        "cpu controller": 0.4,
        "cpu listener": 0.02,
        "scaleset-controller update leases": 30.0,
        "scaleset-controller get pods": 1.0,
        "scaleset-controller watch pods": 0.5,
        "scaleset-listener patch ephemeralrunnersets": 1.0,
    }
    args = argparse.Namespace(
        runners=100,
        poll_hold=50.0,
        command="`.venv/bin/python bench/idle_cost.py`",
        scope="full run (the script's defaults)",
        load_at_start=0.1,
        runs=1,
        window=120.0,
        settle=30.0,
    )
    text = idle_cost._table({"zero": ([window], "runners up in 6 s")}, args)

    rows_end = text.rindex("| zero | listener |")
    after = text[text.index("\n", rows_end) + 1 :]
    assert after.startswith("\n"), "a blank line ends the table"
    assert "zero: target, watch traffic only" in after
    assert "**missed**. Beyond those: controller get pods." in after
    assert "Where the requests go:" in after
    assert "Lease: 30.0 updates" in after
    # ARC's idle is derived (30 lease updates + one listener patch per 50 s poll), beside ours
    # (every request of the window, watches included: 30 + 1 + 0.5 + 1)
    assert "ARC 0.14.2, derived from its code (no run: ARC cannot run here): 31.2 requests" in after
    assert (
        "together (each window's sum, the median over the windows; not the sum of the medians "
        "above): 32.5 per minute, 1.04× ARC's." in after
    )
