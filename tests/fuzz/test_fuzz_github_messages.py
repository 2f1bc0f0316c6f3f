"""Fuzz target 3: long-poll message bodies from the Actions service.

A response body goes the way ``ActionsClient.get_message`` takes it: ``decode_reply`` into a
``RawMessage`` (malformed outer JSON -> ``UnexpectedResponse`` naming fields, never quoting the
body), then ``decode_message`` over the double-encoded job batch (bad entries are skipped and
counted, never raised), then the listener's ``undecodable_reason`` classification. Inputs:
malformed JSON, wrong types, nulls, huge batches, unknown types, double/triple-encoded bodies,
deep nesting, byte-order marks and invalid UTF-8. A token placed in the body never reaches an
error text (the autouse secret guard checks the logs).
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaleset.github.error_parsing import Service, error_from_reply
from scaleset.github.errors import ActionsServiceError, ResponseError, UnexpectedResponse
from scaleset.github.messages import RunnerScaleSetMessage, decode_message
from scaleset.github.models import JOB_MESSAGES_TYPE, RawMessage
from scaleset.github.reply import Reply, decode_reply
from scaleset.listener.loop import undecodable_reason
from tests.fuzz.strategies import fuzz_settings, json_values, mutated, tricky_text
from tests.plugins.secret_guard import register_secret

TOKEN = register_secret("ghs_fuzzMessageBodyToken0123456789abcdefgh")
EXAMPLES = 300  # per test
JOB_TYPES = ["JobAvailable", "JobAssigned", "JobStarted", "JobCompleted"]

JOB: dict[str, Any] = {
    "messageType": "JobCompleted",
    "runnerRequestId": 123,
    "repositoryName": "repo",
    "ownerName": "octo-org",
    "jobId": "a0b1c2",
    "jobWorkflowRef": "octo-org/repo/.github/workflows/ci.yml@refs/heads/main",
    "jobDisplayName": "build",
    "workflowRunId": 456,
    "eventName": "push",
    "requestLabels": ["self-hosted", "linux"],
    "queueTime": "2026-05-30T09:12:46.123Z",
    "scaleSetAssignTime": "0001-01-01T00:00:00Z",
    "runnerAssignTime": None,
    "finishTime": "2026-05-30T09:14:46Z",
    "result": "succeeded",
    "runnerId": 7,
    "runnerName": "arc-runner-set-abcde-runner-xyz12",
    "acquireJobUrl": "https://pipelines.actions.githubusercontent.com/acquire",
}
STATISTICS = {
    "totalAvailableJobs": 1,
    "totalAcquiredJobs": 0,
    "totalAssignedJobs": 3,
    "totalRunningJobs": 2,
    "totalRegisteredRunners": 4,
    "totalBusyRunners": 2,
    "totalIdleRunners": 2,
}


@st.composite
def job_entries(draw: st.DrawFn) -> Any:
    entry = draw(st.one_of(mutated(JOB), st.just(dict(JOB)), json_values))
    if isinstance(entry, dict) and draw(st.booleans()):
        entry["messageType"] = draw(st.one_of(st.sampled_from(JOB_TYPES), tricky_text))
    if isinstance(entry, dict) and draw(st.booleans()):
        entry[draw(st.sampled_from(sorted(JOB)))] = TOKEN
    return entry


@st.composite
def batches(draw: st.DrawFn) -> str | None:
    """The ``body`` string: a JSON array of job messages, or something that is not one."""
    shape = draw(
        st.sampled_from(
            ["plain", "plain", "double", "triple", "truncated", "object", "deep", "null", "any"]
        )
    )
    entries = draw(st.lists(job_entries(), max_size=6))
    if draw(st.integers(0, 9)) == 0:
        entries = entries * draw(st.integers(100, 2000))  # a huge batch
    body = json.dumps(entries)
    if shape == "double":
        return json.dumps(body)
    if shape == "triple":
        return json.dumps(json.dumps(body))
    if shape == "truncated":
        return body[: draw(st.integers(0, max(0, len(body) - 1)))]
    if shape == "object":
        return json.dumps({"value": entries})
    if shape == "deep":
        depth = draw(st.sampled_from([10, 999, 1000, 5000, 100_000]))
        return "[" * depth + "]" * depth
    if shape == "null":
        return None
    if shape == "any":
        return draw(tricky_text)
    return body


@st.composite
def response_bodies(draw: st.DrawFn) -> bytes:
    """The HTTP body of a 200 answer to the long poll."""
    message: dict[str, Any] = {
        "messageId": draw(st.one_of(st.integers(0, 2**63 - 1), st.just(1))),
        "messageType": draw(st.sampled_from([JOB_MESSAGES_TYPE, JOB_MESSAGES_TYPE, "Other"])),
        "body": draw(batches()),
        "statistics": STATISTICS,
    }
    if draw(st.booleans()):
        message = draw(mutated(message, max_mutations=2))
    text = json.dumps(message)
    encoding = draw(st.sampled_from(["json", "json", "bom", "double", "truncated", "garbage"]))
    if encoding == "bom":
        return b"\xef\xbb\xbf" + text.encode()
    if encoding == "double":
        return json.dumps(text).encode()
    if encoding == "truncated":
        return text.encode()[: draw(st.integers(0, len(text)))]
    if encoding == "garbage":
        return draw(st.binary(max_size=64)) + text.encode()
    return text.encode()


def _reply(body: bytes) -> Reply:
    return Reply(
        "GET",
        "https://broker.actions.githubusercontent.com/message?sessionId=1",
        200,
        "OK",
        httpx2.Headers(),
        body,
    )


def _check(body: bytes) -> RunnerScaleSetMessage | None:
    """Decode as ``get_message`` does and classify as the listener does."""
    try:
        raw = decode_reply(_reply(body), RawMessage, "message")
    except UnexpectedResponse as error:
        text = f"{error} {error!r}"
        assert "failed to decode the message" in text
        assert TOKEN not in text
        return None
    message = decode_message(raw)
    assert message.message_id == raw.message_id
    assert message.skipped >= 0
    reason = undecodable_reason(message)
    assert reason is None or (isinstance(reason, str) and len(reason) < 200)
    if raw.message_type == JOB_MESSAGES_TYPE and message.jobs:
        assert reason is None
    return message


@fuzz_settings(EXAMPLES)
@given(body=response_bodies())
def test_a_message_body_decodes_or_is_a_typed_error(body: bytes) -> None:
    _check(body)


@fuzz_settings(EXAMPLES)
@given(body=st.one_of(st.binary(max_size=300), tricky_text.map(str.encode)))
def test_any_bytes_decode_or_are_a_typed_error(body: bytes) -> None:
    _check(body)


@pytest.mark.parametrize("shape", ["double", "triple"])
def test_a_double_encoded_batch_is_undecodable_not_dropped(shape: str) -> None:
    body = json.dumps([JOB])
    for _ in range(1 if shape == "double" else 2):
        body = json.dumps(body)
    message = _check(
        json.dumps({"messageId": 5, "messageType": JOB_MESSAGES_TYPE, "body": body}).encode()
    )
    assert message is not None
    assert undecodable_reason(message) is not None


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_a_deeply_nested_batch_is_undecodable_not_a_crash(depth: int) -> None:
    """Found by fuzzing (decode_job_batch directly): a body of ``"[" * 1000 + "]" * 1000``
    made ``json.loads`` raise RecursionError out of ``decode_message``, i.e. out of
    ``ActionsClient.get_message`` into the listener's loop."""
    body = "[" * depth + "]" * depth
    raw = {"messageId": 5, "messageType": JOB_MESSAGES_TYPE, "body": body}
    message = _check(json.dumps(raw).encode())
    assert message is not None
    assert (message.jobs, message.skipped) == ((), 1)
    assert undecodable_reason(message) == "no decodable job in the batch (1 entries skipped)"


