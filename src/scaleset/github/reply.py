"""The fully read HTTP response handed back by the request engine (body already BOM-stripped)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

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
    headers: httpx.Headers = field(repr=False)
    body: bytes = field(repr=False)  # a success body can hold tokens or a JIT config

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
