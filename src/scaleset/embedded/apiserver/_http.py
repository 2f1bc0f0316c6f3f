"""HTTP front of the embedded server: URL routing, auth, body decoding, errors as Status.

Paths follow kube-apiserver: ``/api/v1/...`` and ``/apis/<group>/<version>/...``, with
``namespaces/<ns>/`` for namespaced resources, ``/<name>`` and ``/<name>/<subresource>``, and the
legacy ``/watch/`` prefix. Discovery lives at ``/api``, ``/apis``, ``/apis/<group>``,
``/version``. ``/_scaleset/faults`` is the fault-injection control endpoint, ``/_scaleset/access``
the access log (``_access``: who asked for what, recorded as each resource request arrives);
both want the same bearer token as the API.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from scaleset.embedded.apiserver import _errors, _managed, _openapi, _protobuf, _rbac, _tables
from scaleset.embedded.apiserver._access import AccessEntry, AccessLog
from scaleset.embedded.apiserver._admission import DEFAULT_SERVICE_ACCOUNT
from scaleset.embedded.apiserver._crds import CRD_GROUP
from scaleset.embedded.apiserver._errors import ApiError, bad_request
from scaleset.embedded.apiserver._faults import Faults, RequestInfo
from scaleset.embedded.apiserver._kinds import ResourceType
from scaleset.embedded.apiserver._registry import Registry
from scaleset.embedded.apiserver._rest import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    PODS,
    SERVICE_ACCOUNTS,
    STRATEGIC_PATCH,
    DeleteOptions,
    Rest,
)
from scaleset.embedded.apiserver._watch import WatchSession

JsonObj = dict[str, Any]
log = logging.getLogger(__name__)

MAX_BODY_BYTES = 3 * 1024 * 1024
_BODY_TYPES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
_PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH]
_CR_PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
VERSION_INFO = {
    "major": "1",
    "minor": "20",
    "gitVersion": "v1.20.2",
    "gitCommit": "faecb196815e248d3ecfb03c680a4507229c2a56",
    "gitTreeState": "clean",
    "buildDate": "2021-01-13T13:20:00Z",
    "goVersion": "go1.15.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@dataclass(frozen=True)
class Target:
    """A parsed resource URL."""

    rt: ResourceType
    namespace: str
    name: str
    subresource: str
    watch_path: bool


def _json_response(body: object, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        status=status,
        content_type="application/json",
    )


def error_response(error: ApiError) -> web.Response:
    return _json_response(error.status(), error.code)


def _query(request: web.Request) -> dict[str, str]:
    return {k: v for k, v in request.query.items()}


class ApiHandler:
    """Turns HTTP requests into registry calls."""

    def __init__(
        self,
        rest: Rest,
        registry: Registry,
        faults: Faults,
        *,
        tokens: frozenset[str] | None,
        server_address: Callable[[], str],
        bookmark_interval: float,
        max_body_bytes: int = MAX_BODY_BYTES,
        crd_terminating: Callable[[str, str], bool] = lambda group, plural: False,
        controllers_settled: Callable[[], Awaitable[None]] | None = None,
        access: AccessLog | None = None,
    ) -> None:
        self.rest = rest
        self.registry = registry
        self.faults = faults
        self.tokens = tokens
        self.server_address = server_address
        self.bookmark_interval = bookmark_interval
        self.max_body_bytes = max_body_bytes
        self.crd_terminating = crd_terminating
        self.controllers_settled = controllers_settled
        self.access = access if access is not None else AccessLog()
        self.watches: set[WatchSession] = set()

    # -- entry ---------------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            self._authenticate(request)  # the control routes too: they change what is served
            if request.path.startswith("/_scaleset/"):
                return await self._control(request)
            return await self._dispatch(request)
        except ApiError as error:
            return error_response(error)
        except web.HTTPException:
            raise
        except Exception as exc:
            log.exception(
                "embedded apiserver: unexpected error on %s %s", request.method, request.path
            )
            return error_response(_errors.internal(type(exc).__name__))

    def _authenticate(self, request: web.Request) -> None:
        if self.tokens is None:
            return
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not any(
            hmac.compare_digest(token.strip(), known) for known in self.tokens
        ):
            raise _errors.unauthorized()

    async def _control(self, request: web.Request) -> web.Response:
        path = request.path.rstrip("/")
        try:
            if path == "/_scaleset/faults/counts" and request.method == "GET":
                return _json_response(self.faults.counts_document())
            if path == "/_scaleset/faults" and request.method == "POST":
                command = json.loads(await request.read() or b"{}")
                if not isinstance(command, dict):
                    raise ValueError("a fault command is a JSON object")
                return _json_response(self.faults.control(command))
            if path == "/_scaleset/faults" and request.method == "DELETE":
                self.faults.clear()
                return _json_response({"ok": True})
            if path == "/_scaleset/access" and request.method == "GET":
                return _json_response(self.access.document())
            if path == "/_scaleset/access" and request.method == "DELETE":
                self.access.clear()
                return _json_response({"ok": True})
        except (ValueError, KeyError, TypeError) as exc:
            return _json_response({"ok": False, "error": str(exc)}, 400)
        raise _errors.resource_not_found()

    # -- routing -------------------------------------------------------------------------------
    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if not parts:
            return _json_response({"paths": ["/api", "/api/v1", "/apis", "/version", "/healthz"]})
        head = parts[0]
        if head in ("healthz", "livez", "readyz") and len(parts) == 1:
            return web.Response(text="ok", content_type="text/plain")
        if head == "version" and len(parts) == 1:
            return _json_response(VERSION_INFO)
        if head == "openapi" and len(parts) >= 2 and parts[1] == "v3":
            return self._openapi_v3(request, parts[2:])
        if head == "api":
            if len(parts) == 1:
                return self._discovery(request, self.registry.api_versions(self.server_address()))
            if parts[1] != "v1":
                return _not_found_text()
            if len(parts) == 2:
                return self._discovery(request, self.registry.resource_list("", "v1"))
            return await self._resource(request, "", "v1", parts[2:])
        if head == "apis":
            if len(parts) == 1:
                return self._discovery(request, self.registry.api_group_list())
            group = parts[1]
            if not self.registry.versions(group):
                return _not_found_text()
            if len(parts) == 2:
                return self._discovery(request, self.registry.api_group_doc(group))
            version = parts[2]
            if not self.registry.has_group_version(group, version):
                return _not_found_text()
            if len(parts) == 3:
                return self._discovery(request, self.registry.resource_list(group, version))
            return await self._resource(request, group, version, parts[3:])
        return _not_found_text()

    def _openapi_v3(self, request: web.Request, rest: list[str]) -> web.Response:
        if not rest:
            return self._discovery(request, _openapi.root_document(self.registry))
        if rest[0] == "api" and len(rest) == 2:
            group, version = "", rest[1]
        elif rest[0] == "apis" and len(rest) == 3:
            group, version = rest[1], rest[2]
        else:
            return _not_found_text()
        if not self.registry.has_group_version(group, version):
            return _not_found_text()
        return self._discovery(
            request, _openapi.group_version_document(self.registry, group, version)
        )

    def _discovery(self, request: web.Request, doc: JsonObj) -> web.Response:
        if request.method != "GET":
            raise _errors.method_not_allowed()
        return _json_response(doc)

    def _target(self, group: str, version: str, parts: list[str]) -> Target:
        watch_path = False
        if parts[0] == "watch":
            watch_path = True
            parts = parts[1:]
            if not parts:
                raise _errors.resource_not_found()
        namespace = ""
        if parts[0] == "namespaces" and len(parts) >= 3:
            ns_type = self.registry.lookup(group, version, "namespaces")
            sub_is_namespace_sub = ns_type is not None and parts[2] in ns_type.subresources
            if not (sub_is_namespace_sub and len(parts) == 3):
                namespace = parts[1]
                parts = parts[2:]
        resource = parts[0]
        rt = self.registry.lookup(group, version, resource)
        if rt is None or len(parts) > 3:
            raise _errors.resource_not_found()
        if namespace and not rt.namespaced:
            raise _errors.resource_not_found()
        name = parts[1] if len(parts) >= 2 else ""
        subresource = parts[2] if len(parts) == 3 else ""
        if subresource and subresource not in rt.subresources:
            raise _errors.resource_not_found()
        return Target(rt, namespace, name, subresource, watch_path)

    async def _resource(
        self, request: web.Request, group: str, version: str, parts: list[str]
    ) -> web.StreamResponse:
        target = self._target(group, version, parts)
        query = _query(request)
        method = request.method
        verb = self._verb(method, target, query)
        if not target.subresource and verb not in target.rt.verbs:
            raise _errors.method_not_allowed()  # e.g. deletecollection on namespaces
        info = RequestInfo(
            verb,
            group,
            target.rt.plural,
            target.subresource,
            target.namespace,
            target.name,
        )
        entry = self._record(request, info)
        self._authorize(request, info)
        await self.faults.before(info)
        try:
            response = await self._serve(request, target, verb, query)
        except ApiError as error:
            if error.code == 409:
                self.access.refuse(entry)
            raise
        if verb in ("get", "list") and response.status < 300:
            self.faults.after_read(info)
        return response

    def _record(self, request: web.Request, info: RequestInfo) -> AccessEntry:
        return self.access.record(
            agent=request.headers.get("User-Agent", ""),
            user=request.headers.get("Impersonate-User", ""),
            verb=info.verb,
            group=info.group,
            resource=info.resource,
            subresource=info.subresource,
            namespace=info.namespace,
            name=info.name,
        )

    def _authorize(self, request: web.Request, info: RequestInfo) -> None:
        """RBAC applies to impersonated requests; the token itself is an administrator's."""
        user = request.headers.get("Impersonate-User")
        if not user:
            return
        who = _rbac.User(user, tuple(request.headers.getall("Impersonate-Group", [])))
        scope = {
            "verb": info.verb,
            "group": info.group,
            "resource": info.resource,
            "subresource": info.subresource,
            "namespace": info.namespace,
            "name": info.name,
        }
        if not _rbac.allowed(self.rest.store, who, **scope):
            raise _rbac.forbidden(who, **scope)

    def _verb(self, method: str, target: Target, query: dict[str, str]) -> str:
        named = bool(target.name)
        if target.watch_path:
            if method != "GET":
                raise _errors.method_not_allowed()
            return "watch"
        if method == "GET":
            if named:
                return "get"
            return "watch" if query.get("watch", "").lower() in ("true", "1") else "list"
        if method == "POST":
            if named and target.subresource != "binding":
                raise _errors.method_not_allowed()
            if not named and target.rt.namespaced and not target.namespace:
                raise _errors.method_not_allowed()
            return "create"
        if method == "PUT" and named:
            return "update"
        if method == "PATCH" and named:
            return "patch"
        if method == "DELETE":
            return "delete" if named else "deletecollection"
        raise _errors.method_not_allowed()

    # -- bodies --------------------------------------------------------------------------------
    async def _raw_body(self, request: web.Request) -> bytes:
        length = request.content_length
        if length is not None and length > self.max_body_bytes:
            raise _errors.too_large(self.max_body_bytes)
        chunks: list[bytes] = []
        total = 0
        async for chunk in request.content.iter_chunked(65536):
            total += len(chunk)
            if total > self.max_body_bytes:
                raise _errors.too_large(self.max_body_bytes)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _object_body(self, request: web.Request, kind: str) -> object:
        media = request.content_type if request.headers.get("Content-Type") else "application/json"
        if media not in (*_BODY_TYPES, "application/x-yaml"):
            raise _errors.unsupported_media_type(_BODY_TYPES)
        raw = await self._raw_body(request)
        if media == "application/vnd.kubernetes.protobuf":
            return _protobuf.decode_object(raw)
        body = _parse_json(raw) if media == "application/json" else _parse_yaml(raw)
        if isinstance(body, _Unparsable):
            raise bad_request(
                f"the object provided is unrecognized (must be of type {kind}): couldn't get "
                f"version/kind; json parse error: {body.error} ({_snippet(raw)})"
            )
        return body

    async def _optional_body(self, request: web.Request) -> object:
        raw = await self._raw_body(request)
        if not raw.strip():
            return None
        media = request.content_type if request.headers.get("Content-Type") else "application/json"
        body = (
            _parse_yaml(raw)
            if media in ("application/yaml", "application/x-yaml")
            else (_parse_json(raw))
        )
        if isinstance(body, _Unparsable):
            raise _errors.internal_plain(
                f"couldn't get version/kind; json parse error: {body.error}"
            )
        return body

    # -- verbs ---------------------------------------------------------------------------------
    async def _serve(
        self, request: web.Request, target: Target, verb: str, query: dict[str, str]
    ) -> web.StreamResponse:
        rest, rt = self.rest, target.rt
        ns, name, sub = target.namespace, target.name, target.subresource
        dry_run = query.get("dryRun") == "All"
        table = _tables.wants_table(request.headers.get("Accept", ""))
        if verb == "get":
            obj = rest.get(rt, ns, name)
            if table is not None:
                meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                return _json_response(self._table(rt, [obj], table, meta, query))
            return _json_response(obj)
        if verb == "list":
            listed = await rest.list_objects(rt, ns, rest.parse_list_query(rt, query))
            if table is not None:
                rows = listed["items"]
                return _json_response(self._table(rt, rows, table, listed["metadata"], query))
            return _json_response(listed)
        if verb == "watch":
            if target.watch_path and name:
                query = {**query, "fieldSelector": _and_name(query.get("fieldSelector"), name)}
            session = WatchSession(
                rest,
                rt,
                ns,
                rest.parse_list_query(rt, query, watch=True),
                query,
                self.bookmark_interval,
            )
            if table is not None:
                table_version = table
                session.render = lambda obj: self._table(
                    rt,
                    [obj],
                    table_version,
                    {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                    query,
                )
            return await session.run(request, self.watches)
        if verb == "create":
            body = await self._object_body(request, rt.kind)
            if sub == "binding":
                return _json_response(rest.bind_pod(rt, ns, name, body), 201)
            if self.crd_terminating(rt.group, rt.plural):
                raise ApiError(
                    405,
                    "MethodNotAllowed",
                    "create not allowed while custom resource definition is terminating",
                    {},
                )
            if (
                rt.bucket == PODS
                and self.controllers_settled is not None
                and rest.store.get(SERVICE_ACCOUNTS, (ns, DEFAULT_SERVICE_ACCOUNT)) is None
            ):
                # as the ServiceAccount plugin retries its lookup of `default` for a while:
                # the controllers may be about to create it in a new namespace
                await self.controllers_settled()
            created = rest.create(rt, ns, body, dry_run=dry_run, manager=_manager(request, query))
            return _json_response(created, 201)
        if verb == "update":
            body = await self._object_body(request, rt.kind)
            if sub == "finalize":
                return _json_response(rest.finalize_namespace(rt, name, body))
            obj, code = rest.update(
                rt,
                ns,
                name,
                body,
                subresource=sub,
                dry_run=dry_run,
                manager=_manager(request, query),
            )
            return _json_response(obj, code)
        if verb == "patch":
            return await self._patch(request, target, query, dry_run)
        if verb == "delete":
            opts = DeleteOptions.parse(await self._optional_body(request), query)
            obj, code = rest.delete(rt, ns, name, opts)
            return _json_response(obj, code)
        if verb == "deletecollection":
            opts = DeleteOptions.parse(await self._optional_body(request), query)
            return _json_response(
                rest.delete_collection(rt, ns, rest.parse_list_query(rt, query), opts)
            )
        raise _errors.method_not_allowed()

    def _table(
        self,
        rt: ResourceType,
        objects: list[JsonObj],
        api_version: str,
        list_meta: JsonObj,
        query: dict[str, str],
    ) -> JsonObj:
        crd_version: JsonObj | None = None
        if rt.list_items_have_kind:
            crd = self.rest.store.get(
                (CRD_GROUP, "customresourcedefinitions"), ("", f"{rt.plural}.{rt.group}")
            )
            versions = ((crd or {}).get("spec") or {}).get("versions") or []
            crd_version = next((v for v in versions if v.get("name") == rt.version), None)
        return _tables.build_table(
            rt,
            objects,
            api_version=api_version,
            list_meta=list_meta,
            include_object=query.get("includeObject", "Metadata"),
            now=self.rest.clock.now(),
            crd_version=crd_version,
        )

    async def _patch(
        self, request: web.Request, target: Target, query: dict[str, str], dry_run: bool
    ) -> web.Response:
        rt = target.rt
        media = request.content_type if request.headers.get("Content-Type") else ""
        accepted = _PATCH_TYPES if rt.strategy.patch_meta is not None else _CR_PATCH_TYPES
        if media not in accepted:
            if media in _PATCH_TYPES:
                raise _errors.unsupported_media_type(accepted)
            raise _errors.unsupported_patch_type()
        raw = await self._raw_body(request)
        if media == APPLY_PATCH:
            if target.subresource:
                raise _errors.method_not_allowed()
            obj, code = self.rest.apply(
                rt,
                target.namespace,
                target.name,
                _require_parsed(_parse_yaml(raw)),
                field_manager=query.get("fieldManager", ""),
                dry_run=dry_run,
            )
            return _json_response(obj, code)
        body = _parse_json(raw)
        if isinstance(body, _Unparsable):
            if media == MERGE_PATCH:
                raise _errors.internal_plain("Invalid JSON Patch")
            raise bad_request(body.error)
        return _json_response(
            self.rest.patch(
                rt,
                target.namespace,
                target.name,
                media,
                body,
                subresource=target.subresource,
                dry_run=dry_run,
                manager=_manager(request, query),
            )
        )


def _manager(request: web.Request, query: dict[str, str]) -> str:
    return _managed.manager_from(query.get("fieldManager"), request.headers.get("User-Agent"))


def _and_name(selector: str | None, name: str) -> str:
    term = f"metadata.name={name}"
    return f"{selector},{term}" if selector else term


def _not_found_text() -> web.Response:
    return web.Response(status=404, text="404 page not found\n", content_type="text/plain")


@dataclass(frozen=True)
class _Unparsable:
    """A body that is not JSON (or YAML); each caller words the error as the real server."""

    error: str


def _snippet(raw: bytes) -> str:
    if not raw.strip():
        return "<empty>"
    text = raw[:40].decode("utf-8", errors="replace")
    return text if text.isprintable() else raw[:20].hex()


def _parse_json(raw: bytes) -> object:
    if not raw.strip():
        return _Unparsable("unexpected end of JSON input")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return _Unparsable(str(exc))


def _parse_yaml(raw: bytes) -> object:
    if not raw.strip():
        return _Unparsable("unexpected end of JSON input")
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        return _Unparsable(f"error converting YAML to JSON: {exc}")


def _require_parsed(body: object) -> object:
    if isinstance(body, _Unparsable):
        raise bad_request(body.error)
    return body
