"""Wire models: request bodies as Go sends them, decoding, secrets hidden (§2.4, §4.1)."""

from __future__ import annotations

import json
import uuid

import pytest
from pydantic import AliasChoices, ValidationError
from tests.plugins.secret_guard import SecretRegistry

from scaleset.github import models
from scaleset.github.models import (
    GitHubRunnerPage,
    JitRunnerConfig,
    JobCompleted,
    JobStarted,
    Label,
    RawMessage,
    RegistrationToken,
    RunnerReference,
    RunnerScaleSet,
    RunnerScaleSetSession,
    RunnerSetting,
)


def test_create_body_omits_empty_fields_but_always_has_runner_setting() -> None:
    body = RunnerScaleSet(
        name="arc",
        runner_group_id=1,
        labels=(Label(name="arc", type="System"),),
        runner_setting=RunnerSetting(disable_update=True),
    ).to_request_body()
    assert body == {
        "name": "arc",
        "runnerGroupId": 1,
        "labels": [{"name": "arc", "type": "System"}],
        "RunnerSetting": {"disableUpdate": True},
    }


def test_partial_update_body() -> None:
    assert RunnerScaleSet(runner_group_id=5).to_request_body() == {
        "runnerGroupId": 5,
        "RunnerSetting": {},
    }


def test_scale_set_decodes_runner_setting_in_either_case() -> None:
    upper = RunnerScaleSet.model_validate_json(
        '{"id": 1, "RunnerSetting": {"disableUpdate": true}}'
    )
    lower = RunnerScaleSet.model_validate_json(
        '{"id": 1, "runnerSetting": {"disableUpdate": true}}'
    )
    assert upper.runner_setting.disable_update
    assert lower.runner_setting.disable_update
    zero = RunnerScaleSet.model_validate_json('{"id": 1, "createdOn": "0001-01-01T00:00:00Z"}')
    assert zero.created_on is None


def session_json(token: str) -> str:
    return json.dumps(
        {
            "sessionId": str(uuid.uuid4()),
            "ownerName": "listener-pod",
            "runnerScaleSet": {"id": 7, "name": "arc"},
            "messageQueueUrl": "https://fake/mq/7",
            "messageQueueAccessToken": token,
            "statistics": {"totalAssignedJobs": 1},
            "somethingNew": True,
        }
    )


def test_session_decodes_and_hides_its_token(secret_guard: SecretRegistry) -> None:
    token = secret_guard.register("mq-token-secret-1")
    session = RunnerScaleSetSession.model_validate_json(session_json(token))
    assert session.runner_scale_set is not None
    assert session.runner_scale_set.id == 7
    assert session.statistics is not None
    assert session.statistics.total_assigned_jobs == 1
    assert session.message_queue_access_token.get_secret_value() == token
    secret_guard.assert_clean(session, session.model_dump(), session.model_dump_json())


def test_validation_errors_do_not_show_inputs(secret_guard: SecretRegistry) -> None:
    token = secret_guard.register("mq-token-secret-2")
    broken = json.loads(session_json(token))
    broken["sessionId"] = "not-a-uuid"
    with pytest.raises(ValidationError) as caught:
        RunnerScaleSetSession.model_validate(broken)
    secret_guard.assert_clean(caught.value)
    jit = secret_guard.register("jit-config-secret-base64")
    with pytest.raises(ValidationError) as caught_jit:
        JitRunnerConfig.model_validate({"runner": {"id": "x"}, "encodedJITConfig": jit})
    secret_guard.assert_clean(caught_jit.value)


def test_jit_config_wire_name() -> None:
    config = JitRunnerConfig.model_validate_json(
        '{"runner": {"id": 5, "name": "r", "runnerScaleSetId": 7}, "encodedJITConfig": "abc"}'
    )
    assert config.runner.runner_scale_set_id == 7
    assert config.encoded_jit_config.get_secret_value() == "abc"


# --- JSON null reads as Go reads it: the field's zero value ------------------------------

