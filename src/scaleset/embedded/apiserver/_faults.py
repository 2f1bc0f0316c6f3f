"""Fault injection for tests: latency, failures, forced conflicts, failure rates, read-modify-write
races, dropped watches, compacted history, and request counts.

``Faults`` is safe to call from any thread (tests usually drive it from their own thread while
the server runs on its loop in another). Rules match requests by verb (Kubernetes audit verbs:
get, list, watch, create, update, patch, delete, deletecollection), resource (plural),
subresource, namespace and name; a field left as None matches anything. A failure rate
(``fail_rate``) answers a seeded share of the matching requests with an error: the sequence of
decisions is fixed by the seed (which requests get them depends on the order they arrive in).
"""

from __future__ import annotations

import asyncio
import inspect
import random
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from scaleset.embedded.apiserver._errors import ApiError, conflict, injected

READ_VERBS = ("get", "list")
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
RaceCallback = Callable[[], Any] | Callable[[], Awaitable[Any]]


@dataclass(frozen=True)
class RequestInfo:
    """What a resource request is, as the fault rules see it."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str

    @property
    def resource_path(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass
class Match:
    verb: str | tuple[str, ...] | None = None
    resource: str | None = None
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None

    def matches(self, info: RequestInfo) -> bool:
        if self.verb is not None:
            verbs = (self.verb,) if isinstance(self.verb, str) else self.verb
            if info.verb not in verbs:
                return False
        return (
            (self.resource is None or self.resource == info.resource)
            and (self.subresource is None or self.subresource == info.subresource)
            and (self.namespace is None or self.namespace == info.namespace)
            and (self.name is None or self.name == info.name)
        )


@dataclass
class _Latency:
    match: Match
    seconds: float


@dataclass
class _Failure:
    match: Match
    remaining: int
    code: int
    reason: str | None
    message: str | None


@dataclass
class _Rate:
    match: Match
    rate: float
    codes: tuple[int, ...]
    rng: random.Random
    excluded: frozenset[str]

    def draw(self, info: RequestInfo) -> int | None:
        """The status to answer ``info`` with, or ``None``: one seeded draw per matching
        request."""
        if info.resource_path in self.excluded or not self.match.matches(info):
            return None
        if self.rng.random() >= self.rate:
            return None
        return self.codes[self.rng.randrange(len(self.codes))]


@dataclass
class _Race:
    match_read: Match
    match_write: Match
    callback: RaceCallback
    armed: bool = False


@dataclass
class _Controls:
    loop: asyncio.AbstractEventLoop
    drop_watches: Callable[[bool], None]
    compact: Callable[[], None]


@dataclass
class Faults:
    """The test-facing fault hooks of one embedded API server."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _latencies: list[_Latency] = field(default_factory=list)
    _failures: list[_Failure] = field(default_factory=list)
    _conflicts: list[_Failure] = field(default_factory=list)
    _rates: list[_Rate] = field(default_factory=list)
    _rate_hits: int = 0
    _races: list[_Race] = field(default_factory=list)
    _counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    _controls: _Controls | None = None
    callback_errors: list[BaseException] = field(default_factory=list)

    # -- configuration (any thread) ------------------------------------------------------------
    def add_latency(
        self,
        seconds: float,
        *,
        verb: str | tuple[str, ...] | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
    ) -> None:
        """Delay every matching request by ``seconds`` until ``clear()``."""
        with self._lock:
            self._latencies.append(
                _Latency(Match(verb, resource, subresource, namespace, name), seconds)
            )

    def fail_next(
        self,
        count: int,
        code: int,
        *,
        verb: str | tuple[str, ...] | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        reason: str | None = None,
        message: str | None = None,
    ) -> None:
        """Answer the next ``count`` matching requests with ``code`` (a Status body)."""
        with self._lock:
            self._failures.append(
                _Failure(
                    Match(verb, resource, subresource, namespace, name),
                    count,
                    code,
                    reason,
                    message,
                )
            )

    def conflict_next(
        self,
        count: int = 1,
        *,
        verb: str | tuple[str, ...] | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
    ) -> None:
        """Answer the next ``count`` matching writes with 409 Conflict (the optimistic lock)."""
        with self._lock:
            self._conflicts.append(
                _Failure(
                    Match(verb or WRITE_VERBS, resource, subresource, namespace, name),
                    count,
                    409,
                    None,
                    None,
                )
            )

    def fail_rate(
        self,
        rate: float,
        *,
        codes: tuple[int, ...] = (409, 500, 503),
        seed: int = 0,
        verb: str | tuple[str, ...] | None = WRITE_VERBS,
        resource: str | None = None,
        namespace: str | None = None,
        exclude: tuple[str, ...] = (),
    ) -> None:
        """Answer a share ``rate`` (0..1) of the matching requests with one of ``codes`` until
        ``clear()``, drawn from ``random.Random(seed)``: the same seed gives the same sequence of
        decisions. ``exclude`` names resources (``plural`` or ``plural/subresource``) left
        alone, e.g. the node's own ``pods/status``. 409 is a Conflict Status, others ``injected``.
        """
        if not 0.0 <= rate <= 1.0:
            raise ValueError("a failure rate is between 0 and 1")
        if not codes or any(not 400 <= code <= 599 for code in codes):
            raise ValueError("a failure rate needs error codes (400-599)")
        with self._lock:
            self._rates.append(
                _Rate(
                    Match(verb, resource, None, namespace, None),
                    rate,
                    tuple(codes),
                    random.Random(seed),  # noqa: S311 - reproducible faults, not a secret
                    frozenset(exclude),
                )
            )

    def rate_hits(self) -> int:
        """Requests answered with an error by failure-rate rules so far (``clear()`` keeps it)."""
        with self._lock:
            return self._rate_hits

    def between_read_and_write(
        self,
        callback: RaceCallback,
        *,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        read_verbs: tuple[str, ...] = READ_VERBS,
        write_verbs: tuple[str, ...] = ("update", "patch", "delete"),
    ) -> None:
        """Run ``callback`` once: after a matching read has been answered, before the next
        matching write is applied. A plain function runs in a worker thread (it may call the
        server over HTTP); a coroutine function runs on the server's loop."""
        with self._lock:
            self._races.append(
                _Race(
                    Match(read_verbs, resource, None, namespace, name),
                    Match(write_verbs, resource, None, namespace, name),
                    callback,
                )
            )

    def clear(self) -> None:
        """Remove every latency, failure, conflict, rate and race rule (counts stay)."""
        with self._lock:
            self._latencies.clear()
            self._failures.clear()
            self._conflicts.clear()
            self._rates.clear()
            self._races.clear()

    # -- counts --------------------------------------------------------------------------------
    def request_count(self, verb: str | None = None, resource: str | None = None) -> int:
        """Requests seen so far; ``resource`` is a plural or ``plural/subresource``."""
        with self._lock:
            return sum(
                n
                for (v, r), n in self._counts.items()
                if (verb is None or v == verb) and (resource is None or r == resource)
            )

    def request_counts(self) -> dict[tuple[str, str], int]:
        with self._lock:
            return dict(self._counts)

    def reset_counts(self) -> None:
        with self._lock:
            self._counts.clear()

    # -- actions on the running server ---------------------------------------------------------
    def drop_watches(self, *, abrupt: bool = False) -> None:
        """End every open watch stream (``abrupt`` closes the connections mid-stream)."""
        self._run_on_loop(lambda c: c.drop_watches(abrupt))

    def compact(self) -> None:
        """Forget all watch history: a watch from any earlier resourceVersion gets 410 Gone."""
        self._run_on_loop(lambda c: c.compact())

    def _run_on_loop(self, action: Callable[[_Controls], None]) -> None:
        controls = self._controls
        if controls is None:
            raise RuntimeError("the server is not running")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is controls.loop:
            action(controls)
            return
        done = threading.Event()

        def run() -> None:
            try:
                action(controls)
            finally:
                done.set()

        controls.loop.call_soon_threadsafe(run)
        if not done.wait(timeout=10):
            raise TimeoutError("the server loop did not run the fault action")

    def _bind(self, controls: _Controls | None) -> None:
        self._controls = controls

    # -- request path (server loop) ------------------------------------------------------------
    async def before(self, info: RequestInfo) -> None:
        """Called before a request is handled: count, delay, fail, race."""
        with self._lock:
            self._counts[(info.verb, info.resource_path)] += 1
            delay = sum(rule.seconds for rule in self._latencies if rule.match.matches(info))
            error = self._take(self._failures, info)
            if error is None:
                forced = self._take(self._conflicts, info)
                if forced is not None:
                    error = conflict(info.group, info.resource, info.name)
            if error is None:
                for rule in self._rates:
                    code = rule.draw(info)
                    if code is not None:
                        self._rate_hits += 1
                        error = (
                            conflict(info.group, info.resource, info.name)
                            if code == 409
                            else injected(code, None, None)
                        )
                        break
            race: _Race | None = None
            for candidate in self._races:
                if candidate.armed and candidate.match_write.matches(info):
                    race = candidate
                    break
            if race is not None:
                self._races.remove(race)
        if delay > 0:
            await asyncio.sleep(delay)
        if error is not None:
            raise error
        if race is not None:
            await self._run_callback(race.callback)

    def after_read(self, info: RequestInfo) -> None:
        """Called once a read has been answered: arms matching race rules."""
        with self._lock:
            for race in self._races:
                if not race.armed and race.match_read.matches(info):
                    race.armed = True

    def _take(self, rules: list[_Failure], info: RequestInfo) -> ApiError | None:
        for rule in rules:
            if rule.remaining > 0 and rule.match.matches(info):
                rule.remaining -= 1
                if rule.remaining == 0:
                    rules.remove(rule)
                return injected(rule.code, rule.reason, rule.message)
        return None

    async def _run_callback(self, callback: RaceCallback) -> None:
        try:
            if inspect.iscoroutinefunction(callback):
                await callback()
            else:
                result = await asyncio.get_running_loop().run_in_executor(None, callback)
                if inspect.isawaitable(result):
                    await result
        except Exception as exc:  # a test callback's failure must not break the request
            with self._lock:
                self.callback_errors.append(exc)

    # -- the HTTP control endpoint -------------------------------------------------------------
    def control(self, command: dict[str, Any]) -> dict[str, Any]:
        """Apply one JSON command from ``POST /_scaleset/faults`` (see the server docs)."""
        action = command.get("action")
        match = {
            key: command.get(key)
            for key in ("verb", "resource", "subresource", "namespace", "name")
        }
        if isinstance(match["verb"], list):
            match["verb"] = tuple(match["verb"])
        if action == "latency":
            self.add_latency(float(command["seconds"]), **match)
        elif action == "fail":
            self.fail_next(
                int(command.get("count", 1)),
                int(command["code"]),
                reason=command.get("reason"),
                message=command.get("message"),
                **match,
            )
        elif action == "conflict":
            self.conflict_next(int(command.get("count", 1)), **match)
        elif action == "rate":
            codes = command.get("codes") or (409, 500, 503)
            self.fail_rate(
                float(command["rate"]),
                codes=tuple(int(code) for code in codes),
                seed=int(command.get("seed", 0)),
                verb=match["verb"] or WRITE_VERBS,
                resource=match["resource"],
                namespace=match["namespace"],
                exclude=tuple(command.get("exclude") or ()),
            )
        elif action == "drop_watches":
            self.drop_watches(abrupt=bool(command.get("abrupt", False)))
        elif action == "compact":
            self.compact()
        elif action == "clear":
            self.clear()
        elif action == "reset_counts":
            self.reset_counts()
        else:
            raise ValueError(f"unknown fault action: {action!r}")
        return {"ok": True}

    def counts_document(self) -> dict[str, Any]:
        return {
            "counts": [
                {"verb": verb, "resource": resource, "count": count}
                for (verb, resource), count in sorted(self.request_counts().items())
            ]
        }
