"""Fault injection for the fake: error bursts, 429/503 with Retry-After, 403 secondary rate limits,
injected answers (any status with a raw body and headers, 2xx included), a token-bucket request
limit (GitHub's JIT-config ceiling: over it, the secondary-rate-limit 403), latency, late answers
(handled, then held), dropped polls, lost responses (the request is handled, then the connection
is cut), nulls in answers and a UTF-8 byte-order mark on bodies.

Faults live at the HTTP seam (the dispatcher asks this module before it routes a request), so the
state machine never knows about them. A rule matches by surface, method and path substring and
fires ``times`` times (``None`` = until removed). The stale-statistics fault lives in the state
machine (``ActionsService.freeze_statistics``) because it is about what state is reported.
"""

from __future__ import annotations

import enum
import itertools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


class Surface(enum.StrEnum):
    """Which part of the fake a request is for."""

    GITHUB = "github"
    """GitHub REST under ``/api/v3``."""
    ACTIONS = "actions"
    """Actions-service admin endpoints under ``/tenant/{id}/_apis``."""
    MESSAGE_QUEUE = "mq"
    """Message-queue endpoints (``messageQueueUrl``)."""
    BROKER = "broker"
    """Runner-side endpoints (assumed protocol)."""
    CONTROL = "control"
    """The fake's own control API under ``/_fake`` (never faulted)."""


class DropMode(enum.StrEnum):
    EMPTY = "empty"
    """Answer the poll with 202 at once even if a message is waiting."""
    DISCONNECT = "disconnect"
    """Form the message (as the service would) but cut the connection before answering."""


@dataclass(frozen=True)
class RequestMatch:
    """Which requests a rule applies to; unset fields match anything."""

    surface: Surface | None = None
    method: str | None = None
    path_contains: str | None = None

    def matches(self, surface: Surface, method: str, path: str) -> bool:
        if surface is Surface.CONTROL:
            return False
        if self.surface is not None and self.surface is not surface:
            return False
        if self.method is not None and self.method.upper() != method.upper():
            return False
        return self.path_contains is None or self.path_contains in path


class FaultKind(enum.StrEnum):
    STATUS = "status"
    LATENCY = "latency"
    DROP_POLL = "drop_poll"
    DROP_RESPONSE = "drop_response"
    LATE_ANSWER = "late_answer"
    NULLS = "nulls"
    THROTTLE = "throttle"


@dataclass
class FaultRule:
    id: int
    kind: FaultKind
    match: RequestMatch
    remaining: int | None
    status: int = 500
    retry_after: str | None = None
    body: str = ""
    content_type: str | None = None
    """Content type of an injected answer's body; ``None`` = text/plain."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra headers of an injected answer (e.g. ``x-ratelimit-remaining``)."""
    delay_seconds: float = 0.0
    drop_mode: DropMode = DropMode.EMPTY
    null_fields: frozenset[str] = frozenset()
    """JSON members sent as ``null`` by a nulls rule."""
    rate: float = 0.0
    """Tokens per second of a throttle rule (its bucket holds ``burst``)."""
    burst: int = 1
    tokens: float = 0.0
    refilled_at: float | None = None
    hits: int = 0

    def _fire(self) -> None:
        self.hits += 1
        if self.remaining is not None:
            self.remaining -= 1

    @property
    def spent(self) -> bool:
        return self.remaining is not None and self.remaining <= 0


