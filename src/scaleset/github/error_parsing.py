"""Turn a non-success HTTP reply into the right typed exception (pure; no I/O).

Parsing order: empty body -> "unknown error"; a message-queue 401 -> the
token-expired error with the raw body; `text/plain` -> the raw text; otherwise JSON
`{"typeName", "message"}` (Actions) or `{"message"}` (GitHub REST); invalid JSON -> an error
that quotes the raw body. Known Actions exception names map to their own classes.
"""

from __future__ import annotations

import enum
import json

from scaleset.github.errors import (
    ACTIONS_EXCEPTION_TYPES,
    ActionsServiceError,
    GitHubApiError,
    MessageQueueTokenExpired,
    ResponseError,
)
from scaleset.github.reply import Reply
from scaleset.logs import redact_text

MAX_QUOTED_BODY = 4096


class Service(enum.Enum):
    """Which server answered: the GitHub REST API or the Actions service."""

    GITHUB_API = "github-api"
    ACTIONS = "actions"


def quoted_body(reply: Reply) -> str:
    """The error body as text: the request's credentials and anything credential-shaped masked
    (a proxy or server may echo them), truncated so a huge HTML page cannot flood a log line."""
    text = redact_text(reply.text, reply.sent_secrets)
    if len(text) > MAX_QUOTED_BODY:
        return text[:MAX_QUOTED_BODY] + f"... ({len(text)} characters)"
    return text


def error_from_reply(
    reply: Reply, service: Service, *, message_queue: bool = False, context: str = ""
) -> ResponseError:
    """Build the exception for `reply`, which did not have the expected success status.

    `message_queue` marks calls authenticated with the message-queue token, where 401 means
    the token expired. `context` is prepended to the detail (e.g. "unexpected status code").
    """
    prefix = f"{context}: " if context else ""
    body = quoted_body(reply)

    def build(
        error_class: type[ResponseError], detail: str, *, quote_body: bool = True
    ) -> ResponseError:
        return error_class(
            reply.method,
            reply.url,
            reply.status,
            reply.reason,
            prefix + detail,
            activity_id=reply.activity_id,
            github_request_id=reply.github_request_id,
            body=body if quote_body else "",
        )

    if message_queue and reply.status == 401:
        return build(
            MessageQueueTokenExpired, "message queue token expired" + (f": {body}" if body else "")
        )

    plain_class: type[ResponseError] = (
        ActionsServiceError if service is Service.ACTIONS else GitHubApiError
    )
    if not reply.body.strip():
        return build(plain_class, "unknown error", quote_body=False)

    if "text/plain" in reply.headers.get("Content-Type", ""):
        return build(plain_class, body)

    try:
        decoded = json.loads(reply.body)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        return build(plain_class, f"failed to unmarshal error response body: {body!r}")
    if not isinstance(decoded, dict):
        return build(plain_class, f"error response body is not an object: {body!r}")

    message = decoded.get("message")
    message_text = redact_text(message, reply.sent_secrets) if isinstance(message, str) else None
    if service is Service.GITHUB_API:
        return build(GitHubApiError, message_text if message_text is not None else body)

    type_name_value = decoded.get("typeName")
    type_name = type_name_value if isinstance(type_name_value, str) else None
    detail = prefix + (type_name or "unknown exception")
    if message_text:
        detail += f": {message_text}"
    return actions_error_class(type_name)(
        reply.method,
        reply.url,
        reply.status,
        reply.reason,
        detail,
        type_name=type_name,
        message=message_text,
        activity_id=reply.activity_id,
        github_request_id=reply.github_request_id,
        body=body,
    )


def actions_error_class(type_name: str | None) -> type[ActionsServiceError]:
    """The exception class for an Actions `typeName` (substring match, as the Go clients do)."""
    if type_name:
        for marker, error_class in ACTIONS_EXCEPTION_TYPES:
            if marker in type_name:
                return error_class
    return ActionsServiceError
