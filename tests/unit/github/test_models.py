"""Wire models: request bodies as Go sends them, decoding, secrets hidden (§2.4, §4.1)."""

from __future__ import annotations

import json
import uuid

import pytest
from pydantic import ValidationError
from tests.plugins.secret_guard import SecretRegistry

from scaleset.github.models import (
    JitRunnerConfig,
    Label,
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