REQUIRED_SAMPLES: dict[str, object] = {
    "id": 7,
    "runner": {"id": 3, "name": "r"},
    "encoded_jit_config": "jit-config-value",
    "session_id": str(uuid.UUID(int=1)),
    "message_queue_url": "https://mq.example/q",
    "message_queue_access_token": "queue-token-value",
    "message_id": 9,
    "token": "token-value",
    "url": "https://actions.example/",
    "total_count": 0,
}
WIRE_MODELS = sorted(
    (
        model
        for model in vars(models).values()
        if isinstance(model, type)
        and issubclass(model, models.WireModel)
        and model not in (models.WireModel, models.ActionsModel, models.GitHubModel)
    ),
    key=lambda model: model.__name__,
)


def wire_key(model: type[models.WireModel], name: str) -> str:
    info = model.model_fields[name]
    if isinstance(info.validation_alias, AliasChoices):
        first = info.validation_alias.choices[0]
        assert isinstance(first, str)
        return first
    return info.alias or name


@pytest.mark.parametrize("model", WIRE_MODELS, ids=lambda model: model.__name__)
def test_null_is_the_zero_value_of_every_field(model: type[models.WireModel]) -> None:
    """Every member null (the required ones aside): the decode succeeds and each field has
    its zero value, as Go's encoding/json leaves it."""
    body: dict[str, object] = {}
    for name, info in model.model_fields.items():
        value = REQUIRED_SAMPLES[name] if info.is_required() else None
        body[wire_key(model, name)] = value
    decoded = model.model_validate_json(json.dumps(body))
    for name, info in model.model_fields.items():
        if not info.is_required():
            assert getattr(decoded, name) == info.get_default(call_default_factory=True), name


def test_the_issue_cases_decode() -> None:
    scale_set = RunnerScaleSet.model_validate_json(
        '{"id": 1, "name": "arc", "runnerGroupId": null, "runnerGroupName": null,'
        ' "labels": null, "RunnerSetting": null, "createdOn": null,'
        ' "statistics": {"totalAssignedJobs": null, "totalIdleRunners": 2}}'
    )
    assert (scale_set.runner_group_id, scale_set.runner_group_name, scale_set.labels) == (
        0,
        "",
        (),
    )
    assert scale_set.statistics is not None
    assert (scale_set.statistics.total_assigned_jobs, scale_set.statistics.total_idle_runners) == (
        0,
        2,
    )
    completed = JobCompleted.model_validate(
        {"messageType": "JobCompleted", "runnerRequestId": 4, "runnerName": None, "result": None}
    )
    assert (completed.runner_request_id, completed.runner_name, completed.result) == (4, "", "")


def test_null_array_elements_are_zero_values() -> None:
    started = JobStarted.model_validate(
        {"messageType": "JobStarted", "requestLabels": ["linux", None]}
    )
    assert started.request_labels == ("linux", "")
    scale_set = RunnerScaleSet.model_validate({"labels": [None, {"name": "gpu", "type": None}]})
    assert scale_set.labels == (Label(), Label(name="gpu"))
    page = GitHubRunnerPage.model_validate_json(
        '{"total_count": 1, "runners": [{"id": 5, "name": null, "labels": [null]}]}'
    )
    assert page.runners[0].name == ""
    assert page.runners[0].labels[0].name == ""


@pytest.mark.parametrize(
    ("model", "body", "field"),
    [
        (RawMessage, '{"messageId": null}', "messageId"),
        (RunnerReference, '{"id": null, "name": "r"}', "id"),
        (RegistrationToken, '{"token": null}', "token"),
    ],
)
def test_a_null_where_we_must_act_fails_naming_the_field(
    model: type[models.WireModel], body: str, field: str
) -> None:
    """Ids we act on, tokens and the message id to acknowledge have no usable zero value."""
    with pytest.raises(ValidationError) as caught:
        model.model_validate_json(body)
    assert caught.value.errors()[0]["type"] == "missing"
    assert caught.value.errors()[0]["loc"] == (field,)