@dataclass
class FaultInjector:
    """The active fault rules of one fake."""

    rules: list[FaultRule] = field(default_factory=list)
    bom_surfaces: set[Surface] = field(default_factory=set)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def _add(self, kind: FaultKind, match: RequestMatch, times: int | None, **kw: object) -> int:
        if times is not None and times < 1:
            raise ValueError("a fault must fire at least once (times >= 1, or None for always)")
        rule = FaultRule(id=next(self._ids), kind=kind, match=match, remaining=times)
        for key, value in kw.items():
            setattr(rule, key, value)
        self.rules.append(rule)
        return rule.id

    def fail_next(
        self,
        times: int | None = 1,
        status: int = 500,
        *,
        retry_after: str | None = None,
        body: str = "",
        content_type: str | None = None,
        headers: dict[str, str] | None = None,
        surface: Surface | None = None,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> int:
        """Answer the next ``times`` matching requests with ``status`` and ``body`` instead of
        handling them (no state changes).

        A 4xx/5xx without a body gets the text ``injected fault: status N``; a 2xx sends
        ``body`` as given (empty = no body) — e.g. ``200`` with a body where the protocol wants
        ``204``. ``content_type`` labels the raw body (default ``text/plain``); ``headers`` are
        added to the answer.
        """
        if not 200 <= status <= 599:
            raise ValueError("an injected answer needs a status from 200 to 599")
        if content_type is not None and not body:
            raise ValueError("a content type needs a body")
        if not body and status >= 400:
            body = f"injected fault: status {status}"
        return self._add(
            FaultKind.STATUS,
            RequestMatch(surface, method, path_contains),
            times,
            status=status,
            retry_after=retry_after,
            body=body,
            content_type=content_type,
            headers=dict(headers or {}),
        )

    def secondary_rate_limit(
        self,
        times: int | None = 1,
        retry_after_seconds: int = 60,
        *,
        surface: Surface | None = Surface.GITHUB,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> int:
        """GitHub's secondary rate limit: 403 with ``Retry-After`` and its JSON message."""
        return self.fail_next(
            times,
            403,
            retry_after=str(retry_after_seconds),
            body='{"message": "You have exceeded a secondary rate limit. Please wait a few '
            'minutes before you try again.", "documentation_url": '
            '"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"}',
            content_type="application/json; charset=utf-8",
            surface=surface,
            method=method,
            path_contains=path_contains,
        )

    def rate_limit(
        self,
        times: int | None = 1,
        retry_after_seconds: int = 1,
        *,
        surface: Surface | None = None,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> int:
        """429 with ``Retry-After: <seconds>``."""
        return self.fail_next(
            times,
            429,
            retry_after=str(retry_after_seconds),
            surface=surface,
            method=method,
            path_contains=path_contains,
        )

    def unavailable(
        self,
        times: int | None = 1,
        retry_after_seconds: int | None = None,
        *,
        surface: Surface | None = None,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> int:
        """503, with ``Retry-After`` when ``retry_after_seconds`` is given."""
        return self.fail_next(
            times,
            503,
            retry_after=None if retry_after_seconds is None else str(retry_after_seconds),
            surface=surface,
            method=method,
            path_contains=path_contains,
        )

    def throttle(
        self,
        rate_per_second: float,
        burst: int = 1,
        *,
        surface: Surface | None = None,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> int:
        """A token bucket over matching requests (``burst`` tokens, refilled at
        ``rate_per_second``): a request that finds it empty is answered like GitHub's secondary
        rate limit — 403, the JSON message, ``Retry-After`` = whole seconds until a token is
        back — and not handled. Until removed; ``hits`` counts the refused requests."""
        if rate_per_second <= 0 or burst < 1:
            raise ValueError("a throttle needs rate_per_second > 0 and burst >= 1")
        return self._add(
            FaultKind.THROTTLE,
            RequestMatch(surface, method, path_contains),
            None,
            status=403,
            body=_SECONDARY_LIMIT_BODY,
            content_type="application/json; charset=utf-8",
            rate=rate_per_second,
            burst=burst,
            tokens=float(burst),
        )

    def add_latency(
        self,
        seconds: float,
        times: int | None = None,
        *,
        surface: Surface | None = None,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> int:
        """Delay matching requests by ``seconds`` of real time before handling them."""
        if seconds < 0:
            raise ValueError("latency cannot be negative")
        return self._add(
            FaultKind.LATENCY,
            RequestMatch(surface, method, path_contains),
            times,
            delay_seconds=seconds,
        )

    def drop_polls(self, times: int | None = 1, mode: DropMode = DropMode.EMPTY) -> int:
        """Drop the next ``times`` message polls (see ``DropMode``)."""
        return self._add(
            FaultKind.DROP_POLL,
            RequestMatch(Surface.MESSAGE_QUEUE, "GET"),
            times,
            drop_mode=DropMode(mode),
        )

    def drop_responses(
        self,
        times: int | None = 1,
        *,
        surface: Surface | None = None,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> int:
        """Handle the next ``times`` matching requests fully (body read, state changes applied,
        answer formed), then cut the connection without sending the answer: "processed but the
        response was lost", which a client must not mistake for "never processed"."""
        return self._add(
            FaultKind.DROP_RESPONSE, RequestMatch(surface, method, path_contains), times
        )

    def delay_answers(
        self,
        seconds: float,
        times: int | None = 1,
        *,
        surface: Surface | None = None,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> int:
        """Handle the next ``times`` matching requests fully, then hold the answer ``seconds``
        of real time before sending it: a client whose read timeout is shorter sees a timeout
        for a request that was processed (unlike ``add_latency``, which delays before)."""
        if seconds < 0:
            raise ValueError("a delay cannot be negative")
        return self._add(
            FaultKind.LATE_ANSWER,
            RequestMatch(surface, method, path_contains),
            times,
            delay_seconds=seconds,
        )

    def send_nulls(
        self,
        fields: Iterable[str],
        times: int | None = None,
        *,
        surface: Surface | None = None,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> int:
        """Send ``null`` for the named JSON members (wire names, e.g. ``runnerName``,
        ``runnerGroupName``, ``totalAssignedJobs``) wherever they occur in matching answers,
        inside a message's double-encoded job list too — as a Go or .NET service may."""
        names = frozenset(fields)
        if not names:
            raise ValueError("name at least one field to send as null")
        return self._add(
            FaultKind.NULLS, RequestMatch(surface, method, path_contains), times, null_fields=names
        )

    def set_bom(self, enabled: bool = True, surfaces: set[Surface] | None = None) -> None:
        """Prefix JSON bodies with a UTF-8 BOM on the given surfaces (default: all)."""
        chosen = surfaces or {s for s in Surface if s is not Surface.CONTROL}
        if enabled:
            self.bom_surfaces |= chosen
        else:
            self.bom_surfaces -= chosen

    def remove(self, rule_id: int) -> None:
        self.rules = [r for r in self.rules if r.id != rule_id]

    def clear(self) -> None:
        self.rules.clear()
        self.bom_surfaces.clear()

    # --------------------------------------------------------------- used by the dispatcher

    def _take(self, kind: FaultKind, surface: Surface, method: str, path: str) -> FaultRule | None:
        for rule in self.rules:
            if rule.kind is kind and not rule.spent and rule.match.matches(surface, method, path):
                rule._fire()
                return rule
        return None

    def take_status(self, surface: Surface, method: str, path: str) -> FaultRule | None:
        return self._take(FaultKind.STATUS, surface, method, path)

    def take_throttled(
        self, surface: Surface, method: str, path: str, now: float
    ) -> tuple[FaultRule, str] | None:
        """The throttle rule refusing this request at monotonic time ``now`` and its
        ``Retry-After`` value, or ``None`` when every matching bucket had a token (taken)."""
        for rule in self.rules:
            if rule.kind is not FaultKind.THROTTLE or not rule.match.matches(surface, method, path):
                continue
            elapsed = 0.0 if rule.refilled_at is None else max(0.0, now - rule.refilled_at)
            rule.tokens = min(float(rule.burst), rule.tokens + elapsed * rule.rate)
            rule.refilled_at = now
            if rule.tokens >= 1.0:
                rule.tokens -= 1.0
                continue
            rule.hits += 1
            return rule, str(max(1, math.ceil((1.0 - rule.tokens) / rule.rate)))
        return None

    def take_latency(self, surface: Surface, method: str, path: str) -> float:
        rule = self._take(FaultKind.LATENCY, surface, method, path)
        return 0.0 if rule is None else rule.delay_seconds

    def take_null_fields(self, surface: Surface, method: str, path: str) -> frozenset[str]:
        rule = self._take(FaultKind.NULLS, surface, method, path)
        return frozenset() if rule is None else rule.null_fields

    def take_answer_delay(self, surface: Surface, method: str, path: str) -> float:
        rule = self._take(FaultKind.LATE_ANSWER, surface, method, path)
        return 0.0 if rule is None else rule.delay_seconds

    def take_drop_response(self, surface: Surface, method: str, path: str) -> bool:
        return self._take(FaultKind.DROP_RESPONSE, surface, method, path) is not None

    def take_drop_poll(self, path: str) -> DropMode | None:
        rule = self._take(FaultKind.DROP_POLL, Surface.MESSAGE_QUEUE, "GET", path)
        return None if rule is None else rule.drop_mode

    def bom(self, surface: Surface) -> bool:
        return surface in self.bom_surfaces


_SECONDARY_LIMIT_BODY = (
    '{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you '
    'try again.", "documentation_url": '
    '"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"}'
)


def with_nulls(value: Any, fields: frozenset[str]) -> Any:
    """``value`` (a JSON value) with every member named in ``fields`` set to ``null``, at any
    depth; a ``body`` string holding a JSON array or object (a message's job list) is rewritten
    inside too."""
    if isinstance(value, list):
        return [with_nulls(item, fields) for item in value]
    if not isinstance(value, dict):
        return value
    rewritten: dict[str, Any] = {}
    for key, item in value.items():
        if key in fields:
            rewritten[key] = None
        elif key == "body" and isinstance(item, str):
            rewritten[key] = _nulls_in_encoded(item, fields)
        else:
            rewritten[key] = with_nulls(item, fields)
    return rewritten


def _nulls_in_encoded(text: str, fields: frozenset[str]) -> str:
    try:
        decoded = json.loads(text)
    except ValueError:
        return text
    if not isinstance(decoded, list | dict):
        return text
    return json.dumps(with_nulls(decoded, fields))
