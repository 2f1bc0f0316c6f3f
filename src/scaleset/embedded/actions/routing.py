"""A small method + path router for the fake, with the request/reply types its handlers use.

aiohttp's own router cannot collapse duplicate slashes without redirecting, and the spec requires
``/tenant/1//_apis/...`` to work as-is (§2, note on #16), so the fake mounts one catch-all route
and resolves paths here, after normalising them. A trailing slash is optional on every route.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from scaleset.embedded.actions.faults import Surface

_DUPLICATE_SLASHES = re.compile(r"/{2,}")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def normalise_path(path: str) -> str:
    """Collapse runs of ``/`` into one."""
    return _DUPLICATE_SLASHES.sub("/", path) or "/"


class BadRequestBody(ValueError):
    """The request body is not the JSON the endpoint needs."""


@dataclass(frozen=True)
class Call:
    """One request as a handler sees it."""

    request: web.Request
    surface: Surface
    path: str
    params: Mapping[str, str]

    @property
    def query(self) -> Mapping[str, str]:
        """The query parameters (the first value of a repeated one)."""
        return self.request.query

    def header(self, name: str) -> str | None:
        return self.request.headers.get(name)

    def param_int(self, name: str) -> int:
        return int(self.params[name])

    async def json(self, *, allow_empty: bool = False) -> Any:
        """The JSON body (``None`` if empty and allowed); a leading UTF-8 BOM is tolerated."""
        raw = await self.request.read()
        text = raw.decode("utf-8-sig", errors="replace").strip()
        if not text:
            if allow_empty:
                return None
            raise BadRequestBody("a JSON body is required")
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise BadRequestBody(f"the body is not valid JSON ({error.msg})") from None


@dataclass
class Reply:
    """What a handler answers; the dispatcher turns it into bytes (BOM, headers, log)."""

    status: int
    body: Any = None
    """A JSON value to send, or ``None`` for no JSON body."""
    text: str | None = None
    """A raw body (used when ``body`` is ``None``), sent as ``content_type``."""
    content_type: str | None = None
    """The content type of ``text``; ``None`` = ``text/plain``."""
    headers: dict[str, str] = field(default_factory=dict)
    disconnect: bool = False
    """Cut the connection instead of answering (dropped-poll and dropped-response faults)."""

    @classmethod
    def of(cls, status: int, body: Any) -> Reply:
        return cls(status, body=body)

    @classmethod
    def empty(cls, status: int) -> Reply:
        return cls(status)


Handler = Callable[[Call], Awaitable[Reply]]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    surface: Surface


@dataclass(frozen=True)
class Resolved:
    handler: Handler
    surface: Surface
    params: dict[str, str]


class Router:
    """Routes ``(method, normalised path)`` to a handler; patterns use ``{name}`` segments."""

    def __init__(self) -> None:
        self._routes: list[Route] = []

    def add(self, method: str, pattern: str, handler: Handler, surface: Surface) -> None:
        regex = _PLACEHOLDER.sub(lambda m: f"(?P<{m.group(1)}>[^/]+)", pattern.rstrip("/"))
        self._routes.append(Route(method.upper(), re.compile(f"^{regex}/?$"), handler, surface))

    def resolve(self, method: str, path: str) -> Resolved | Surface | None:
        """The matching route; the surface of a path that exists for another method (405); or
        ``None`` when no route has the path."""
        other_method: Surface | None = None
        for route in self._routes:
            match = route.pattern.match(path)
            if match is None:
                continue
            if route.method == method.upper():
                return Resolved(route.handler, route.surface, match.groupdict())
            other_method = route.surface
        return other_method


def surface_of_path(path: str) -> Surface:
    """Which surface an unroutable path would have belonged to (for the shape of its 404)."""
    if path.startswith("/_fake"):
        return Surface.CONTROL
    if path.startswith("/api/v3"):
        return Surface.GITHUB
    if path.startswith("/mq/"):
        return Surface.MESSAGE_QUEUE
    if path.startswith("/broker"):
        return Surface.BROKER
    return Surface.ACTIONS
