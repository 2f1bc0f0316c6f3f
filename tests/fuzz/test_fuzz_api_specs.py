"""Fuzz target 1: AutoscalingRunnerSet / EphemeralRunnerSet / EphemeralRunner objects.

Arbitrary JSON objects and mutations of ARC's fixtures (tests/fixtures/arc/) must parse
leniently, ``validate()`` must return problems that name a field, a load/dump round trip keeps
every field that came in (unknown and wrongly typed ones included), and each controller's pure
``plan`` must return actions for every object that parses, with its Observed state built the
way its reconciler builds it (the reconciler's own parsing functions on the fuzzed JSON).
"""

from __future__ import annotations

import base64
import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaleset.api import (
    BY_KIND,
    Problem,
    UnknownKind,
    keys,
    load,
    parse_kube_time,
    to_json,
    validate,
)
from scaleset.controllers.autoscalinglistener import observed as listener_observed
from scaleset.controllers.autoscalinglistener.inputs import ConfigProblem, Credentials, Inputs
from scaleset.controllers.autoscalinglistener.observed import Observed as ListenerObserved
from scaleset.controllers.autoscalinglistener.plan import plan as listener_plan
from scaleset.controllers.autoscalinglistener.settings import Settings as ListenerSettings
from scaleset.controllers.autoscalingrunnerset import observed as ars_observed
from scaleset.controllers.autoscalingrunnerset.observed import (
    CHART_OBJECT_KINDS,
    ChartObject,
    ListenerView,
    ScaleSetInfo,
    Verified,
)
from scaleset.controllers.autoscalingrunnerset.observed import Observed as ArsObserved
from scaleset.controllers.autoscalingrunnerset.plan import plan as ars_plan
from scaleset.controllers.autoscalingrunnerset.settings import Settings as ArsSettings
from scaleset.controllers.ephemeralrunner import observed as er_observed
from scaleset.controllers.ephemeralrunner.observed import Observed as ErObserved
from scaleset.controllers.ephemeralrunner.plan import plan as er_plan
from scaleset.controllers.ephemeralrunner.settings import Settings as ErSettings
from scaleset.controllers.ephemeralrunnerset import observed as ers_observed
from scaleset.controllers.ephemeralrunnerset.observed import Observed as ErsObserved
from scaleset.controllers.ephemeralrunnerset.plan import plan as ers_plan
from scaleset.controllers.ephemeralrunnerset.runner_body import expected_runner_spec
from scaleset.controllers.ephemeralrunnerset.settings import PlanSettings
from scaleset.controllers.github_access import (
    APP_ID_KEY,
    APP_INSTALLATION_ID_KEY,
    APP_PRIVATE_KEY_KEY,
    TOKEN_KEY,
    GitHubAccessError,
    credentials_from_secret,
)
from scaleset.kube.objects import KubeObject
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER,
    EPHEMERAL_RUNNER_SET,
    POD,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
)
from tests.fuzz.strategies import (
    TRICKY_STRINGS,
    fixture,
    fuzz_settings,
    json_objects,
    json_values,
    mutated,
    tricky_text,
)
from tests.plugins.secret_guard import register_secret

NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)

ARS_FIXTURES = ("autoscalingrunnerset-dind.yaml", "autoscalingrunnerset-kubernetes-mode.yaml")
ERS_FIXTURE = "ephemeralrunnerset.yaml"
ER_FIXTURES = ("ephemeralrunner-arc-busy.yaml", "ephemeralrunner-scaleset-completed.yaml")
LISTENER_FIXTURE = "autoscalinglistener.yaml"
ALL_FIXTURES = (*ARS_FIXTURES, ERS_FIXTURE, *ER_FIXTURES, LISTENER_FIXTURE)
KINDS = ("AutoscalingRunnerSet", "EphemeralRunnerSet", "EphemeralRunner", "AutoscalingListener")

