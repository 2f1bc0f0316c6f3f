"""Properties of ``plan`` over random scale sets, runner sets, listeners, chart objects and
GitHub answers — the orders and guards no single example proves:

- L10: during deletion the listener is never deleted while a runner set exists, the scale set on
  GitHub is never deleted while a runner set or listener exists, and our finalizer never goes
  while anything is left;
- L10/ARC #4432: outside deletion, the runner set the scale set runs on and its listener are never
  deleted (changes are in place);
- while ARC's controller runs, nothing but the status is written;
- every plan ends (a ``Wait`` when it has no effect) and starts with at most one effect that
  matters (the reconciler applies only the first)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from tests.unit.controllers.autoscalingrunnerset.builders import (
    NAME,
    chart_object,
    effects,
    listener,
    observed,
    plan_now,
    runner_set,
    scale_set,
    verified,
)

from scaleset.api import keys
from scaleset.api.naming import listener_name
from scaleset.controllers.access_error import GitHubProblem
from scaleset.controllers.autoscalingrunnerset.actions import (
    DeleteListener,
    DeleteRunnerSet,
    DeleteScaleSet,
    RemoveFinalizers,
    Wait,
    WriteStatus,
)
from scaleset.controllers.autoscalingrunnerset.observed import Feedback, Observed
from scaleset.kube.resources import ROLE

PROBLEM = GitHubProblem("GitHubUnauthorized", "spec.githubConfigSecret", "401")


@st.composite
def worlds(draw: st.DrawFn) -> Observed:
    deleting = draw(st.booleans())
    registered = draw(st.booleans())
    spec: dict[str, Any] = draw(
        st.sampled_from(
            [{}, {"maxRunners": 3}, {"runnerGroup": "builders"}, {"minRunners": 9, "maxRunners": 1}]
        )
    )
    ars = scale_set(
        deleting=deleting,
        registered=registered,
        spec=spec,
        finalizers=draw(st.sampled_from([(keys.AUTOSCALING_RUNNER_SET_FINALIZER,), ()])),
    )
    names = draw(
        st.lists(st.sampled_from([NAME, f"{NAME}-x7k2p", f"{NAME}-old"]), unique=True, max_size=3)
    )
    sets = [
        runner_set(
            name, in_sync_with=ars if draw(st.booleans()) else None, deleting=draw(st.booleans())
        )
        for name in names
    ]
    listeners = [
        listener(ars, name=name, deleting=draw(st.booleans()))
        for name in draw(
            st.lists(st.sampled_from([None, f"{NAME}-legacy-listener"]), unique=True, max_size=2)
        )
    ]
    charts = draw(
        st.sampled_from(
            [None, (), (chart_object(keys.CLEANUP_MANAGER_ROLE_NAME_ANNOTATION, ROLE, "r"),)]
        )
    )
    feedback = draw(
        st.sampled_from([Feedback(), Feedback(problem=PROBLEM), Feedback(scale_set_deleted=True)])
    )
    return observed(
        ars,
        runner_sets=sets,
        listeners=listeners,
        chart_objects=charts,
        arc_controllers=draw(st.sampled_from([(), ("arc-systems/arc-gha-rs-controller-x",)])),
        verified_as=draw(st.sampled_from([None, verified()])),
        feedback=feedback,
    )


@hypothesis_settings(max_examples=400, deadline=None)
@given(worlds())
def test_L10_deletion_order_and_in_place_changes_hold_everywhere(o: Observed) -> None:
    actions = plan_now(o)
    found = effects(actions)
    assert found or isinstance(actions[-1], Wait), "a plan without an effect ends in a Wait"
    if o.arc_controllers:
        assert all(isinstance(action, WriteStatus) for action in found)
        return
    first = found[0] if found else None
    if o.scale_set.deleting:
        if isinstance(first, DeleteListener):
            assert not o.runner_sets, "the listener outlives the runner sets"
        if isinstance(first, DeleteScaleSet):
            assert not o.runner_sets
            assert not o.listeners
        if isinstance(first, RemoveFinalizers):
            assert not o.runner_sets
            assert not o.listeners
            assert o.scale_set.scale_set_id is None
            assert o.chart_objects is not None
            assert not any(item.protected for item in o.chart_objects)
        return
    assert not isinstance(first, DeleteScaleSet | RemoveFinalizers)
    current = o.current_runner_set
    if isinstance(first, DeleteRunnerSet):
        assert current is not None
        assert first.name != current.name, "the current runner set is changed in place"
    if isinstance(first, DeleteListener):
        wanted = listener_name(
            NAME,
            o.scale_set.namespace,
            o.scale_set.runner_group,
            o.scale_set.model.spec.github_config_url,
        )
        assert first.name != wanted, "the listener is changed in place"
