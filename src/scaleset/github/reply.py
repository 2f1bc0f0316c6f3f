"""The fully read HTTP response handed back by the request engine (body already BOM-stripped),
and the decoding of a success body into a model."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2
from pydantic import BaseModel, ValidationError

from scaleset.github.errors import UnexpectedResponse

_Model = TypeVar("_Model", bound=BaseModel)

UTF8_BOM = b"\xef\xbb\xbf"


def strip_bom(body: bytes) -> bytes:
    """Drop one leading UTF-8 byte order mark; the Actions service sometimes sends one."""
    return body[len(UTF8_BOM) :] if body.startswith(UTF8_BOM) else body


@dataclass(frozen=True)
class Reply:
    """One HTTP response: request identity, status, headers and the complete body."""

    method: str
    url: str
    status: int
    reason: str
    headers: httpx2.Headers = field(repr=False)
    body: bytes = field(repr=False)  # a success body can hold tokens or a JIT config
    sent_secrets: tuple[str, ...] = field(default=(), repr=False)
    """The credentials the request carried: masked wherever the body is quoted."""

    def json(self) -> Any:
        """Decode the body as JSON (raises ValueError; the message never quotes the body)."""
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    @property
    def activity_id(self) -> str | None:
        value: str | None = self.headers.get("ActivityId")
        return value

    @property
    def github_request_id(self) -> str | None:
        value: str | None = self.headers.get("X-GitHub-Request-Id")
        return value


def decode_reply(reply: Reply, model: type[_Model], what: str) -> _Model:
    """Decode a success body; on failure name the bad fields, never quote the body."""
    try:
        return model.model_validate_json(reply.body)
    except ValidationError as error:
        raise UnexpectedResponse(
            reply.method,
            reply.url,
            reply.status,
            reply.reason,
            f"failed to decode the {what}: {describe_validation_error(error)}",
            activity_id=reply.activity_id,
            github_request_id=reply.github_request_id,
        ) from None


def describe_validation_error(error: ValidationError) -> str:
    """Field locations and error kinds only (inputs may be secrets)."""
    parts = []
    for item in error.errors(include_input=False, include_url=False):
        location = ".".join(str(part) for part in item["loc"]) or "body"
        parts.append(f"{location} ({item['type']})")
    return ", ".join(parts)