PARSE_EXAMPLES = 60  # per kind
MUTATION_EXAMPLES = 40  # per fixture
PLAN_EXAMPLES = 150  # per controller
SECRET_EXAMPLES = 200  # GitHub config Secrets
SERVER_CHECKED = ("apiVersion", "kind", "metadata")
"""Not mutated for the plan tests: the API server enforces their types on every object (labels
and annotations are strings, ...); spec and status are fuzzed freely."""


# --- the model invariants ----------------------------------------------------------------------


def _same_time(a: object, b: object) -> bool:
    try:
        return parse_kube_time(a) == parse_kube_time(b)
    except ValueError:
        return False


def _kept(original: Any, dumped: Any, path: str = "") -> None:
    """Everything in ``original`` is in ``dumped`` unchanged (a timestamp may be re-spelled)."""
    if isinstance(original, dict):
        assert isinstance(dumped, dict), f"{path}: object became {type(dumped).__name__}"
        for key, value in original.items():
            assert key in dumped, f"{path}.{key} was dropped"
            _kept(value, dumped[key], f"{path}.{key}")
    elif isinstance(original, list):
        assert isinstance(dumped, list), f"{path}: list became {type(dumped).__name__}"
        assert len(original) == len(dumped), f"{path}: list length changed"
        for index, (a, b) in enumerate(zip(original, dumped, strict=True)):
            _kept(a, b, f"{path}[{index}]")
    else:
        same = original == dumped and type(original) is type(dumped)
        assert same or _same_time(original, dumped), f"{path}: value changed"


def _check_object(data: dict[str, Any]) -> None:
    """Parse, validate and round-trip one object the API server could hold."""
    before = copy.deepcopy(data)
    kind, api_version = data.get("kind"), data.get("apiVersion", keys.API_VERSION)
    if not isinstance(kind, str) or kind not in BY_KIND or api_version != keys.API_VERSION:
        with pytest.raises(UnknownKind, match=r"^(not an|unsupported apiVersion)"):
            load(data)
        return
    obj = load(data)
    assert data == before, "loading must not change its input"
    problems = validate(obj)
    assert isinstance(problems, list)
    for problem in problems:
        assert isinstance(problem, Problem)
        assert problem.field
        assert problem.message
        assert problem.field.split(".")[0].split("[")[0] in ("metadata", "spec", "status")
        assert "x" * 1000 not in problem.message, "a huge input value reached the message"
    dumped = to_json(obj)
    _kept(before, dumped)
    assert to_json(load(dumped)) == dumped, "a second round trip changed the object"


@pytest.mark.parametrize("kind", KINDS)
@fuzz_settings(PARSE_EXAMPLES)
@given(data=st.data())
def test_any_json_object_of_a_kind_parses_validates_and_round_trips(
    kind: str, data: st.DataObject
) -> None:
    obj = data.draw(json_objects)
    obj["kind"] = kind
    if data.draw(st.booleans()):
        obj["apiVersion"] = keys.API_VERSION
    for part in ("metadata", "spec", "status"):
        if data.draw(st.booleans()):
            obj[part] = data.draw(st.one_of(json_objects, json_values))
    _check_object(obj)


@pytest.mark.parametrize("name", ALL_FIXTURES)
@fuzz_settings(MUTATION_EXAMPLES)
@given(data=st.data())
def test_a_mutated_arc_fixture_parses_validates_and_round_trips(
    name: str, data: st.DataObject
) -> None:
    _check_object(data.draw(mutated(fixture(name))))


# --- EphemeralRunner plan ----------------------------------------------------------------------


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8", "surrogatepass")).decode()


secret_values = st.one_of(st.sampled_from(TRICKY_STRINGS).map(_b64), tricky_text, json_values)
times = st.one_of(
    st.integers(-3000, 3000).map(lambda s: (NOW + timedelta(seconds=s)).isoformat()),
    tricky_text,
)
container_states = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "running": st.fixed_dictionaries({}, optional={"startedAt": times}),
            "waiting": st.fixed_dictionaries({}, optional={"reason": tricky_text}),
            "terminated": st.fixed_dictionaries(
                {},
                optional={
                    "exitCode": st.integers(-(2**31), 2**31 - 1),
                    "reason": tricky_text,
                    "startedAt": times,
                },
            ),
        },
    ),
)
container_names = st.sampled_from(["runner", "init-dind", "dind", "sidecar", ""])


