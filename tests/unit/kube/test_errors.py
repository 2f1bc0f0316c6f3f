"""One classification for every failure: by Status reason first, by code when there is none."""

from __future__ import annotations

import json

import httpx2
import pytest

from scaleset.kube import errors
from scaleset.kube.errors import classify_response, classify_status, from_transport, is_retryable


def status_body(code: int, reason: str, message: str = "m") -> bytes:
    return json.dumps(
        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
         "reason": reason, "message": message, "details": {"name": "x"}}
    ).encode()  # fmt: skip


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (409, "Conflict", errors.Conflict),
        (409, "AlreadyExists", errors.AlreadyExists),
        (409, "", errors.Conflict),
        (404, "NotFound", errors.NotFound),
        (410, "Expired", errors.Gone),
        (410, "Gone", errors.Gone),
        (403, "Forbidden", errors.Forbidden),
        (422, "Invalid", errors.Invalid),
        (415, "UnsupportedMediaType", errors.UnsupportedMediaType),
        (429, "TooManyRequests", errors.TooManyRequests),
        (500, "InternalError", errors.ServerError),
        (503, "ServiceUnavailable", errors.ServerError),
        (504, "Timeout", errors.ServerTimeout),
        (500, "ServerTimeout", errors.ServerTimeout),
        (401, "Unauthorized", errors.Unauthorized),
        (400, "BadRequest", errors.BadRequest),
        (418, "", errors.ServerError),
    ],
)
def test_status_bodies_classify_by_reason_and_code(
    code: int, reason: str, expected: type[errors.ApiStatusError]
) -> None:
    error = classify_response(code, {"Content-Type": "application/json"}, status_body(code, reason))
    assert type(error) is expected
    assert error.code == code
    assert error.reason == reason
    assert error.details == {"name": "x"}


@pytest.mark.parametrize(
    ("code", "body", "expected"),
    [
        (503, b"", errors.ServerError),
        (502, b"<html>bad gateway</html>", errors.ServerError),
        (404, b"404 page not found\n", errors.NotFound),
        (409, b"", errors.Conflict),
        (500, b"\xff\xfe not utf8", errors.ServerError),
    ],
)
def test_bodies_without_status_or_content_type_still_classify(
    code: int, body: bytes, expected: type[errors.ApiStatusError]
) -> None:
    error = classify_response(code, {}, body)  # no Content-Type at all
    assert type(error) is expected
    assert error.code == code


def test_retry_after_header_is_read() -> None:
    error = classify_response(429, {"retry-after": "7"}, b"")
    assert isinstance(error, errors.TooManyRequests)
    assert error.retry_after == 7.0


def test_watch_error_event_carries_its_code_in_the_status() -> None:
    error = classify_status(0, {"code": 410, "reason": "Expired", "message": "too old"})
    assert isinstance(error, errors.Gone)
    assert error.code == 410


def test_transport_errors_and_retryability() -> None:
    request = httpx2.Request("GET", "https://127.0.0.1/api")
    timeout = from_transport(httpx2.PoolTimeout("pool", request=request))
    refused = from_transport(httpx2.ConnectError("refused", request=request))
    assert isinstance(timeout, errors.KubeTimeout)
    assert isinstance(refused, errors.KubeTransportError)
    assert not isinstance(refused, errors.KubeTimeout)
    assert is_retryable(timeout)
    assert is_retryable(refused)
    assert is_retryable(classify_status(503, None))
    assert is_retryable(classify_status(429, None))
    assert not is_retryable(classify_status(409, {"reason": "Conflict"}))
    assert not is_retryable(classify_status(409, {"reason": "AlreadyExists"}))
    assert not is_retryable(classify_status(403, None))


def test_every_error_is_a_kube_error() -> None:
    for cls in (
        errors.KubeConfigError,
        errors.KubeTimeout,
        errors.KubeResponseError,
        errors.ConflictRetriesExhausted,
        errors.ServerTimeout,
        errors.AlreadyExists,
    ):
        assert issubclass(cls, errors.KubeError)
    assert not issubclass(errors.AlreadyExists, errors.Conflict)
    assert not issubclass(errors.Conflict, errors.AlreadyExists)
