"""The reconcile loop around ``plan`` and ``apply``: it stops when the plan has no effect left,
and a write the server does not keep is not repeated in a tight loop."""

from __future__ import annotations

from typing import cast

from prometheus_client import CollectorRegistry
from tests.unit.controllers.autoscalingrunnerset.builders import (
    NOW,
    SETTINGS,
    plan_now,
    scale_set,
    status_write,
    steady,
)

from scaleset.clock import ManualClock
from scaleset.controllers.autoscalingrunnerset.actions import Effect, WriteStatus
from scaleset.controllers.autoscalingrunnerset.apply import Applied, Applier
from scaleset.controllers.autoscalingrunnerset.metrics import ScaleSetDecisionMetrics
from scaleset.controllers.autoscalingrunnerset.observed import Observed
from scaleset.controllers.autoscalingrunnerset.reconciler import AutoscalingRunnerSetReconciler
from scaleset.kube.client import KubeClient
from scaleset.runtime.controller import Result
from scaleset.runtime.events import EventRecorder


class NothingTakes:
    """An applier whose writes never change what is observed (as under a CRD that prunes the
    status fields written)."""

    def __init__(self) -> None:
        self.applied: list[Effect] = []

    async def apply(self, effect: Effect, o: Observed) -> Applied:
        self.applied.append(effect)
        return Applied(o)


def reconciler(applier: NothingTakes) -> AutoscalingRunnerSetReconciler:
    clock = ManualClock(wall=NOW)
    return AutoscalingRunnerSetReconciler(
        cast(KubeClient, None),  # the loop under test makes no call of its own
        cast(Applier, applier),
        EventRecorder(cast(KubeClient, None), clock=clock),
        clock,
        SETTINGS,
        ScaleSetDecisionMetrics(CollectorRegistry()),
    )


async def test_a_write_that_does_not_take_is_not_repeated_in_a_loop() -> None:
    applier = NothingTakes()
    result = await reconciler(applier)._rounds(steady())
    assert [type(effect) for effect in applier.applied] == [WriteStatus]
    assert result == Result(requeue_after=SETTINGS.retry_max)


async def test_a_settled_plan_ends_the_reconcile_with_the_next_verification() -> None:
    written = status_write(plan_now(steady())).changes
    applier = NothingTakes()
    result = await reconciler(applier)._rounds(steady(scale_set(status=dict(written))))
    assert applier.applied == []
    assert result == Result(requeue_after=SETTINGS.verify_interval)
