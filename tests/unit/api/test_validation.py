"""validate(): every problem names its field; a bad object still loads (L8)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.unit.api.arc_facts import FIXTURES, fixture_paths, load_fixture

from scaleset.api import Problem, load, validate


def fixture(name: str) -> dict[str, Any]:
    return copy.deepcopy(load_fixture(FIXTURES / name))


def problems_of(data: dict[str, Any]) -> dict[str, str]:
    return {p.field: p.message for p in validate(load(data))}


@pytest.mark.parametrize("path", fixture_paths(), ids=lambda p: p.stem)
def test_fixtures_are_valid(path: Any) -> None:
    assert validate(load(load_fixture(path))) == []


def test_wrong_type_names_the_field() -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    data["spec"]["maxRunners"] = "ten"
    problems = validate(load(data))
    assert [p.field for p in problems] == ["spec.maxRunners"]
    assert "integer" in problems[0].message


def test_min_greater_than_max_names_min_runners() -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    data["spec"]["minRunners"] = 5
    data["spec"]["maxRunners"] = 2
    assert problems_of(data) == {
        "spec.minRunners": "must not be greater than spec.maxRunners (5 > 2)"
    }


def test_min_equal_to_max_is_fine() -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    data["spec"]["minRunners"] = data["spec"]["maxRunners"] = 4
    assert validate(load(data)) == []


def test_negative_counts() -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    data["spec"]["minRunners"] = -1
    data["spec"]["maxRunners"] = -2
    problems = problems_of(data)
    assert problems["spec.minRunners"].startswith("must be 0 or more")
    assert problems["spec.maxRunners"] == "must be 0 or more, got -2"
    ers = fixture("ephemeralrunnerset.yaml")
    ers["spec"]["replicas"] = -3
    assert problems_of(ers) == {"spec.replicas": "must be 0 or more, got -3"}


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com",
        "https://github.com/",
        "https://github.com/a/b/c",
        "github.com/octo-org",
        "ftp://github.com/octo-org",
        "https:///octo-org",
        "not a url",
    ],
)
def test_bad_config_url(url: str) -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    data["spec"]["githubConfigUrl"] = url
    problems = problems_of(data)
    assert list(problems) == ["spec.githubConfigUrl"]
    assert problems["spec.githubConfigUrl"].startswith("invalid GitHub config URL")


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/octo-org",
        "https://github.com/octo-org/octo-repo/",
        "https://github.com/enterprises/octo-corp",
        "http://ghes.example.com:8080/org",
    ],
)
def test_good_config_url(url: str) -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    data["spec"]["githubConfigUrl"] = url
    assert validate(load(data)) == []


def test_missing_url_and_secret() -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    del data["spec"]["githubConfigUrl"]
    data["spec"]["githubConfigSecret"] = ""
    problems = problems_of(data)
    assert problems["spec.githubConfigUrl"] == "is required"
    assert problems["spec.githubConfigSecret"].startswith("is required")


@pytest.mark.parametrize("policy", ["Always", "OnFailure", 3])
def test_runner_restart_policy_must_be_never(policy: object) -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    data["spec"]["template"]["spec"]["restartPolicy"] = policy
    problems = problems_of(data)
    assert list(problems) == ["spec.template.spec.restartPolicy"]
    assert "must be Never" in problems["spec.template.spec.restartPolicy"]


def test_unset_restart_policy_is_fine_and_sidecars_may_restart() -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    del data["spec"]["template"]["spec"]["restartPolicy"]
    assert data["spec"]["template"]["spec"]["initContainers"][1]["restartPolicy"] == "Always"
    assert validate(load(data)) == []


def test_restart_policy_in_runner_and_runner_set_specs() -> None:
    er = fixture("ephemeralrunner-arc-busy.yaml")
    er["spec"]["spec"]["restartPolicy"] = "Always"
    assert list(problems_of(er)) == ["spec.spec.restartPolicy"]
    ers = fixture("ephemeralrunnerset.yaml")
    ers["spec"]["ephemeralRunnerSpec"]["spec"]["restartPolicy"] = "OnFailure"
    assert list(problems_of(ers)) == ["spec.ephemeralRunnerSpec.spec.restartPolicy"]


def test_template_needs_a_runner_container() -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    data["spec"]["template"]["spec"]["containers"][0]["name"] = "worker"
    assert list(problems_of(data)) == ["spec.template.spec.containers"]
    data["spec"]["template"] = {"metadata": {}}
    assert list(problems_of(data)) == ["spec.template.spec"]
    data["spec"]["template"] = {"spec": {"containers": "nonsense"}}
    assert list(problems_of(data)) == ["spec.template.spec.containers"]


def test_vault_type_must_be_azure_key_vault() -> None:
    data = fixture("autoscalingrunnerset-kubernetes-mode.yaml")
    data["spec"]["vaultConfig"]["type"] = "hashicorp"
    assert list(problems_of(data)) == ["spec.vaultConfig.type"]
    data["spec"]["vaultConfig"] = {"type": "azure_key_vault"}
    assert list(problems_of(data)) == ["spec.vaultConfig.azureKeyVault"]
    data["spec"]["vaultConfig"] = {"type": "azure_key_vault", "azureKeyVault": {"url": "u"}}
    assert sorted(problems_of(data)) == [
        "spec.vaultConfig.azureKeyVault.certificatePath",
        "spec.vaultConfig.azureKeyVault.clientId",
        "spec.vaultConfig.azureKeyVault.tenantId",
    ]


def test_proxy_tls_labels_and_buckets() -> None:
    data = fixture("autoscalingrunnerset-kubernetes-mode.yaml")
    data["spec"]["proxy"]["http"]["url"] = ""
    data["spec"]["githubServerTLS"]["certificateFrom"]["configMapKeyRef"]["key"] = ""
    data["spec"]["runnerScaleSetLabels"] = ["ok", "", "x" * 256]
    data["spec"]["listenerMetrics"]["histograms"]["gha_job_startup_duration_seconds"]["buckets"] = [
        1,
        1,
        2,
    ]
    assert sorted(problems_of(data)) == [
        "spec.githubServerTLS.certificateFrom.configMapKeyRef.key",
        "spec.listenerMetrics.histograms[gha_job_startup_duration_seconds].buckets",
        "spec.proxy.http.url",
        "spec.runnerScaleSetLabels[1]",
        "spec.runnerScaleSetLabels[2]",
    ]


def test_scale_set_name_must_leave_room_for_the_listener_name() -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    data["metadata"]["name"] = "n" * 46
    assert list(problems_of(data)) == ["metadata.name"]
    data["metadata"]["name"] = "n" * 45
    assert validate(load(data)) == []


def test_runner_and_listener_specs() -> None:
    er = fixture("ephemeralrunner-arc-busy.yaml")
    er["spec"]["runnerScaleSetId"] = 0
    er["spec"]["githubConfigUrl"] = "https://github.com/a/b/c/d"
    assert sorted(problems_of(er)) == ["spec.githubConfigUrl", "spec.runnerScaleSetId"]

    listener = fixture("autoscalinglistener.yaml")
    listener["spec"]["minRunners"] = 3
    listener["spec"]["maxRunners"] = 1
    listener["spec"]["image"] = ""
    del listener["spec"]["ephemeralRunnerSetName"]
    assert sorted(problems_of(listener)) == [
        "spec.ephemeralRunnerSetName",
        "spec.image",
        "spec.minRunners",
    ]


def test_nested_wrong_types_name_the_path() -> None:
    data = fixture("autoscalingrunnerset-kubernetes-mode.yaml")
    data["spec"]["proxy"]["https"]["url"] = 8080
    data["spec"]["listenerMetrics"]["counters"]["gha_started_jobs_total"]["labels"] = "repo"
    data["spec"]["runnerScaleSetLabels"] = ["ok", 7]
    data["metadata"]["labels"]["broken"] = 1
    data["status"] = {"currentRunners": "many"}
    fields = [p.field for p in validate(load(data))]
    assert sorted(fields) == [
        "metadata.labels",
        "spec.listenerMetrics.counters[gha_started_jobs_total].labels",
        "spec.proxy.https.url",
        "spec.runnerScaleSetLabels",
        "status.currentRunners",
    ]


def test_messages_do_not_echo_values() -> None:
    data = fixture("autoscalingrunnerset-dind.yaml")
    secret = "ghp_" + "A" * 36
    data["spec"]["githubConfigSecret"] = {"github_token": secret}
    data["spec"]["githubConfigUrl"] = secret
    problems = validate(load(data))
    assert {p.field for p in problems} == {"spec.githubConfigSecret", "spec.githubConfigUrl"}
    assert all(secret not in str(p) for p in problems)


def test_problem_reads_as_field_colon_message() -> None:
    assert str(Problem("spec.maxRunners", "bad")) == "spec.maxRunners: bad"
