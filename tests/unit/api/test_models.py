"""The models load what ARC writes and write it back unchanged (round trip), keep unknown and
wrongly typed fields, and give typed access to ARC's fields and ours."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.api.arc_facts import (
    arc_kinds,
    arc_objects,
    fixture_paths,
    load_fixture,
    objects_for,
)

from scaleset.api import (
    BY_KIND,
    AutoscalingListener,
    AutoscalingRunnerSet,
    EphemeralRunner,
    EphemeralRunnerSet,
    EphemeralRunnerSetStatus,
    EphemeralRunnerSpec,
    EphemeralRunnerStatus,
    JobCompletion,
    ObjectMeta,
    UnknownKind,
    crds,
    load,
    same_json,
    to_json,
)

FIXTURES = fixture_paths()


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture_round_trips_unchanged(path: Path) -> None:
    data = load_fixture(path)
    assert to_json(load(data)) == data


def test_there_is_a_fixture_of_every_kind() -> None:
    kinds = {load_fixture(path)["kind"] for path in FIXTURES}
    assert kinds == {
        "AutoscalingRunnerSet",
        "EphemeralRunnerSet",
        "EphemeralRunner",
        "AutoscalingListener",
    }


@pytest.mark.parametrize("kind", arc_kinds())
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_object_arc_accepts_round_trips(kind: str, data: st.DataObject) -> None:
    obj = data.draw(arc_objects(kind))
    original = copy.deepcopy(obj)
    assert to_json(load(obj)) == original
    assert obj == original, "loading must not mutate the input"


@pytest.mark.parametrize("kind", arc_kinds())
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_object_our_schema_accepts_round_trips(kind: str, data: st.DataObject) -> None:
    obj = data.draw(objects_for(kind, crds.object_schema(BY_KIND[kind])))
    assert to_json(load(copy.deepcopy(obj))) == obj


def _leaf_paths(value: object, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(value, dict):
        return [p for key, child in value.items() for p in _leaf_paths(child, (*path, key))]
    if isinstance(value, list):
        return [p for index, child in enumerate(value) for p in _leaf_paths(child, (*path, index))]
    return [path]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_wrong_type_anywhere_still_round_trips(path: Path, data: st.DataObject) -> None:
    obj = load_fixture(path)
    leaves = [leaf for leaf in _leaf_paths(obj) if leaf[0] not in ("apiVersion", "kind")]
    leaf = data.draw(st.sampled_from(leaves))
    replacement = data.draw(st.sampled_from(["oops", 3, 2.5, True, None, [1], {"k": "v"}]))
    parent: Any = obj
    for key in leaf[:-1]:
        parent = parent[key]
    parent[leaf[-1]] = replacement
    assert to_json(load(copy.deepcopy(obj))) == obj


def test_unknown_fields_are_kept_at_every_level() -> None:
    data = load_fixture(Path(FIXTURES[0]).with_name("autoscalingrunnerset-dind.yaml"))
    ars = load(data)
    assert isinstance(ars, AutoscalingRunnerSet)
    assert ars.metadata.model_extra == {"selfLink": data["metadata"]["selfLink"]}
    assert ars.spec.model_extra == {"futureField": {"enabled": True}}
    assert ars.spec.template["spec"]["futurePodField"] == "keep-me"
    sidecar = ars.spec.template["spec"]["initContainers"][1]
    assert sidecar["restartPolicy"] == "Always"


def test_arc_fields_are_typed() -> None:
    ars = load(load_fixture(FIXTURES[0].with_name("autoscalingrunnerset-dind.yaml")))
    assert isinstance(ars, AutoscalingRunnerSet)
    assert (ars.spec.min_runners, ars.spec.max_runners) == (1, 10)
    assert ars.spec.runner_scale_set_labels == ["linux", "dind"]
    assert ars.metadata.annotations["runner-scale-set-id"] == "12"
    assert ars.metadata.creation_timestamp == datetime(2026, 5, 30, 9, 12, 44, tzinfo=UTC)
    assert ars.status.current_runners == 3

    ers = load(load_fixture(FIXTURES[0].with_name("ephemeralrunnerset.yaml")))
    assert isinstance(ers, EphemeralRunnerSet)
    assert (ers.spec.replicas, ers.spec.patch_id) == (3, 17)
    assert ers.spec.ephemeral_runner_spec.runner_scale_set_id == 12
    owner = ers.metadata.controller_owner()
    assert owner is not None
    assert (owner.kind, owner.name) == ("AutoscalingRunnerSet", "arc-runner-set")

    listener = load(load_fixture(FIXTURES[0].with_name("autoscalinglistener.yaml")))
    assert isinstance(listener, AutoscalingListener)
    assert listener.spec.image_pull_secrets[0].name == "ghcr-pull"
    assert listener.spec.metrics is not None
    assert listener.spec.metrics.gauges["gha_desired_runners"].labels == ["name", "namespace"]


def test_kubernetes_mode_fixture_has_every_shared_type() -> None:
    ars = load(load_fixture(FIXTURES[0].with_name("autoscalingrunnerset-kubernetes-mode.yaml")))
    assert isinstance(ars, AutoscalingRunnerSet)
    spec = ars.spec
    assert spec.proxy is not None
    assert spec.proxy.http is not None
    assert spec.proxy.http.credential_secret_ref == "proxy-auth"
    assert spec.proxy.no_proxy == ["10.0.0.0/8", ".svc.cluster.local"]
    assert spec.github_server_tls is not None
    assert spec.github_server_tls.certificate_from is not None
    ref = spec.github_server_tls.certificate_from.config_map_key_ref
    assert ref is not None
    assert (ref.name, ref.key) == ("ghes-ca", "ca.crt")
    assert spec.vault_config is not None
    assert spec.vault_config.azure_key_vault is not None
    assert spec.vault_config.azure_key_vault.secret_key == "github-app"
    assert spec.listener_metrics is not None
    buckets = spec.listener_metrics.histograms["gha_job_startup_duration_seconds"].buckets
    assert buckets == [0.5, 1, 2.5, 5, 10, 30, 60]
    assert [type(b) for b in buckets[:2]] == [float, int], "numbers keep their spelling"
    assert spec.ephemeral_runner_metadata is not None
    assert spec.ephemeral_runner_metadata.annotations == {"cost-center": "42"}


def test_scaleset_status_additions_are_typed() -> None:
    er = load(load_fixture(FIXTURES[0].with_name("ephemeralrunner-scaleset-completed.yaml")))
    assert isinstance(er, EphemeralRunner)
    status = er.status
    assert status.job_completion == JobCompletion(
        result="succeeded",
        runner_id=815,
        runner_name="arc-runner-set-runner-q9w8e",
        job_id="job-77",
        workflow_run_id=555,
        finish_time=datetime(2026, 5, 30, 11, 7, 3, tzinfo=UTC),
    )
    assert status.job_completion_deadline == datetime(2026, 5, 30, 11, 7, 35, tzinfo=UTC)
    assert status.runner_started_at == datetime(2026, 5, 30, 11, 0, 21, tzinfo=UTC)
    assert status.conditions[0].reason == "JobCompletedRunnerAlive"


def test_wrong_type_is_set_aside_and_written_back_unchanged() -> None:
    data = load_fixture(FIXTURES[0].with_name("autoscalingrunnerset-dind.yaml"))
    data["spec"]["maxRunners"] = "ten"
    data["spec"]["proxy"] = "not-an-object"
    data["status"]["currentRunners"] = "3"
    ars = load(data)
    assert isinstance(ars, AutoscalingRunnerSet)
    assert ars.spec.max_runners is None
    assert ars.spec.proxy is None
    assert ars.spec.min_runners == 1, "the other fields still load"
    assert set(ars.spec.invalid_fields()) == {"maxRunners", "proxy"}
    assert set(ars.status.invalid_fields()) == {"currentRunners"}
    assert to_json(ars) == data


def test_strict_types_do_not_coerce() -> None:
    status = EphemeralRunnerStatus.model_validate({"runnerId": "42", "ready": 1})
    assert status.runner_id == 0
    assert status.ready is False
    assert to_json(status) == {"runnerId": "42", "ready": 1}


def test_timestamps_parse_offsets_and_write_utc_z() -> None:
    status = EphemeralRunnerStatus.model_validate({"runnerStartedAt": "2026-05-30T13:00:21+02:00"})
    assert status.runner_started_at == datetime(2026, 5, 30, 11, 0, 21, tzinfo=UTC)
    assert to_json(status) == {"runnerStartedAt": "2026-05-30T11:00:21Z"}
    zero = JobCompletion.model_validate({"finishTime": "0001-01-01T00:00:00Z"})
    assert to_json(zero) == {"finishTime": "0001-01-01T00:00:00Z"}
    naive = EphemeralRunnerStatus.model_validate({"runnerStartedAt": "2026-05-30T11:00:21"})
    assert naive.runner_started_at is None
    assert "runnerStartedAt" in naive.invalid_fields()


def test_objects_built_in_python_dump_only_what_was_set() -> None:
    er = EphemeralRunner(
        metadata=ObjectMeta(generate_name="set-runner-", namespace="ns"),
        spec=EphemeralRunnerSpec(
            github_config_url="https://github.com/o",
            github_config_secret="gh",
            runner_scale_set_id=3,
        ),
    )
    assert to_json(er) == {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {"generateName": "set-runner-", "namespace": "ns"},
        "spec": {
            "githubConfigUrl": "https://github.com/o",
            "githubConfigSecret": "gh",
            "runnerScaleSetId": 3,
        },
    }


def test_load_rejects_other_kinds() -> None:
    with pytest.raises(UnknownKind):
        load({"apiVersion": "v1", "kind": "Pod"})
    with pytest.raises(UnknownKind):
        load({"apiVersion": "actions.github.com/v1beta1", "kind": "EphemeralRunner"})


def test_invalid_value_repr_hides_the_raw_value() -> None:
    status = EphemeralRunnerStatus.model_validate({"runnerName": {"token": "s3cr3t-value"}})
    assert "s3cr3t-value" not in repr(status.invalid_fields())


def test_same_json_treats_a_null_field_as_absent_at_any_object_depth() -> None:
    cleared = EphemeralRunnerSetStatus(failure_streak=None, outdated_runner_spec=None)
    assert to_json(cleared) != to_json(EphemeralRunnerSetStatus())
    assert same_json(cleared, EphemeralRunnerSetStatus())
    assert not same_json(EphemeralRunnerSetStatus(current_replicas=1), EphemeralRunnerSetStatus())
    nested = EphemeralRunnerSetStatus.model_validate({"failureStreak": {"pausedUntil": None}})
    assert same_json(nested, EphemeralRunnerSetStatus.model_validate({"failureStreak": {}}))
    assert not same_json(nested, EphemeralRunnerSetStatus())
