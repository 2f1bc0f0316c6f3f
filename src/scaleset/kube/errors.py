"""Every failure of a Kubernetes call, classified in one place.

Callers catch these types, never HTTP status codes: 409 alone means two different things
(``Conflict`` — someone changed the object, re-read and re-decide — versus ``AlreadyExists`` — the
name is taken, not a retry), and a 5xx without a ``Content-Type`` header makes lightkube raise a
bare ``KeyError``. ``classify_response`` reads the ``Status`` body when there is one and falls back
to the status code when there is not, so every response maps to exactly one type below.

Exception tree::

    KubeError
    ├── KubeConfigError            bad or missing kubeconfig, unreadable token file
    ├── KubeTransportError         no HTTP answer: connection refused/reset, TLS, protocol error
    │   └── KubeTimeout            connect/read/write/pool timeout (retryable)
    ├── KubeResponseError          a success status whose body is not the JSON object expected
    ├── ConflictRetriesExhausted   retry_on_conflict gave up (carries the last Conflict)
    └── ApiStatusError             the server answered >= 400 (code, reason, message, details)
        ├── BadRequest             400
        ├── Unauthorized           401
        ├── Forbidden              403 (RBAC or admission)
        ├── NotFound               404
        ├── MethodNotAllowed       405
        ├── Conflict               409 reason Conflict (or none): stale resourceVersion or failed
        │                          delete precondition -> re-read, re-decide
        ├── AlreadyExists          409 reason AlreadyExists: the name is taken -> not a retry
        ├── Gone                   410 (reason Expired or Gone): resourceVersion too old -> relist
        ├── UnsupportedMediaType   415 (e.g. strategic merge patch on a custom resource)
        ├── Invalid                422 (validation, immutable field, finalizer on a deleting object)
        ├── TooManyRequests        429 (retryable; honours Retry-After)
        └── ServerError            5xx and any other unexpected code (retryable)
            └── ServerTimeout      504, or reason Timeout / ServerTimeout

``is_retryable(error)`` says whether the same request may simply be sent again (transport errors,
timeouts, 429, 5xx). ``Conflict`` is deliberately not "retryable": the caller must read again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx2


class KubeError(Exception):
    """Base of every error raised by ``scaleset.kube``."""


class KubeConfigError(KubeError):
    """The client cannot be configured: kubeconfig missing/invalid, token file unreadable."""


class KubeTransportError(KubeError):
    """The request got no HTTP answer (connection refused or reset, TLS or protocol failure)."""


class KubeTimeout(KubeTransportError):
    """Connect, read, write or connection-pool timeout."""


class KubeResponseError(KubeError):
    """A success status whose body is not the JSON object we expected."""


class ApiStatusError(KubeError):
    """The API server answered with an error status.

    ``code`` is the HTTP status, ``reason`` the ``Status.reason`` (``""`` when the body had none),
    ``message`` the server's message, ``details`` the ``Status.details`` mapping.
    """

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{code} {reason or 'Unknown'}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.details: Mapping[str, Any] = details or {}
        self.retry_after = retry_after


class BadRequest(ApiStatusError):
    """400."""


class Unauthorized(ApiStatusError):
    """401: the credentials were rejected (an expired bound token, for instance)."""


class Forbidden(ApiStatusError):
    """403: RBAC denied the request, or an admission plugin refused it."""


class NotFound(ApiStatusError):
    """404: the object (or the namespace, or the resource type) does not exist."""


class MethodNotAllowed(ApiStatusError):
    """405."""


class Conflict(ApiStatusError):
    """409 Conflict: the object changed since it was read (or a delete precondition failed)."""


class AlreadyExists(ApiStatusError):
    """409 AlreadyExists: an object with that name exists. Not a retry."""


class Gone(ApiStatusError):
    """410: the requested resourceVersion is no longer in the server's history; relist."""


class UnsupportedMediaType(ApiStatusError):
    """415: the patch type is not supported for this resource."""


class Invalid(ApiStatusError):
    """422: the object failed validation."""


class TooManyRequests(ApiStatusError):
    """429: the server asks us to slow down (``retry_after`` seconds when it said so)."""


class ServerError(ApiStatusError):
    """5xx, or any status code we do not otherwise recognise."""


class ServerTimeout(ServerError):
    """504, or a Status with reason Timeout / ServerTimeout."""


class ConflictRetriesExhausted(KubeError):
    """``retry_on_conflict`` ran out of attempts; ``last`` is the final Conflict."""

    def __init__(self, operation: str, attempts: int, last: Conflict) -> None:
        super().__init__(f"{operation}: still conflicting after {attempts} attempts ({last})")
        self.operation = operation
        self.attempts = attempts
        self.last = last


_BY_CODE: dict[int, type[ApiStatusError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    410: Gone,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    504: ServerTimeout,
}


def classify_status(
    code: int, status: Mapping[str, Any] | None, *, retry_after: float | None = None
) -> ApiStatusError:
    """Map an HTTP code plus an optional decoded ``Status`` object to one exception type."""
    reason = ""
    message = ""
    details: Mapping[str, Any] = {}
    if status is not None:
        raw_reason = status.get("reason")
        raw_message = status.get("message")
        raw_details = status.get("details")
        reason = raw_reason if isinstance(raw_reason, str) else ""
        message = raw_message if isinstance(raw_message, str) else ""
        details = raw_details if isinstance(raw_details, Mapping) else {}
        status_code = status.get("code")
        if isinstance(status_code, int) and status_code >= 400 and code < 400:
            code = status_code  # a watch ERROR event carries its code only in the Status
    if not message:
        message = f"HTTP {code}"
    cls: type[ApiStatusError]
    if code == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif reason in ("Timeout", "ServerTimeout") and code >= 500:
        cls = ServerTimeout
    elif code in _BY_CODE:
        cls = _BY_CODE[code]
    else:
        cls = ServerError
    return cls(code, reason, message, details, retry_after=retry_after)


def classify_response(code: int, headers: Mapping[str, str], body: bytes) -> ApiStatusError:
    """Classify an error response; the body may be a Status, other JSON, text, or empty."""
    status: Mapping[str, Any] | None = None
    if body:
        try:
            decoded = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            decoded = None
        if isinstance(decoded, dict):
            status = decoded
        else:
            text = body[:200].decode("utf-8", "replace").strip()
            status = {"message": text} if text else None
    return classify_status(code, status, retry_after=_retry_after(headers))


def from_transport(error: httpx2.HTTPError) -> KubeError:
    """Classify an httpx2 exception raised while sending (no HTTP status available)."""
    if isinstance(error, httpx2.TimeoutException):
        return KubeTimeout(f"{type(error).__name__}: {error}")
    return KubeTransportError(f"{type(error).__name__}: {error}")


def is_retryable(error: BaseException) -> bool:
    """True when the same request may be sent again unchanged (after a back-off)."""
    return isinstance(error, KubeTransportError | TooManyRequests | ServerError)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after") or headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