@st.composite
def pods(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """A pod with the types the API server enforces but arbitrary values."""
    statuses = st.lists(
        st.fixed_dictionaries(
            {"name": container_names},
            optional={"state": container_states, "lastState": container_states},
        ),
        max_size=3,
    )
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": draw(tricky_text)}
    if draw(st.booleans()):
        metadata["creationTimestamp"] = draw(times)
    if draw(st.booleans()):
        metadata["deletionTimestamp"] = draw(times)
    init = st.lists(
        st.fixed_dictionaries(
            {"name": container_names},
            optional={"restartPolicy": st.sampled_from(["Always", "Never", ""])},
        ),
        max_size=2,
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": draw(st.fixed_dictionaries({}, optional={"initContainers": init})),
        "status": draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed", ""]),
                    "reason": tricky_text,
                    "message": tricky_text,
                    "conditions": st.lists(
                        st.fixed_dictionaries(
                            {
                                "type": st.sampled_from(["Ready", "PodScheduled", "X"]),
                                "status": st.sampled_from(["True", "False", "Unknown"]),
                            }
                        ),
                        max_size=3,
                    ),
                    "containerStatuses": statuses,
                    "initContainerStatuses": statuses,
                },
            )
        ),
    }


@st.composite
def jit_secrets(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """A JIT Secret: ``data`` values are any string (a user can write one), mostly base64."""
    data = draw(
        st.dictionaries(
            st.sampled_from(
                [keys.JIT_RUNNER_ID_KEY, keys.JIT_RUNNER_NAME_KEY, keys.JIT_SCALE_SET_ID_KEY]
            ),
            st.one_of(st.sampled_from(TRICKY_STRINGS).map(_b64), tricky_text),
        )
    )
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": "s1"}
    if draw(st.booleans()):
        metadata["deletionTimestamp"] = draw(times)
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": data}


def er_observed_state(
    runner: dict[str, Any], pod: dict[str, Any] | None, secret: dict[str, Any] | None
) -> ErObserved:
    """As ``EphemeralRunnerReconciler.observe`` builds it."""
    obj = KubeObject(EPHEMERAL_RUNNER, runner)
    model = er_observed.observe_runner(obj)
    return ErObserved(
        runner=model,
        obj=obj,
        pod=er_observed.observe_pod(KubeObject(POD, pod)) if pod is not None else None,
        secret=er_observed.observe_secret(KubeObject(SECRET, secret)) if secret else None,
        problems=er_observed.runner_problems(model),
        settings=ErSettings(),
    )


@fuzz_settings(PLAN_EXAMPLES)
@given(data=st.data())
def test_ephemeral_runner_plan_never_raises(data: st.DataObject) -> None:
    runner = data.draw(
        mutated(fixture(data.draw(st.sampled_from(ER_FIXTURES))), frozen=SERVER_CHECKED)
    )
    if data.draw(st.booleans()):
        runner["metadata"]["deletionTimestamp"] = "2026-06-01T11:59:00Z"
    name = KubeObject(EPHEMERAL_RUNNER, runner).name
    pod = data.draw(st.one_of(st.none(), pods(name)))
    secret = data.draw(st.one_of(st.none(), jit_secrets(name)))
    observed = er_observed_state(runner, pod, secret)
    actions = er_plan(observed, NOW + timedelta(seconds=data.draw(st.integers(-100, 10_000))))
    assert isinstance(actions, list)


# --- EphemeralRunnerSet plan -------------------------------------------------------------------


@st.composite
def runner_set_with_runners(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    runner_set = draw(mutated(fixture(ERS_FIXTURE), frozen=SERVER_CHECKED))
    meta = runner_set.get("metadata")
    uid = meta.get("uid") if isinstance(meta, dict) else None
    runners = []
    for index in range(draw(st.integers(0, 5))):
        runner = draw(mutated(fixture(draw(st.sampled_from(ER_FIXTURES))), frozen=SERVER_CHECKED))
        rmeta = runner.get("metadata")
        if isinstance(rmeta, dict):
            rmeta["name"] = f"runner-{index}"
            if draw(st.booleans()):
                rmeta["ownerReferences"] = [
                    {
                        "apiVersion": keys.API_VERSION,
                        "kind": "EphemeralRunnerSet",
                        "name": "arc-runner-set",
                        "uid": uid if isinstance(uid, str) else "",
                        "controller": True,
                    }
                ]
            if draw(st.booleans()):
                annotations = rmeta.setdefault("annotations", {})
                if isinstance(annotations, dict):
                    annotations[keys.PATCH_ID_ANNOTATION] = draw(tricky_text)
        runners.append(runner)
    return runner_set, runners


def ers_observed_state(
    runner_set: dict[str, Any], runners: list[dict[str, Any]], data: st.DataObject
) -> ErsObserved:
    """As ``EphemeralRunnerSetReconciler.observe`` builds it (the ledger's answers drawn)."""
    rs = KubeObject(EPHEMERAL_RUNNER_SET, runner_set)
    expected = expected_runner_spec(rs)
    children = {
        obj.name: obj
        for obj in (KubeObject(EPHEMERAL_RUNNER, raw) for raw in runners)
        if (owner := obj.controller_owner) is not None and owner.uid == rs.uid
    }
    views = tuple(
        ers_observed.runner_view(
            obj, expected_spec=expected, now=NOW, status=ers_observed.runner_status(obj)
        )
        for obj in children.values()
    )
    names = st.sampled_from([*children, "gone-runner"])
    status = ers_observed.EphemeralRunnerSetStatus.model_validate(dict(rs.status))
    return ErsObserved(
        runner_set=ers_observed.runner_set_view(
            rs, status=status, max_runners=data.draw(st.one_of(st.none(), st.integers(0, 20)))
        ),
        runners=views,
        phantoms=data.draw(st.integers(0, 5)),
        in_flight_deletes=frozenset(data.draw(st.lists(names, max_size=3))),
        seen_finished=frozenset(data.draw(st.lists(names, max_size=3))),
    )


@fuzz_settings(PLAN_EXAMPLES)
@given(data=st.data())
def test_ephemeral_runner_set_plan_never_raises(data: st.DataObject) -> None:
    runner_set, runners = data.draw(runner_set_with_runners())
    observed = ers_observed_state(runner_set, runners, data)
    now = NOW + timedelta(seconds=data.draw(st.integers(-100, 10_000)))
    assert isinstance(ers_plan(observed, now, PlanSettings()), list)


# --- AutoscalingRunnerSet plan -----------------------------------------------------------------

ARS_SETTINGS = ArsSettings(controller_namespace="arc-systems", listener_image="ghcr.io/x/l:1")


@fuzz_settings(PLAN_EXAMPLES)
@given(data=st.data())
def test_autoscaling_runner_set_plan_never_raises(data: st.DataObject) -> None:
    scale_set = data.draw(
        mutated(fixture(data.draw(st.sampled_from(ARS_FIXTURES))), frozen=SERVER_CHECKED)
    )
    if data.draw(st.booleans()):
        meta = scale_set.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
            meta["annotations"][keys.RUNNER_SCALE_SET_ID_ANNOTATION] = data.draw(tricky_text)
    chart_objects = None
    if data.draw(st.booleans()):  # being deleted: the chart's objects looked up (or not yet)
        scale_set["metadata"]["deletionTimestamp"] = "2026-06-01T11:59:00Z"
        if data.draw(st.booleans()):
            chart_objects = tuple(
                ChartObject(
                    annotation,
                    kind,
                    data.draw(tricky_text),
                    KubeObject(kind, _plain(kind.kind, "chart-object"))
                    if data.draw(st.booleans())
                    else None,
                )
                for annotation, kind in CHART_OBJECT_KINDS.items()
                if data.draw(st.booleans())
            )
    obj = KubeObject(AUTOSCALING_RUNNER_SET, scale_set)
    runner_sets = [
        KubeObject(
            EPHEMERAL_RUNNER_SET, data.draw(mutated(fixture(ERS_FIXTURE), frozen=SERVER_CHECKED))
        )
        for _ in range(data.draw(st.integers(0, 2)))
    ]
    listeners = [
        KubeObject(
            AUTOSCALING_LISTENER,
            data.draw(mutated(fixture(LISTENER_FIXTURE), frozen=SERVER_CHECKED)),
        )
        for _ in range(data.draw(st.integers(0, 2)))
    ]
    owned = [
        ars_observed.runner_set_view(rs) for rs in runner_sets if ars_observed.controls(rs, obj)
    ]
    holder = next((rs for rs in runner_sets if not ars_observed.controls(rs, obj)), None)
    verified = None
    if data.draw(st.booleans()):
        info = ScaleSetInfo(
            id=data.draw(st.integers(0, 10)),
            name=data.draw(tricky_text),
            runner_group_id=data.draw(st.integers(0, 3)),
            runner_group_name=data.draw(st.sampled_from(["Default", "", "other"])),
            labels=tuple(data.draw(st.lists(tricky_text, max_size=3))),
        )
        verified = Verified(info, data.draw(st.integers(-1, 20)), NOW)
    observed = ArsObserved(
        scale_set=ars_observed.scale_set_view(obj),
        settings=ARS_SETTINGS,
        runner_sets=tuple(sorted(owned, key=lambda rs: rs.name)),
        name_holder=ars_observed.runner_set_view(holder) if holder is not None else None,
        listeners=tuple(
            sorted(
                (ListenerView(item) for item in listeners if ars_observed.points_at(item, obj)),
                key=lambda item: item.name,
            )
        ),
        arc_controllers=tuple(data.draw(st.lists(tricky_text, max_size=1))),
        verified=verified,
        failures=data.draw(st.integers(0, 5)),
        chart_objects=chart_objects,
    )
    now = NOW + timedelta(seconds=data.draw(st.integers(-100, 10_000)))
    assert isinstance(ars_plan(observed, now), list)


# --- AutoscalingListener plan ------------------------------------------------------------------

LISTENER_PAT = register_secret("ghp_fuzzListenerPlan0123456789abcdefghijk")


@st.composite
def listener_secrets(draw: st.DrawFn, name: str, owner_uid: str) -> dict[str, Any]:
    """A config or proxy Secret: ``config.json`` holding any JSON (or not JSON), other keys."""
    document = draw(st.one_of(json_values, st.just({"github_token": LISTENER_PAT})))
    text = draw(st.sampled_from([json.dumps(document), "[" * 5000 + "]" * 5000, "{bad"]))
    data = {keys.LISTENER_CONFIG_KEY: _b64(text)}
    data.update(draw(st.dictionaries(tricky_text, secret_values.filter(_is_text), max_size=3)))
    metadata: dict[str, Any] = {"name": name, "namespace": "arc-systems", "uid": "s-" + name}
    if draw(st.booleans()):
        metadata["ownerReferences"] = [
            {"kind": "AutoscalingListener", "name": "l", "uid": owner_uid, "controller": True}
        ]
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": data}


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _plain(kind_name: str, name: str) -> dict[str, Any]:
    return {"kind": kind_name, "metadata": {"name": name, "namespace": "arc-runners", "uid": name}}


@fuzz_settings(PLAN_EXAMPLES)
@given(data=st.data())
def test_autoscaling_listener_plan_never_raises(data: st.DataObject) -> None:
    raw = data.draw(mutated(fixture(LISTENER_FIXTURE), frozen=SERVER_CHECKED))
    if data.draw(st.booleans()):
        raw["metadata"]["deletionTimestamp"] = "2026-06-01T11:59:00Z"
    obj = KubeObject(AUTOSCALING_LISTENER, raw)
    listener, problems = listener_observed.observe_listener(obj)
    pod = data.draw(st.one_of(st.none(), pods(obj.name)))
    if pod is not None and isinstance(pod["status"].get("containerStatuses"), list):
        for entry in pod["status"]["containerStatuses"]:
            entry["name"] = data.draw(st.sampled_from([keys.LISTENER_CONTAINER, "other"]))

    def maybe(kind: Any, kind_name: str) -> listener_observed.ObjectView | None:
        if not data.draw(st.booleans()):
            return None
        return listener_observed.observe_object(KubeObject(kind, _plain(kind_name, obj.name)))

    def secret(config: bool) -> listener_observed.SecretView | None:
        if not data.draw(st.booleans()):
            return None
        found = KubeObject(SECRET, data.draw(listener_secrets(obj.name, obj.uid)))
        return listener_observed.observe_secret(found, obj.uid, config=config)

    inputs = data.draw(
        st.sampled_from(
            [
                None,
                Inputs(credentials=Credentials(token=LISTENER_PAT)),
                Inputs(
                    credentials=Credentials(app_id="1", installation_id=2, private_key="k" * 40),
                    root_ca="-----BEGIN CERTIFICATE-----",
                    proxy={"http_proxy": "http://u:p@proxy:3128", "no_proxy": ""},
                ),
                ConfigProblem("SecretNotFound", "spec.githubConfigSecret", "not found"),
            ]
        )
    )
    observed = ListenerObserved(
        listener=listener,
        obj=obj,
        settings=ListenerSettings(),
        problems=problems,
        scale_set_exists=data.draw(st.booleans()),
        service_account=maybe(SERVICE_ACCOUNT, "ServiceAccount"),
        role=maybe(ROLE, "Role"),
        role_binding=maybe(ROLE_BINDING, "RoleBinding"),
        config_secret=secret(config=True),
        proxy_secret=secret(config=False),
        pod=listener_observed.observe_pod(KubeObject(POD, pod)) if pod is not None else None,
        inputs=None if listener.metadata.is_deleting or problems else inputs,
    )
    now = NOW + timedelta(seconds=data.draw(st.integers(-100, 10_000)))
    assert isinstance(listener_plan(observed, now), list)


def test_every_kind_is_fuzzed() -> None:
    assert set(KINDS) == set(BY_KIND)


# --- crashes the fuzzer found, as explicit examples -------------------------------------------


@pytest.mark.parametrize("value", ["wrI=", _b64("1" * 5000), _b64("١٢")])
def test_a_jit_secret_whose_runner_id_is_not_an_ascii_number_reads_as_no_id(value: str) -> None:
    """Found by test_ephemeral_runner_plan_never_raises: the Secret's runnerId decoded to "²"
    (``str.isdigit`` true, ``int`` raised ValueError out of ``observe_secret``)."""
    secret = {
        "metadata": {"name": "r", "namespace": "ns", "uid": "s1"},
        "data": {keys.JIT_RUNNER_ID_KEY: value, keys.JIT_SCALE_SET_ID_KEY: value},
    }
    view = er_observed.observe_secret(KubeObject(SECRET, secret))
    assert (view.runner_id, view.scale_set_id) == (0, 0)


def test_a_jit_secret_value_that_is_not_ascii_reads_as_empty() -> None:
    """Found by test_ephemeral_runner_plan_never_raises: ``data.runnerName: "\x80"`` made
    ``base64.b64decode`` raise ValueError (not binascii.Error) out of ``observe_secret``."""
    secret = {
        "metadata": {"name": "r", "namespace": "ns", "uid": "s1"},
        "data": {keys.JIT_RUNNER_NAME_KEY: "\x80", keys.JIT_RUNNER_ID_KEY: "é"},
    }
    view = er_observed.observe_secret(KubeObject(SECRET, secret))
    assert (view.runner_name, view.runner_id) == ("", 0)


@pytest.mark.parametrize("value", ["²", "1" * 5000, "١٢"])
def test_a_scale_set_id_annotation_that_is_not_an_ascii_number_means_not_registered(
    value: str,
) -> None:
    """Found by test_autoscaling_runner_set_plan_never_raises: the annotation
    ``runner-scale-set-id: "²"`` made ``ScaleSetView.scale_set_id`` raise ValueError."""
    raw = fixture(ARS_FIXTURES[0])
    raw["metadata"]["annotations"][keys.RUNNER_SCALE_SET_ID_ANNOTATION] = value
    view = ars_observed.scale_set_view(KubeObject(AUTOSCALING_RUNNER_SET, raw))
    assert view.scale_set_id is None


def test_a_listener_secret_value_that_is_not_ascii_is_undecodable_not_a_crash() -> None:
    """Found by test_autoscaling_listener_plan_never_raises: a proxy Secret with a data value
    "\x80" made ``base64.b64decode`` raise ValueError out of the listener's ``observe_secret``."""
    found = KubeObject(SECRET, {"metadata": {"name": "p", "uid": "s"}, "data": {"k": "\x80"}})
    view = listener_observed.observe_secret(found, "owner", config=False)
    assert view.digest


def test_a_deeply_nested_listener_config_json_reads_as_no_document() -> None:
    """Found while fuzzing the listener's Secrets: ``config.json`` of ``"[" * 5000 + "]" *
    5000`` made ``json.loads`` raise RecursionError out of ``config_document_of``."""
    deep = _b64("[" * 100_000 + "]" * 100_000)
    assert listener_observed.config_document_of({"data": {keys.LISTENER_CONFIG_KEY: deep}}) is None


# --- the GitHub config Secret the controllers read for every scale set ------------------------

CONFIG_SECRET_KEYS = [TOKEN_KEY, APP_ID_KEY, APP_INSTALLATION_ID_KEY, APP_PRIVATE_KEY_KEY]


def _config_secret(data: dict[str, Any]) -> KubeObject:
    metadata = {"name": "gh", "namespace": "arc-runners", "uid": "s1"}
    return KubeObject(
        SECRET, {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": data}
    )


config_secret_values = st.one_of(
    st.sampled_from([*TRICKY_STRINGS, LISTENER_PAT, " 12 "]).map(_b64), tricky_text
)


@fuzz_settings(SECRET_EXAMPLES)
@given(
    data=st.one_of(
        st.dictionaries(
            st.one_of(st.sampled_from(CONFIG_SECRET_KEYS), tricky_text),
            config_secret_values,
            max_size=5,
        ),
        st.fixed_dictionaries(
            {key: config_secret_values for key in CONFIG_SECRET_KEYS[1:]},
        ),
    )
)
def test_a_github_config_secret_gives_credentials_or_a_field_named_error(
    data: dict[str, Any],
) -> None:
    try:
        credentials_from_secret(_config_secret(data), "spec.githubConfigSecret")
    except GitHubAccessError as raised:
        error = raised
    else:
        return
    assert error.field == "spec.githubConfigSecret"
    assert LISTENER_PAT not in f"{error} {error!r} {error.message}"


@pytest.mark.parametrize("installation", ["²", "1" * 5000])
def test_a_github_app_installation_id_that_is_not_an_ascii_number_is_a_secret_problem(
    installation: str,
) -> None:
    """Found by reading ``github_access`` after the same crash in ``scale_set_id`` (the fuzz
    above now draws full GitHub App key sets too): ``github_app_installation_id: "²"`` made
    ``int()`` raise ValueError out of ``credentials_from_secret`` (every reconcile of the
    scale set, and of its listener)."""
    data = {
        APP_ID_KEY: _b64("12345"),
        APP_INSTALLATION_ID_KEY: _b64(installation),
        APP_PRIVATE_KEY_KEY: _b64("-----BEGIN RSA PRIVATE KEY-----"),
    }
    with pytest.raises(GitHubAccessError, match="is not a positive number"):
        credentials_from_secret(_config_secret(data), "spec.githubConfigSecret")


def test_a_github_config_secret_value_that_is_not_ascii_is_a_secret_problem() -> None:
    """Found by the same fuzz: a data value ``"\\x80"`` made ``base64.b64decode`` raise
    ValueError (not binascii.Error) out of ``credentials_from_secret``."""
    with pytest.raises(GitHubAccessError, match="is not base64"):
        credentials_from_secret(_config_secret({TOKEN_KEY: "\x80"}), "spec.githubConfigSecret")
