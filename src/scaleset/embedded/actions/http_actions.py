"""Actions-service side of the fake: the admin endpoints and the message queue (spec §2, §4).

Admin endpoints live under the tenant URL (``/tenant/{id}/_apis/...``), need
``Authorization: Bearer <admin JWT>`` for that tenant and ``api-version=6.0-preview``.
The message queue (``/mq/{scaleSetId}/messages?sessionId=...``) and acquirejobs take the
session's message-queue token instead; the queue takes no ``api-version`` query (§2 notes).
"""

from __future__ import annotations

from typing import Any

from scaleset.embedded.actions import errors
from scaleset.embedded.actions.context import FakeContext
from scaleset.embedded.actions.errors import ActionsError, PlainError
from scaleset.embedded.actions.faults import DropMode, Surface
from scaleset.embedded.actions.model import Label, ScaleSet, ScaleSetSession
from scaleset.embedded.actions.routing import Call, Reply, Router
from scaleset.embedded.actions.wire import (
    message_json,
    runner_group_json,
    runner_reference_json,
    scale_set_json,
    session_json,
)

API_VERSION = "6.0-preview"
TENANT = "/tenant/{tenant}/_apis"
SCALE_SETS = TENANT + "/runtime/runnerscalesets"
AGENTS = TENANT + "/distributedtask/pools/0/agents"
"""How often (real seconds) a waiting long poll re-applies the service's timeouts."""


def _bad_argument(message: str) -> ActionsError:
    return ActionsError(400, errors.INVALID_ARGUMENT, message)


def _int_param(call: Call, name: str) -> int:
    try:
        return int(call.params[name])
    except ValueError:
        raise ActionsError(404, errors.RESOURCE_NOT_FOUND, f"Invalid {name}.") from None


def _query_int(call: Call, name: str, *, default: int | None = None) -> int | None:
    raw = call.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise _bad_argument(f"The query parameter {name} must be an integer.") from None


def _bearer(call: Call) -> str:
    scheme, _, value = (call.header("Authorization") or "").strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _parse_labels(raw: Any) -> list[Label]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _bad_argument("labels must be an array.")
    labels = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise _bad_argument("Every label needs a name.")
        kind = item.get("type")
        labels.append(Label(item["name"], kind if isinstance(kind, str) and kind else "System"))
    return labels


def _runner_setting(body: dict[str, Any]) -> dict[str, Any] | None:
    for key, value in body.items():
        if key.lower() == "runnersetting":
            if value is None:
                return {}
            if not isinstance(value, dict):
                raise _bad_argument("RunnerSetting must be an object.")
            return value
    return None