# --- error bodies (the other side of every call, the long poll included) ----------------------

SENT = register_secret("ghs_fuzzSentAuthorizationToken0123456789abc")


@fuzz_settings(EXAMPLES)
@given(
    status=st.sampled_from([400, 401, 403, 404, 409, 422, 429, 500, 502, 503]),
    service=st.sampled_from(list(Service)),
    content_type=st.sampled_from(["application/json", "text/plain", "text/html", ""]),
    body=st.one_of(
        st.binary(max_size=200),
        json_values.map(lambda value: json.dumps(value).encode()),
        st.fixed_dictionaries(
            {},
            optional={
                "typeName": st.one_of(tricky_text, st.sampled_from(["AgentExistsException"])),
                "message": st.one_of(tricky_text, st.just(f"token {SENT} refused"), json_values),
            },
        ).map(lambda value: json.dumps(value).encode()),
        st.sampled_from([10, 5000, 100_000]).map(lambda d: ("[" * d + "]" * d).encode()),
        st.just(f"<html>{SENT}</html>".encode()),
    ),
    message_queue=st.booleans(),
)
def test_an_error_body_becomes_a_typed_error(
    status: int, service: Service, content_type: str, body: bytes, message_queue: bool
) -> None:
    reply = Reply(
        "POST",
        "https://pipelines.actions.githubusercontent.com/x/_apis/runtime/runnerscalesets",
        status,
        "Status",
        httpx2.Headers({"Content-Type": content_type} if content_type else {}),
        body,
        sent_secrets=(SENT,),
    )
    error = error_from_reply(reply, service, message_queue=message_queue)
    assert isinstance(error, ResponseError)
    assert error.status == status
    assert SENT not in f"{error} {error!r}"


def test_a_deeply_nested_error_body_is_a_typed_error() -> None:
    """Found with the fuzz above: an error body of ``"[" * 5000 + "]" * 5000`` made
    ``json.loads`` raise RecursionError out of ``error_from_reply`` instead of the call's
    ``ResponseError``."""
    body = ("[" * 100_000 + "]" * 100_000).encode()
    headers = httpx2.Headers({"Content-Type": "application/json"})
    reply = Reply("GET", "https://api.github.com/x", 400, "Bad Request", headers, body)
    error = error_from_reply(reply, Service.ACTIONS)
    assert isinstance(error, ActionsServiceError)
    assert "failed to unmarshal error response body" in str(error)
