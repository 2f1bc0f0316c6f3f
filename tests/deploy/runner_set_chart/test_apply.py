"""What the runner scale set chart renders is what scaleset's CRD, an API server and the
AutoscalingRunnerSet controller accept, for every parity case:

- the AutoscalingRunnerSet validates against our CRD's schema (deploy/crds/), with every field
  the schema does not declare (and does not preserve) reported — the API server would prune it;
- every rendered object is created on the API server (embedded; also the real kube-apiserver
  when SCALESET_TEST_KUBECONFIG is set) by our production client, and the AutoscalingRunnerSet
  reads back with the spec it was sent (nothing pruned or defaulted away);
- the AutoscalingRunnerSet controller parses it without a problem and its plan starts with the
  finalizer, then registration (not "invalid spec") — with the full listener template allowed
  (``--allow-full-listener-template``): by default the one case whose listener template runs
  another image, command and container (ARC's own test values) is refused, naming those fields;
- the cleanup annotations name exactly the chart's other objects, each carrying
  ``actions.github.com/cleanup-protection``, and the deletion plan releases them all, in ARC's
  order, then its own finalizer.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest
import yaml
from tests.deploy.runner_set_chart.cases import ROOT, Case, render_cases
from tests.deploy.runner_set_chart.parity import normalised
from tests.support.helm import SOURCE
from tests.support.kube_fixtures import actions_crds, client

from scaleset.api import Policy, Refusal, keys
from scaleset.api.structural import openapi_to_jsonschema
from scaleset.controllers.autoscalingrunnerset.actions import (
    Action,
    AddFinalizers,
    FindScaleSet,
    ReadChartObjects,
    ReleaseChartObject,
    RemoveFinalizers,
    ResolveRunnerGroup,
)
from scaleset.controllers.autoscalingrunnerset.observed import (
    CHART_OBJECT_KINDS,
    ChartObject,
    Observed,
    scale_set_view,
)
from scaleset.controllers.autoscalingrunnerset.plan import plan
from scaleset.controllers.autoscalingrunnerset.settings import Settings
from scaleset.kube import KubeClient, KubeObject, NotFound, ObjectKey
from scaleset.kube.resources import (
    AUTOSCALING_RUNNER_SET,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
    Kind,
)

__all__ = ["actions_crds", "client"]

CASES = render_cases()
CRD = yaml.safe_load(
    (ROOT / "deploy" / "crds" / "actions.github.com_autoscalingrunnersets.yaml").read_text()
)
SCHEMA = openapi_to_jsonschema(
    CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"], reject_unknown=True
)
KINDS: dict[str, Kind] = {
    "AutoscalingRunnerSet": AUTOSCALING_RUNNER_SET,
    "Secret": SECRET,
    "Role": ROLE,
    "RoleBinding": ROLE_BINDING,
    "ServiceAccount": SERVICE_ACCOUNT,
}
SETTINGS = Settings(controller_namespace="arc-systems", listener_image="ghcr.io/scaleset/x:1")
NOW = datetime(2027, 1, 15, 8, 0, tzinfo=UTC)
FULL_TEMPLATE = Policy(allow_full_listener_template=True)


def _scale_set(objects: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return next(obj for obj in objects if obj["kind"] == "AutoscalingRunnerSet")


def schema_problems(obj: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft4Validator(SCHEMA)
    return [
        f"{'.'.join(str(part) for part in error.absolute_path)}: {error.message}"
        for error in validator.iter_errors(obj)
    ]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_scale_set_validates_against_our_crd_schema(case: Case) -> None:
    scale_set = _scale_set(case.render())
    scale_set.pop(SOURCE)
    assert schema_problems(scale_set) == []


def test_the_schema_check_reports_a_field_the_api_server_would_prune() -> None:
    scale_set = _scale_set(CASES[0].render())
    scale_set.pop(SOURCE)
    scale_set["spec"]["minRunner"] = 3
    scale_set["spec"]["maxRunners"] = "ten"
    problems = schema_problems(scale_set)
    assert any("minRunner" in problem for problem in problems), problems
    assert any(problem.startswith("spec.maxRunners") for problem in problems), problems


def _in_namespace(case: Case, namespace: str) -> Case:
    values = copy.deepcopy(case.values)
    if values.get("namespaceOverride"):
        values["namespaceOverride"] = namespace
    return dataclasses.replace(case, values=values, namespace=namespace)


def _release_all(observed: Observed) -> list[str]:
    """Plan a deleting scale set until it removes its own finalizer, releasing each chart object
    the plan asks for; the annotations of the released objects, in order."""
    released: list[str] = []
    for _ in range(len(CHART_OBJECT_KINDS) + 1):
        actions: list[Action] = plan(observed, NOW)
        first = actions[0]
        if isinstance(first, RemoveFinalizers):
            return released
        assert isinstance(first, ReleaseChartObject), actions
        released.append(first.annotation)
        assert observed.chart_objects is not None
        observed = dataclasses.replace(
            observed,
            chart_objects=tuple(
                dataclasses.replace(item, obj=None) if item.annotation == first.annotation else item
                for item in observed.chart_objects
            ),
        )
    raise AssertionError(f"the plan never removed its finalizer: {released}")


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
async def test_applies_and_the_controller_accepts_it(
    case: Case, actions_crds: None, client: KubeClient, namespace: str
) -> None:
    objects = _in_namespace(case, namespace).render()
    for obj in objects:
        obj.pop(SOURCE)
        await client.create(KINDS[obj["kind"]], obj, namespace=namespace)
    sent = _scale_set(objects)
    stored = await client.get(
        AUTOSCALING_RUNNER_SET, ObjectKey(namespace, sent["metadata"]["name"])
    )
    assert normalised(stored.raw["spec"]) == normalised(sent["spec"])

    view = scale_set_view(stored, FULL_TEMPLATE)
    assert view.problems == ()
    refused = scale_set_view(stored).problems
    assert all(isinstance(p, Refusal) and p.reason == "ListenerTemplateRefused" for p in refused), (
        refused
    )
    assert bool(refused) == (case.name == "listener-template"), refused
    added = AddFinalizers((), (keys.AUTOSCALING_RUNNER_SET_FINALIZER,))
    assert plan(Observed(view, SETTINGS), NOW)[:1] == [added]
    with_finalizer = KubeObject(
        AUTOSCALING_RUNNER_SET,
        {
            **stored.raw,
            "metadata": {
                **stored.raw["metadata"],
                "finalizers": [keys.AUTOSCALING_RUNNER_SET_FINALIZER],
            },
        },
    )
    first = plan(Observed(scale_set_view(with_finalizer, FULL_TEMPLATE), SETTINGS), NOW)[0]
    assert isinstance(first, (ResolveRunnerGroup, FindScaleSet)), first

    # deletion: the annotations name every other object of the chart, all protected
    named: list[ChartObject] = []
    for annotation in keys.CLEANUP_ANNOTATIONS_IN_ORDER:
        name = stored.annotations.get(annotation)
        if not name:
            continue
        kind = CHART_OBJECT_KINDS[annotation]
        try:
            obj = await client.get(kind, ObjectKey(namespace, name))
        except NotFound:
            pytest.fail(f"{annotation} names {kind.kind} {name}, which the chart did not render")
        assert keys.CLEANUP_PROTECTION_FINALIZER in obj.finalizers, f"{kind.kind} {name}"
        named.append(ChartObject(annotation, kind, name, obj))
    others = {(obj["kind"], obj["metadata"]["name"]) for obj in objects if obj is not sent}
    assert {(item.kind.kind, item.name) for item in named} == others

    deleting = KubeObject(
        AUTOSCALING_RUNNER_SET,
        {
            **with_finalizer.raw,
            "metadata": {
                **with_finalizer.raw["metadata"],
                "deletionTimestamp": "2027-01-15T07:59:00Z",
            },
        },
    )
    observed = Observed(scale_set_view(deleting), SETTINGS)
    assert isinstance(plan(observed, NOW)[0], ReadChartObjects)
    released = _release_all(dataclasses.replace(observed, chart_objects=tuple(named)))
    assert released == [item.annotation for item in named]