class ActionsApi:
    def __init__(self, context: FakeContext) -> None:
        self._ctx = context

    def register(self, router: Router) -> None:
        add, actions, mq = router.add, Surface.ACTIONS, Surface.MESSAGE_QUEUE
        add("GET", SCALE_SETS, self.list_scale_sets, actions)
        add("POST", SCALE_SETS, self.create_scale_set, actions)
        add("GET", SCALE_SETS + "/{id}", self.get_scale_set, actions)
        add("PATCH", SCALE_SETS + "/{id}", self.update_scale_set, actions)
        add("DELETE", SCALE_SETS + "/{id}", self.delete_scale_set, actions)
        add("GET", TENANT + "/runtime/runnergroups", self.runner_groups, actions)
        add("POST", SCALE_SETS + "/{id}/generatejitconfig", self.generate_jit_config, actions)
        add("GET", AGENTS, self.agents_by_name, actions)
        add("GET", AGENTS + "/{runner}", self.get_agent, actions)
        add("DELETE", AGENTS + "/{runner}", self.remove_agent, actions)
        add("POST", SCALE_SETS + "/{id}/sessions", self.create_session, actions)
        add("PATCH", SCALE_SETS + "/{id}/sessions/{session}", self.refresh_session, actions)
        add("DELETE", SCALE_SETS + "/{id}/sessions/{session}", self.delete_session, actions)
        add("POST", SCALE_SETS + "/{id}/acquirejobs", self.acquire_jobs, actions)
        add("GET", "/mq/{id}/messages", self.get_message, mq)
        add("DELETE", "/mq/{id}/messages/{message}", self.delete_message, mq)

    # ----------------------------------------------------------------------- preconditions

    def _api_version(self, call: Call) -> None:
        version = call.query.get("api-version")
        if version is None:
            raise ActionsError(
                400,
                errors.VERSION_NOT_SPECIFIED,
                f"No api-version was supplied for the {call.request.method} request.",
            )
        if version != API_VERSION:
            raise ActionsError(
                400,
                errors.VERSION_NOT_SUPPORTED,
                f"The requested version {version} of the resource is not supported.",
            )

    def _admin(self, call: Call) -> int:
        """Check admin token and api-version; returns the tenant id."""
        tenant_id = _int_param(call, "tenant")
        self._ctx.authority.check_admin_token(call.header("Authorization"), tenant_id)
        self._api_version(call)
        self._ctx.service.tenant(tenant_id)
        return tenant_id

    def _scale_set_json(self, scale_set: ScaleSet) -> dict[str, Any]:
        service = self._ctx.service
        return scale_set_json(
            scale_set,
            service.runner_group_of(scale_set),
            self._ctx.tenant_url(scale_set.tenant_id),
            service.statistics(scale_set.id),
        )

    # --------------------------------------------------------------------------- scale sets

    async def list_scale_sets(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        group_id = _query_int(call, "runnerGroupId")
        name = call.query.get("name")
        found = [
            s
            for s in self._ctx.service.scale_sets.values()
            if s.tenant_id == tenant_id
            and (group_id is None or s.runner_group_id == group_id)
            and (name is None or s.name == name)
        ]
        found.sort(key=lambda s: s.id)
        value = [self._scale_set_json(s) for s in found]
        return Reply.of(200, {"count": len(value), "value": value})

    async def get_scale_set(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        scale_set = self._ctx.service.scale_set(tenant_id, _int_param(call, "id"))
        return Reply.of(200, self._scale_set_json(scale_set))

    async def create_scale_set(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        body = await call.json()
        if not isinstance(body, dict):
            raise _bad_argument("The body must be a RunnerScaleSet object.")
        name = body.get("name")
        group_id = body.get("runnerGroupId")
        if not isinstance(name, str) or (group_id is not None and not isinstance(group_id, int)):
            raise _bad_argument("name must be a string and runnerGroupId an integer.")
        scale_set = self._ctx.service.create_scale_set(
            tenant_id,
            name=name,
            runner_group_id=group_id,
            labels=_parse_labels(body.get("labels")),
            runner_setting=_runner_setting(body) or {},
        )
        return Reply.of(200, self._scale_set_json(scale_set))

    async def update_scale_set(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        body = await call.json()
        if not isinstance(body, dict):
            raise _bad_argument("The body must be a RunnerScaleSet object.")
        name = body.get("name")
        group_id = body.get("runnerGroupId")
        if (name is not None and not isinstance(name, str)) or (
            group_id is not None and not isinstance(group_id, int)
        ):
            raise _bad_argument("name must be a string and runnerGroupId an integer.")
        scale_set = self._ctx.service.update_scale_set(
            tenant_id,
            _int_param(call, "id"),
            name=name or None,
            runner_group_id=group_id or None,
            labels=_parse_labels(body.get("labels")) or None,
            runner_setting=_runner_setting(body),
        )
        return Reply.of(200, self._scale_set_json(scale_set))

    async def delete_scale_set(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        self._ctx.service.delete_scale_set(tenant_id, _int_param(call, "id"))
        return Reply.empty(204)

    async def runner_groups(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        service = self._ctx.service
        name = call.query.get("groupName")
        groups = (
            service.runner_groups_named(tenant_id, name)
            if name is not None
            else sorted(service.runner_groups[tenant_id].values(), key=lambda g: g.id)
        )
        value = []
        for group in groups:
            size = sum(
                1
                for runner in service.live_runners(tenant_id)
                if (s := service.scale_sets.get(runner.scale_set_id)) is not None
                and s.runner_group_id == group.id
            )
            value.append(runner_group_json(group, size))
        return Reply.of(200, {"count": len(value), "value": value})

    # ------------------------------------------------------------------------------ runners

    async def generate_jit_config(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        body = await call.json()
        if not isinstance(body, dict):
            raise _bad_argument("The body must be an object with name and workFolder.")
        name, work_folder = body.get("name"), body.get("workFolder", "")
        if not isinstance(name, str) or not isinstance(work_folder, str | None):
            raise _bad_argument("name and workFolder must be strings.")
        runner, encoded = self._ctx.issue_jit_config(
            tenant_id, _int_param(call, "id"), name, work_folder or ""
        )
        return Reply.of(200, {"runner": runner_reference_json(runner), "encodedJITConfig": encoded})

    async def agents_by_name(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        name = call.query.get("agentName")
        service = self._ctx.service
        runners = (
            service.runners_named(tenant_id, name)
            if name is not None
            else service.live_runners(tenant_id)
        )
        value = [runner_reference_json(r) for r in runners]
        return Reply.of(200, {"count": len(value), "value": value})

    async def get_agent(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        runner = self._ctx.service.runner(tenant_id, _int_param(call, "runner"))
        return Reply.of(200, runner_reference_json(runner))

    async def remove_agent(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        self._ctx.service.remove_runner(tenant_id, _int_param(call, "runner"))
        return Reply.empty(204)

    # ----------------------------------------------------------------------------- sessions

    def _session_reply(self, session: ScaleSetSession) -> Reply:
        service = self._ctx.service
        scale_set = service.scale_sets[session.scale_set_id]
        return Reply.of(
            200,
            session_json(
                session,
                self._scale_set_json(scale_set),
                self._ctx.message_queue_url(session),
                service.statistics(scale_set.id),
            ),
        )

    async def create_session(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        body = await call.json(allow_empty=True)
        owner = body.get("ownerName") if isinstance(body, dict) else None
        if not isinstance(owner, str) or not owner:
            raise _bad_argument("ownerName is required.")
        session = self._ctx.service.create_session(tenant_id, _int_param(call, "id"), owner)
        return self._session_reply(session)

    async def refresh_session(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        session = self._ctx.service.refresh_session(
            tenant_id, _int_param(call, "id"), call.params["session"]
        )
        return self._session_reply(session)

    async def delete_session(self, call: Call) -> Reply:
        tenant_id = self._admin(call)
        self._ctx.service.delete_session(tenant_id, _int_param(call, "id"), call.params["session"])
        return Reply.empty(204)

    # ------------------------------------------------------------------- the message queue

    def _mq_session(self, call: Call) -> ScaleSetSession:
        session = self._ctx.service.session_for_mq_token(_bearer(call))
        if session.scale_set_id != _int_param(call, "id"):
            raise PlainError(401, "")
        wanted = call.query.get("sessionId")
        if wanted is not None and wanted != session.id:
            raise ActionsError(
                404, errors.SESSION_NOT_FOUND, f"The session identifier {wanted} is not valid."
            )
        return session

    async def acquire_jobs(self, call: Call) -> Reply:
        _int_param(call, "tenant")
        session = self._mq_session(call)
        self._api_version(call)
        body = await call.json()
        if not isinstance(body, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in body
        ):
            raise _bad_argument("The body must be a JSON array of runner request ids.")
        acquired = self._ctx.service.acquire_jobs(session, _int_param(call, "id"), body)
        return Reply.of(200, {"count": len(acquired), "value": acquired})

    async def get_message(self, call: Call) -> Reply:
        session = self._mq_session(call)
        last_id = _query_int(call, "lastMessageId", default=0) or 0
        capacity_header = call.header("X-ScaleSetMaxCapacity")
        capacity: int | None = None
        if capacity_header is not None:
            try:
                capacity = int(capacity_header)
            except ValueError:
                capacity = -1
            if capacity < 0:
                raise PlainError(400, "X-ScaleSetMaxCapacity must be a non-negative integer")
        service = self._ctx.service
        drop = self._ctx.faults.take_drop_poll(call.path)
        service.note_poll(session, capacity)
        if drop is DropMode.EMPTY:
            return Reply.empty(202)

        def ready() -> Reply | None:
            message = service.take_message(session, last_id)
            if drop is DropMode.DISCONNECT:  # after the take: the message is formed, then cut
                return Reply(0, disconnect=True)
            if message is None:
                return None
            return Reply.of(200, message_json(message, service.statistics(session.scale_set_id)))

        session.active_polls += 1
        try:
            reply = await self._ctx.hold(
                self._ctx.poll_hold_seconds, ready, lambda: session.id in service.sessions
            )
        finally:
            session.active_polls -= 1
            service.touch_session(session)
        return reply if reply is not None else Reply.empty(202)

    async def delete_message(self, call: Call) -> Reply:
        session = self._mq_session(call)
        try:
            message_id = int(call.params["message"])
        except ValueError:
            raise _bad_argument("The message id must be an integer.") from None
        self._ctx.service.delete_message(session, message_id)
        return Reply.empty(204)
