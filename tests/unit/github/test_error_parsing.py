"""Error replies to typed exceptions, from bytes (GitHub's error bodies and transport errors)."""

from __future__ import annotations

import httpx2
import pytest

from scaleset.github.error_parsing import MAX_QUOTED_BODY, Service, error_from_reply
from scaleset.github.errors import (
    ActionsServiceError,
    GitHubApiError,
    JobStillRunning,
    MessageQueueTokenExpired,
    RunnerExists,
    RunnerNotFound,
    ScaleSetNotFound,
    SessionConflict,
    SessionNotFound,
)
from scaleset.github.reply import UTF8_BOM, Reply, strip_bom

URL = "https://fake/tenant/1/_apis/runtime/runnerscalesets/1/sessions?api-version=6.0-preview"


def reply(
    status: int, body: bytes, content_type: str = "application/json", **headers: str
) -> Reply:
    return Reply(
        method="POST",
        url=URL,
        status=status,
        reason={400: "Bad Request", 404: "Not Found", 409: "Conflict", 401: "Unauthorized"}.get(
            status, "Status"
        ),
        headers=httpx2.Headers({"Content-Type": content_type, **headers}),
        body=body,
    )


@pytest.mark.parametrize(
    ("type_name", "status", "expected"),
    [
        ("GitHub.DistributedTask.WebApi.AgentExistsException", 409, RunnerExists),
        ("GitHub.DistributedTask.WebApi.AgentNotFoundException", 404, RunnerNotFound),
        ("GitHub.DistributedTask.WebApi.JobStillRunningException", 400, JobStillRunning),
        ("JobStillRunningException", 409, JobStillRunning),
        (
            "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionConflictException",
            409,
            SessionConflict,
        ),
        (
            "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionExpiredException",
            400,
            SessionNotFound,
        ),
        ("RunnerScaleSetSessionNotFoundException", 404, SessionNotFound),
        ("GitHub.Actions.Runtime.WebApi.RunnerScaleSetNotFoundException", 404, ScaleSetNotFound),
    ],
)
def test_known_exception_names_map_to_classes(
    type_name: str, status: int, expected: type[ActionsServiceError]
) -> None:
    body = f'{{"typeName": "{type_name}", "message": "the message"}}'.encode()
    error = error_from_reply(reply(status, body, ActivityId="act-1"), Service.ACTIONS)
    assert type(error) is expected
    assert isinstance(error, ActionsServiceError)
    assert error.type_name == type_name
    assert error.message == "the message"
    assert error.status == status
    assert error.activity_id == "act-1"
    text = str(error)
    assert f'status="{status} ' in text
    assert "activity_id='act-1'" in text
    assert type_name in text
    assert "the message" in text


def test_409_alone_decides_nothing() -> None:
    conflict = error_from_reply(
        reply(409, b'{"typeName": "SomethingElseException", "message": "m"}'), Service.ACTIONS
    )
    assert type(conflict) is ActionsServiceError
    assert conflict.type_name == "SomethingElseException"


def test_text_plain_body_is_quoted_raw() -> None:
    error = error_from_reply(
        reply(400, b"bad request body", "text/plain; charset=utf-8"), Service.ACTIONS
    )
    assert type(error) is ActionsServiceError
    assert str(error).endswith("bad request body")
    assert error.type_name is None


@pytest.mark.parametrize("body", [b"", b"   "])
def test_empty_body_is_unknown_error(body: bytes) -> None:
    error = error_from_reply(
        reply(404, body), Service.ACTIONS, context="unexpected status code 404"
    )
    assert "404 Not Found" in str(error)
    assert "unknown error" in str(error)


def test_invalid_json_quotes_the_body() -> None:
    error = error_from_reply(reply(400, b"{not json"), Service.ACTIONS)
    assert "failed to unmarshal error response body" in str(error)
    assert "{not json" in str(error)


def test_json_that_is_not_an_object() -> None:
    error = error_from_reply(reply(400, b"[1,2]"), Service.ACTIONS)
    assert "not an object" in str(error)


def test_unknown_exception_wraps_type_and_message() -> None:
    error = error_from_reply(
        reply(400, b'{"typeName": "WeirdException", "message": "odd"}'), Service.ACTIONS
    )
    assert "WeirdException: odd" in str(error)


def test_message_queue_401_is_token_expired_with_raw_body() -> None:
    error = error_from_reply(reply(401, b'{"raw": true}'), Service.ACTIONS, message_queue=True)
    assert isinstance(error, MessageQueueTokenExpired)
    assert '{"raw": true}' in str(error)


def test_401_on_admin_call_is_not_token_expiry() -> None:
    error = error_from_reply(reply(401, b""), Service.ACTIONS)
    assert not isinstance(error, MessageQueueTokenExpired)


def test_github_api_error_uses_message_and_request_id() -> None:
    error = error_from_reply(
        reply(
            401,
            b'{"message": "Bad credentials", "documentation_url": "x"}',
            **{"X-GitHub-Request-Id": "gh-1"},
        ),
        Service.GITHUB_API,
        context="failed to get a runner registration token",
    )
    assert isinstance(error, GitHubApiError)
    assert error.github_request_id == "gh-1"
    assert "failed to get a runner registration token: Bad credentials" in str(error)
    assert "github_request_id='gh-1'" in str(error)


def test_huge_bodies_are_truncated() -> None:
    error = error_from_reply(
        reply(500, b"x" * (MAX_QUOTED_BODY * 3), "text/plain"), Service.ACTIONS
    )
    assert len(str(error)) < MAX_QUOTED_BODY + 500


@pytest.mark.parametrize(
    ("raw", "stripped"),
    [
        (UTF8_BOM + b'{"a":1}', b'{"a":1}'),
        (b'{"a":1}', b'{"a":1}'),
        (UTF8_BOM, b""),
        (b"", b""),
        (UTF8_BOM + UTF8_BOM + b"x", UTF8_BOM + b"x"),
    ],
)
def test_strip_bom(raw: bytes, stripped: bytes) -> None:
    assert strip_bom(raw) == stripped
