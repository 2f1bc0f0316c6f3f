"""The demo hands its controller manager the controllers' settings in the process context, not
through ``os.environ``: two demos in one process each run with their own grace period (L4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scaleset.clock import ManualClock
from scaleset.controllers.ephemeralrunner.reconciler import EphemeralRunnerReconciler
from scaleset.demo.system import DemoSystem
from scaleset.demo.truth import Truth

GRACE = "SCALESET_JOB_COMPLETION_GRACE"


def _kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    return path


async def _grace_of_a_demo(grace: float, kubeconfig: Path) -> float:
    """The grace period the demo's EphemeralRunner controller runs with (its manager is built
    and stopped again; it never reaches the server)."""
    system = DemoSystem(
        clock=ManualClock(),
        truth=Truth(zombie_bound=15),
        min_runners=0,
        max_runners=1,
        grace=grace,
        kubeconfig=kubeconfig,
        started_at=0.0,
    )
    system.kubeconfig = kubeconfig
    await system.start_controller()
    try:
        assert system.manager is not None
        [controller] = [c for c in system.manager.controllers if c.name == "ephemeralrunner"]
        reconciler = controller._reconcile.__self__  # type: ignore[attr-defined]
        assert isinstance(reconciler, EphemeralRunnerReconciler)
        return reconciler.settings.grace_period
    finally:
        await system.stop_controller()


async def test_two_demos_in_one_process_each_keep_their_own_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(GRACE, raising=False)
    kubeconfig = _kubeconfig(tmp_path)

    assert await _grace_of_a_demo(5.0, kubeconfig) == 5.0
    assert await _grace_of_a_demo(7.0, kubeconfig) == 7.0
    assert GRACE not in os.environ


async def test_the_demos_own_grace_wins_over_one_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the judge bounds zombies with the demo's grace (--grace): a controller running another one
    # from the shell's environment would be judged against a bound it was never given
    monkeypatch.setenv(GRACE, "30")
    assert await _grace_of_a_demo(7.0, _kubeconfig(tmp_path)) == 7.0
