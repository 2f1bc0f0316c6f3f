"""The fake's HTTP control endpoint under ``/_fake`` (the same operations as ``FakeControl``).

    GET    /_fake/state                                  ground truth (scale sets, runners, jobs,
                                                         sessions, fresh statistics)
    GET    /_fake/ledger                                 the fidelity ledger
    GET    /_fake/assumptions                            ledger assumptions relied on so far
    POST   /_fake/jobs                                   {"labels": [...], "owner", "repository",
                                                         "enterprise", "durationSeconds", "result",
                                                         "displayName", "workflowRef", "eventName"}
    POST   /_fake/jobs/{requestId}/cancel
    POST   /_fake/scale-sets                             {"configUrl", "name", "labels",
                                                         "runnerGroupId"}
    POST   /_fake/scale-sets/{id}/session/expire
    POST   /_fake/scale-sets/{id}/session/expire-token
    POST   /_fake/admin-tokens/expire
    DELETE /_fake/runners/{id}[?force=true]
    POST   /_fake/pats                                   {"token": "..."}
    POST   /_fake/apps                                   {"appId", "installationId",
                                                         "clientId"?, "privateKeyPem"?} -> the
                                                         App, with the key to sign with
    POST   /_fake/faults                                 {"kind": "status"|"rate_limit"|
                                                         "unavailable"|"latency"|"drop_polls"|
                                                         "drop_responses"|"late_answers"|
                                                         "secondary_rate_limit"|"nulls"|"bom"|
                                                         "stale_statistics", ...}
                                                         every rule kind takes "times",
                                                         "surface", "method", "pathContains";
                                                         "status" also "status", "body",
                                                         "contentType", "retryAfter",
                                                         "headers" ({name: value});
                                                         "secondary_rate_limit" (403)
                                                         "retryAfterSeconds"; "nulls"
                                                         "fields" (JSON member names)
    DELETE /_fake/faults[/{id}]
    POST   /_fake/sweep

Errors are ``{"error": "..."}`` with 400 (bad input) or 404 (unknown id).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scaleset.embedded.actions.auth import GitHubApp
from scaleset.embedded.actions.control import FakeControl
from scaleset.embedded.actions.errors import FakeHttpError
from scaleset.embedded.actions.faults import DropMode, Surface
from scaleset.embedded.actions.ledger import ledger_json
from scaleset.embedded.actions.routing import Call, Reply, Router

PREFIX = "/_fake"


class ControlError(FakeHttpError):
    """A control request the fake cannot carry out; sent as ``{"error": ...}``."""


def _field(body: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = body.get(name, default)
    if value is not None and not isinstance(value, kind):
        raise ControlError(400, f"{name} has the wrong type")
    return value


def _string_map(body: dict[str, Any], name: str) -> dict[str, str] | None:
    value = _field(body, name, dict, None)
    if value is None:
        return None
    if not all(isinstance(key, str) and isinstance(item, str) for key, item in value.items()):
        raise ControlError(400, f"{name} must map strings to strings")
    return {str(key): str(item) for key, item in value.items()}


def _surface(body: dict[str, Any]) -> Surface | None:
    raw = _field(body, "surface", str, None)
    if raw is None:
        return None
    try:
        return Surface(raw)
    except ValueError:
        raise ControlError(400, f"unknown surface {raw!r}") from None


class ControlApi:
    def __init__(
        self,
        control: FakeControl,
        add_pat: Callable[[str], None],
        add_app: Callable[[str, int, str | None, str | None], GitHubApp],
    ) -> None:
        self._control = control
        self._add_pat = add_pat
        self._add_app = add_app

    def register(self, router: Router) -> None:
        add, control = router.add, Surface.CONTROL
        add("GET", PREFIX + "/state", self.state, control)
        add("GET", PREFIX + "/ledger", self.ledger, control)
        add("GET", PREFIX + "/assumptions", self.assumptions, control)
        add("POST", PREFIX + "/jobs", self.queue_job, control)
        add("POST", PREFIX + "/jobs/{request}/cancel", self.cancel_job, control)
        add("POST", PREFIX + "/scale-sets", self.create_scale_set, control)
        add("POST", PREFIX + "/scale-sets/{id}/session/expire", self.expire_session, control)
        add("POST", PREFIX + "/scale-sets/{id}/session/expire-token", self.expire_token, control)
        add("POST", PREFIX + "/admin-tokens/expire", self.expire_admin_tokens, control)
        add("DELETE", PREFIX + "/runners/{id}", self.delete_runner, control)
        add("POST", PREFIX + "/pats", self.add_pat, control)
        add("POST", PREFIX + "/apps", self.add_app, control)
        add("POST", PREFIX + "/faults", self.add_fault, control)
        add("DELETE", PREFIX + "/faults", self.clear_faults, control)
        add("DELETE", PREFIX + "/faults/{id}", self.remove_fault, control)
        add("POST", PREFIX + "/sweep", self.sweep, control)

    async def _body(self, call: Call) -> dict[str, Any]:
        body = await call.json(allow_empty=True)
        if body is None:
            return {}
        if not isinstance(body, dict):
            raise ControlError(400, "the body must be a JSON object")
        return body

    def _id(self, call: Call, name: str) -> int:
        try:
            return int(call.params[name])
        except ValueError:
            raise ControlError(404, f"{name} must be an integer") from None

    async def state(self, call: Call) -> Reply:
        return Reply.of(200, self._control.snapshot().to_json())

    async def ledger(self, call: Call) -> Reply:
        return Reply.of(200, ledger_json())

    async def assumptions(self, call: Call) -> Reply:
        relied_on = {e.key for e in self._control.assumptions_relied_on()}
        return Reply.of(200, [e for e in ledger_json() if e["key"] in relied_on])

    async def queue_job(self, call: Call) -> Reply:
        body = await self._body(call)
        labels = _field(body, "labels", list, None)
        if not labels or not all(isinstance(label, str) for label in labels):
            raise ControlError(400, "labels must be a non-empty list of strings")
        try:
            request_id = self._control.queue_job(
                labels,
                owner=_field(body, "owner", str, "acme"),
                repository=_field(body, "repository", str, "app"),
                enterprise=_field(body, "enterprise", str, None),
                duration_seconds=float(_field(body, "durationSeconds", (int, float), 0.0)),
                result=_field(body, "result", str, "success"),
                display_name=_field(body, "displayName", str, "build"),
                workflow_ref=_field(body, "workflowRef", str, None),
                event_name=_field(body, "eventName", str, "push"),
            )
        except ValueError as error:
            raise ControlError(400, str(error)) from None
        return Reply.of(201, {"runnerRequestId": request_id})

    async def cancel_job(self, call: Call) -> Reply:
        try:
            canceled = self._control.cancel_job(self._id(call, "request"))
        except KeyError as error:
            raise ControlError(404, str(error.args[0])) from None
        return Reply.of(200, {"canceled": canceled})

    async def create_scale_set(self, call: Call) -> Reply:
        body = await self._body(call)
        config_url = _field(body, "configUrl", str, None)
        name = _field(body, "name", str, None)
        labels = _field(body, "labels", list, None)
        if not config_url or not name:
            raise ControlError(400, "configUrl and name are required")
        try:
            scale_set_id = self._control.create_scale_set(
                config_url,
                name,
                runner_group_id=_field(body, "runnerGroupId", int, 1),
                labels=labels,
            )
        except (ValueError, FakeHttpError) as error:
            raise ControlError(400, str(error)) from None
        return Reply.of(201, {"id": scale_set_id})

    async def expire_session(self, call: Call) -> Reply:
        return Reply.of(200, {"expired": self._control.expire_session(self._id(call, "id"))})

    async def expire_token(self, call: Call) -> Reply:
        expired = self._control.expire_message_queue_token(self._id(call, "id"))
        return Reply.of(200, {"expired": expired})

    async def expire_admin_tokens(self, call: Call) -> Reply:
        self._control.expire_admin_tokens()
        return Reply.empty(204)

    async def delete_runner(self, call: Call) -> Reply:
        force = (call.query.get("force") or "").lower() in ("1", "true", "yes")
        try:
            self._control.delete_runner(self._id(call, "id"), force=force)
        except KeyError as error:
            raise ControlError(404, str(error.args[0])) from None
        return Reply.empty(204)

    async def add_pat(self, call: Call) -> Reply:
        body = await self._body(call)
        token = _field(body, "token", str, None)
        if not token:
            raise ControlError(400, "token is required")
        self._add_pat(token)
        return Reply.empty(204)

    async def add_app(self, call: Call) -> Reply:
        body = await self._body(call)
        app_id = _field(body, "appId", (str, int), None)
        installation_id = _field(body, "installationId", int, None)
        if app_id is None or installation_id is None:
            raise ControlError(400, "appId and installationId are required")
        try:
            app = self._add_app(
                str(app_id),
                installation_id,
                _field(body, "privateKeyPem", str, None),
                _field(body, "clientId", str, None),
            )
        except ValueError as error:
            raise ControlError(400, str(error)) from None
        return Reply.of(
            201,
            {
                "appId": app.app_id,
                "installationId": app.installation_id,
                "clientId": app.client_id,
                "privateKeyPem": app.private_key_pem,
            },
        )

    async def add_fault(self, call: Call) -> Reply:
        body = await self._body(call)
        kind = _field(body, "kind", str, None)
        faults = self._control.faults
        times = _field(body, "times", int, 1)
        where: dict[str, Any] = {
            "surface": _surface(body),
            "method": _field(body, "method", str, None),
            "path_contains": _field(body, "pathContains", str, None),
        }
        try:
            if kind == "status":
                rule_id = faults.fail_next(
                    times,
                    _field(body, "status", int, 500),
                    retry_after=_field(body, "retryAfter", str, None),
                    body=_field(body, "body", str, ""),
                    content_type=_field(body, "contentType", str, None),
                    headers=_string_map(body, "headers"),
                    **where,
                )
            elif kind == "secondary_rate_limit":
                retry_after = _field(body, "retryAfterSeconds", int, 60)
                rule_id = faults.secondary_rate_limit(times, retry_after, **where)
            elif kind == "rate_limit":
                retry_after = _field(body, "retryAfterSeconds", int, 1)
                rule_id = faults.rate_limit(times, retry_after, **where)
            elif kind == "unavailable":
                retry_after = _field(body, "retryAfterSeconds", int, None)
                rule_id = faults.unavailable(times, retry_after, **where)
            elif kind == "latency":
                seconds = float(_field(body, "seconds", (int, float), 0.0))
                rule_id = faults.add_latency(seconds, _field(body, "times", int, None), **where)
            elif kind == "drop_polls":
                rule_id = faults.drop_polls(times, DropMode(_field(body, "mode", str, "empty")))
            elif kind == "drop_responses":
                rule_id = faults.drop_responses(times, **where)
            elif kind == "nulls":
                fields = _field(body, "fields", list, None)
                if not fields or not all(isinstance(name, str) for name in fields):
                    raise ControlError(400, "fields must be a non-empty list of strings")
                rule_id = faults.send_nulls(fields, _field(body, "times", int, None), **where)
            elif kind == "late_answers":
                seconds = float(_field(body, "seconds", (int, float), 0.0))
                rule_id = faults.delay_answers(seconds, times, **where)
            elif kind == "bom":
                faults.set_bom(bool(_field(body, "enabled", bool, True)))
                return Reply.empty(204)
            elif kind == "stale_statistics":
                self._control.set_stale_statistics(bool(_field(body, "enabled", bool, True)))
                return Reply.empty(204)
            else:
                raise ControlError(400, f"unknown fault kind {kind!r}")
        except ValueError as error:
            raise ControlError(400, str(error)) from None
        return Reply.of(201, {"id": rule_id})

    async def clear_faults(self, call: Call) -> Reply:
        self._control.faults.clear()
        self._control.set_stale_statistics(False)
        return Reply.empty(204)

    async def remove_fault(self, call: Call) -> Reply:
        self._control.faults.remove(self._id(call, "id"))
        return Reply.empty(204)

    async def sweep(self, call: Call) -> Reply:
        self._control.sweep()
        return Reply.empty(204)
