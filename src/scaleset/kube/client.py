"""The Kubernetes API client every scaleset component uses: raw JSON in, ``KubeObject`` out.

Built on lightkube's configuration, TLS and auth (``scaleset.kube.config``) and its httpx2 client,
but requests are sent and answered here, because lightkube's conveniences are the known pitfalls
(design.md): ``patch()`` defaults to strategic merge and sends whole objects, ``delete()`` cannot
send preconditions, ``watch()`` has no bookmarks and no read timeout, and error handling raises
``KeyError`` for a body without ``Content-Type``. So this client offers only explicit operations:

- ``get``, ``list`` (paged with ``limit``, yielding to the loop between pages), ``watch``
  (bookmarks, server ``timeoutSeconds``, and a read timeout a little longer than that);
- ``create``, ``replace`` (PUT), ``patch_merge`` and ``patch_json`` (optionally on ``/status``),
  ``patch_with_lock`` (a merge patch carrying the ``resourceVersion`` that was read — lifecycle.md
  L2), ``delete`` with ``DeleteOptions`` (uid / resourceVersion preconditions, propagation).

Every request passes a client-side token bucket (QPS/burst; while requests wait, the tokens go
to the lanes of controllers and namespaces in turn, ``scaleset.kube.throttle``), is recorded in
RBAC terms by the ``AccessRecorder``, is counted in ``rest_client_requests_total``, and fails
only with the exceptions of ``scaleset.kube.errors``. Watches are the exception to the token
bucket, as in client-go (``Request.Watch`` is never rate-limited): a watch is one long request,
re-opened when it ends, and must not queue behind reconcile traffic.

Connection pools: over HTTP/1.1 every open watch holds a connection for minutes, so watches get
their own pool (``watch_http``; unbounded by default — one connection per informer scope,
namespaces x kinds), and a hundred open watches cannot starve gets and writes of a connection.
A process that must never wait behind its own traffic (leader election) uses a second
``KubeClient`` — its own token bucket and pools — as controller-runtime does.

A JSON patch with ``test`` ops that cannot be applied (kube-apiserver answers 422 with no field
causes) is raised as ``Conflict``, so ``retry_on_conflict`` treats it as the stale read it is.
"""

from __future__ import annotations

import asyncio
import copy
import gc
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, NotRequired, TypedDict
from urllib.parse import urlencode

import httpx2
import msgspec
from lightkube.config.kubeconfig import SingleConfig

from scaleset import __version__
from scaleset.clock import Clock, SystemClock
from scaleset.kube.access import Access, AccessRecorder
from scaleset.kube.auth import DEFAULT_REFRESH_SECONDS
from scaleset.kube.config import DEFAULT_MAX_CONNECTIONS, build_http_client, load_config
from scaleset.kube.errors import (
    ApiStatusError,
    Conflict,
    Invalid,
    KubeResponseError,
    classify_response,
    classify_status,
    from_transport,
)
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.kube.objects import JsonObject, KubeObject, ObjectKey, Projection, drop_managed_fields
from scaleset.kube.ratelimit import TokenBucket
from scaleset.kube.resources import Kind
from scaleset.kube.throttle import Throttle

_json_decode = msgspec.json.decode
_json_encode = msgspec.json.encode

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

PropagationPolicy = Literal["Background", "Foreground", "Orphan"]


class JsonPatchOp(TypedDict):
    """One RFC 6902 operation (``op`` is add, remove, replace, move, copy or test)."""

    op: Literal["add", "remove", "replace", "move", "copy", "test"]
    path: str
    value: NotRequired[Any]
    # "from" is a Python keyword; move/copy are not used by scaleset.


class WatchEvent(NamedTuple):
    """One watch event: ADDED, MODIFIED, DELETED or BOOKMARK (ERROR is raised, never yielded)."""

    type: str
    object: KubeObject


class ListPage(NamedTuple):
    """One page of a list: items, the list's resourceVersion, and the continue token."""

    items: list[KubeObject]
    resource_version: str
    continue_token: str | None


DEFAULT_PAGE_SIZE = 500
"""Objects a list asks for per page (``limit``; client-go's pager asks for 500)."""


class ObjectList(NamedTuple):
    """A complete (all pages) list and the resourceVersion to watch from."""

    items: list[KubeObject]
    resource_version: str


@dataclass(frozen=True)
class ClientSettings:
    """Tunables of ``KubeClient``; defaults match ARC's (client-go QPS 20, burst 30)."""

    qps: float = 20.0
    burst: int = 30
    timeout: float = 30.0
    watch_read_grace: float = 30.0
    field_manager: str = "scaleset"
    user_agent: str = f"scaleset/{__version__}"
    headers: Mapping[str, str] = field(default_factory=dict)
    token_refresh_seconds: float = DEFAULT_REFRESH_SECONDS
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_watch_connections: int | None = None
    """Bound of the watch pool; ``None``: one connection per open watch, however many."""


class KubeClient:
    """Explicit, classified, rate-limited and access-recorded Kubernetes API calls."""

    def __init__(
        self,
        http: httpx2.AsyncClient,
        *,
        watch_http: httpx2.AsyncClient | None = None,
        settings: ClientSettings | None = None,
        access: AccessRecorder | None = None,
        metrics: RuntimeMetrics | None = None,
        clock: Clock | None = None,
    ) -> None:
        """``http`` for requests, ``watch_http`` (default: ``http``) for watch streams."""
        self.settings = settings or ClientSettings()
        self._http = http
        self._watch_http = watch_http or http
        for client in {self._http, self._watch_http}:
            client.headers["User-Agent"] = self.settings.user_agent
            client.headers["Accept"] = "application/json"
        self.access = access or AccessRecorder()
        self._metrics = metrics or default_metrics()
        self._clock = clock or SystemClock()
        self._throttle = Throttle(
            TokenBucket(self.settings.qps, self.settings.burst, self._clock), self._clock
        )

    @classmethod
    def from_config(
        cls,
        config: SingleConfig,
        *,
        settings: ClientSettings | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        watch_transport: httpx2.AsyncBaseTransport | None = None,
        access: AccessRecorder | None = None,
        metrics: RuntimeMetrics | None = None,
        clock: Clock | None = None,
    ) -> KubeClient:
        """A client for a resolved configuration (``load_config``), with one connection pool for
        requests and one for watches. An injected ``transport`` owns its pool: pass a second
        one as ``watch_transport`` to keep the pools apart (without, watches share it)."""
        settings = settings or ClientSettings()

        def pool(
            pool_transport: httpx2.AsyncBaseTransport | None, **limits: int | None
        ) -> httpx2.AsyncClient:
            return build_http_client(
                config,
                timeout=settings.timeout,
                transport=pool_transport,
                headers=settings.headers,
                clock=clock,
                token_refresh_seconds=settings.token_refresh_seconds,
                **limits,
            )

        http = pool(transport, max_connections=settings.max_connections)
        watch_http = None
        if transport is None or watch_transport is not None:
            watch_http = pool(
                watch_transport,
                max_connections=settings.max_watch_connections,
                max_keepalive_connections=settings.max_watch_connections,
            )
        return cls(
            http,
            watch_http=watch_http,
            settings=settings,
            access=access,
            metrics=metrics,
            clock=clock,
        )

    @classmethod
    def from_kubeconfig(
        cls,
        kubeconfig: str | Path | None = None,
        *,
        context: str | None = None,
        settings: ClientSettings | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        watch_transport: httpx2.AsyncBaseTransport | None = None,
        access: AccessRecorder | None = None,
        metrics: RuntimeMetrics | None = None,
        clock: Clock | None = None,
    ) -> KubeClient:
        """A client from a kubeconfig file (or in-cluster / ``$KUBECONFIG`` when ``None``)."""
        config = load_config(kubeconfig, context=context)
        return cls.from_config(
            config,
            settings=settings,
            transport=transport,
            watch_transport=watch_transport,
            access=access,
            metrics=metrics,
            clock=clock,
        )

    @property
    def base_url(self) -> str:
        return str(self._http.base_url)

    @property
    def waiting_for_token(self) -> int:
        """Requests waiting for the client's QPS now (in every lane)."""
        return self._throttle.waiting

    async def close(self) -> None:
        await self._http.aclose()
        if self._watch_http is not self._http:
            await self._watch_http.aclose()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ reads

    async def server_version(self) -> str:
        """``gitVersion`` from ``/version``: a cheap "is the server there, do we get in" check."""
        response = await self._send_raw("GET", "/version", verb=None)
        body = _decode_object(response.content)
        return str(body.get("gitVersion", "unknown"))

    async def get(self, kind: Kind, key: ObjectKey) -> KubeObject:
        """GET one object (fresh from the server, never from a cache)."""
        response = await self._send(
            "get", "GET", kind, namespace=key.namespace, name=key.name, subresource=""
        )
        return _to_object(kind, _decode_object(response.content), drop_managed_fields)

    async def list_page(
        self,
        kind: Kind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        continue_token: str | None = None,
        projection: Projection = drop_managed_fields,
        freeze_gc: bool = False,
    ) -> ListPage:
        """One page of a list (``namespace=None``: all namespaces).

        ``freeze_gc`` decodes and projects the page with the cycle collector paused, then
        ``gc.freeze()``s the result: a page allocates tens of thousands of containers, and a
        full collection triggered in the middle walks every cached object (hundreds of ms on a
        large cache). The freeze is process-wide and holds whatever is alive, garbage included:
        the caller must ``gc.unfreeze()`` and collect once its list is done (the informer does,
        see ``scaleset.runtime.collector``).
        """
        params: dict[str, str] = {"limit": str(limit)}
        if continue_token:
            params["continue"] = continue_token
        params.update(_selectors(label_selector, field_selector))
        response = await self._send(
            "list", "GET", kind, namespace=namespace or "", params=params, subresource=""
        )
        with _collector_paused(freeze_gc):
            body = _decode_object(response.content)
            items = body.get("items") or []
            if not isinstance(items, list):
                raise KubeResponseError(f"list of {kind.plural}: 'items' is not a list")
            meta = body.get("metadata") or {}
            objects = [
                _to_object(kind, item, projection) for item in items if isinstance(item, dict)
            ]
        return ListPage(objects, str(meta.get("resourceVersion", "")), meta.get("continue") or None)

    async def list(
        self,
        kind: Kind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        projection: Projection = drop_managed_fields,
    ) -> ObjectList:
        """Every page of a list; yields to the event loop between pages."""
        items: list[KubeObject] = []
        token: str | None = None
        resource_version = ""
        while True:
            page = await self.list_page(
                kind,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=limit,
                continue_token=token,
                projection=projection,
            )
            items.extend(page.items)
            resource_version = resource_version or page.resource_version
            token = page.continue_token
            if token is None:
                return ObjectList(items, resource_version)
            await asyncio.sleep(0)

    @asynccontextmanager
    async def watch(
        self,
        kind: Kind,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
        projection: Projection = drop_managed_fields,
    ) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        """Open a watch from ``resource_version``; use as ``async with ... as events``.

        The server ends the stream after ``timeout_seconds``; the client gives up reading after
        ``timeout_seconds + watch_read_grace`` of silence (``KubeTimeout``), so a dead connection
        cannot leave a caller deaf for good (the informer notices silence much sooner, on its
        clock). An in-stream ERROR (e.g. 410 Gone) is raised as its ``ApiStatusError``; a stream
        ended by the server simply stops iterating. Sent over the watch pool, not rate-limited.
        """
        params = {
            "watch": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(timeout_seconds),
        }
        if allow_bookmarks:
            params["allowWatchBookmarks"] = "true"
        params.update(_selectors(label_selector, field_selector))
        timeout = httpx2.Timeout(
            self.settings.timeout, read=timeout_seconds + self.settings.watch_read_grace
        )
        response = await self._send(
            "watch",
            "GET",
            kind,
            namespace=namespace or "",
            params=params,
            subresource="",
            stream=True,
            timeouts=timeout,
            watch=True,
        )
        try:
            yield _watch_events(response, kind, projection)
        finally:
            await response.aclose()

    # ----------------------------------------------------------------- writes

    async def create(
        self, kind: Kind, body: Mapping[str, Any], *, namespace: str | None = None
    ) -> KubeObject:
        """POST a new object (``metadata.generateName`` allowed). ``AlreadyExists`` if taken."""
        ns = namespace if namespace is not None else _meta_str(body, "namespace")
        response = await self._write("create", "POST", kind, _typed(kind, dict(body)), namespace=ns)
        return _to_object(kind, _decode_object(response.content), drop_managed_fields)

    async def create_subresource(
        self, kind: Kind, key: ObjectKey, subresource: str, body: Mapping[str, Any]
    ) -> JsonObject:
        """POST to a subresource of an object (``pods/binding``, ``pods/eviction``); returns the
        decoded answer, which is often a Status rather than the object."""
        response = await self._write(
            "create",
            "POST",
            kind,
            dict(body),
            namespace=key.namespace,
            name=key.name,
            subresource=subresource,
        )
        return _decode_object(response.content)

    async def replace(self, kind: Kind, body: Mapping[str, Any]) -> KubeObject:
        """PUT a whole object; with ``metadata.resourceVersion`` it is an optimistic-lock write."""
        response = await self._write(
            "update",
            "PUT",
            kind,
            _typed(kind, dict(body)),
            namespace=_meta_str(body, "namespace"),
            name=_meta_str(body, "name"),
        )
        return _to_object(kind, _decode_object(response.content), drop_managed_fields)

    async def patch_merge(
        self, kind: Kind, key: ObjectKey, changes: Mapping[str, Any], *, status: bool = False
    ) -> KubeObject:
        """JSON merge patch (RFC 7386): maps merge, lists are replaced, ``None`` deletes."""
        return await self._patch(kind, key, changes, MERGE_PATCH, status=status)

    async def patch_json(
        self, kind: Kind, key: ObjectKey, ops: Sequence[JsonPatchOp], *, status: bool = False
    ) -> KubeObject:
        """JSON patch (RFC 6902). A failing ``test`` op raises ``Conflict``."""
        try:
            return await self._patch(kind, key, list(ops), JSON_PATCH, status=status)
        except Invalid as error:
            if any(op["op"] == "test" for op in ops) and _is_patch_application_error(error):
                # the server's 422 text ("rejected our request") would misread as a bad request
                raise Conflict(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {kind.resource_name} "{key.name}": the '
                    "object has been modified since it was read (a JSON patch test failed)",
                    error.details,
                ) from error
            raise

    async def patch_with_lock(
        self, obj: KubeObject, changes: Mapping[str, Any], *, status: bool = False
    ) -> KubeObject:
        """Merge-patch ``changes`` only if ``obj`` is unchanged since it was read.

        The patch carries ``metadata.resourceVersion`` of ``obj``; the server answers 409
        ``Conflict`` when the object has moved on (lifecycle.md L2). Use inside
        ``retry_on_conflict`` with a fresh read per attempt.
        """
        if not obj.resource_version:
            raise ValueError(f"{obj!r} has no resourceVersion to lock on")
        locked = copy.deepcopy(dict(changes))
        metadata = locked.get("metadata")
        metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
        metadata["resourceVersion"] = obj.resource_version
        locked["metadata"] = metadata
        return await self.patch_merge(obj.kind, obj.key, locked, status=status)

    async def delete(
        self,
        kind: Kind,
        key: ObjectKey,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
    ) -> KubeObject | None:
        """DELETE with ``DeleteOptions``; preconditions make a changed/replaced object a Conflict.

        Returns the object when the server still holds it (finalizers pending, graceful pod
        deletion), ``None`` when the answer is a ``Status`` (gone at once).
        """
        options: JsonObject = {"apiVersion": "v1", "kind": "DeleteOptions"}
        preconditions: JsonObject = {}
        if uid:
            preconditions["uid"] = uid
        if resource_version:
            preconditions["resourceVersion"] = resource_version
        if preconditions:
            options["preconditions"] = preconditions
        if propagation:
            options["propagationPolicy"] = propagation
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        response = await self._send(
            "delete",
            "DELETE",
            kind,
            namespace=key.namespace,
            name=key.name,
            body=_json_encode(options),
            content_type="application/json",
            subresource="",
        )
        if not response.content:
            return None
        body = _decode_object(response.content)
        if body.get("kind") == "Status":
            return None
        return _to_object(kind, body, drop_managed_fields)

    # -------------------------------------------------------------- transport

    async def _patch(
        self, kind: Kind, key: ObjectKey, patch: Any, content_type: str, *, status: bool
    ) -> KubeObject:
        if status and not kind.has_status:
            raise ValueError(f"{kind.kind} has no status subresource")
        response = await self._write(
            "patch",
            "PATCH",
            kind,
            patch,
            namespace=key.namespace,
            name=key.name,
            subresource="status" if status else "",
            content_type=content_type,
        )
        return _to_object(kind, _decode_object(response.content), drop_managed_fields)

    async def _write(
        self,
        verb: str,
        method: str,
        kind: Kind,
        payload: Any,
        *,
        namespace: str,
        name: str | None = None,
        subresource: str = "",
        content_type: str = "application/json",
    ) -> httpx2.Response:
        """Send ``payload`` JSON-encoded, as written by this client's field manager."""
        return await self._send(
            verb,
            method,
            kind,
            namespace=namespace,
            name=name,
            subresource=subresource,
            params={"fieldManager": self.settings.field_manager},
            body=_json_encode(payload),
            content_type=content_type,
        )

    async def _send(
        self,
        verb: str,
        method: str,
        kind: Kind,
        *,
        namespace: str,
        subresource: str,
        name: str | None = None,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        stream: bool = False,
        timeouts: httpx2.Timeout | None = None,
        watch: bool = False,
    ) -> httpx2.Response:
        if kind.namespaced and name is not None and not namespace:
            raise ValueError(f"{kind.kind} {name!r}: a namespaced object needs a namespace")
        self.access.record(
            Access(verb, kind.group, kind.plural, namespace if kind.namespaced else "", subresource)
        )
        path = resource_path(kind, namespace=namespace, name=name, subresource=subresource)
        return await self._send_raw(
            method,
            path,
            verb=verb,
            params=params,
            body=body,
            content_type=content_type,
            stream=stream,
            timeouts=timeouts,
            watch=watch,
        )

    async def _send_raw(
        self,
        method: str,
        path: str,
        *,
        verb: str | None,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        stream: bool = False,
        timeouts: httpx2.Timeout | None = None,
        watch: bool = False,
    ) -> httpx2.Response:
        http = self._watch_http if watch else self._http
        if not watch:
            waited = await self._throttle.take()
            if waited:
                self._metrics.client_throttle_seconds.inc(waited)
        headers = {"Content-Type": content_type} if content_type else None
        request = http.build_request(
            method,
            _absolute_url(http, path, params),
            content=body,
            headers=headers,
            timeout=timeouts if timeouts is not None else httpx2.USE_CLIENT_DEFAULT,
        )
        try:
            response = await http.send(request, stream=stream)
        except httpx2.HTTPError as error:
            self._metrics.client_requests.labels("<error>", method).inc()
            raise from_transport(error) from error
        code = response.status_code
        self._metrics.client_requests.labels(str(code), method).inc()
        if code >= 400:
            try:
                content = await response.aread()
            except httpx2.HTTPError:
                content = b""
            finally:
                await response.aclose()
            raise classify_response(code, response.headers, content)
        if not stream:
            await response.aread()
        return response


def _absolute_url(http: httpx2.AsyncClient, path: str, params: Mapping[str, str] | None) -> str:
    """``path`` under the client's base URL with ``params`` encoded, as one string: httpx2
    parses a whole URL once, where it parses a relative path and ``params`` again to merge them
    (66 of 495 µs per request in ``bench/results/kube_request_cpu.md``)."""
    base = str(http.base_url).rstrip("/")
    return f"{base}{path}?{urlencode(params)}" if params else f"{base}{path}"


def resource_path(
    kind: Kind, *, namespace: str = "", name: str | None = None, subresource: str = ""
) -> str:
    """The REST path for a kind (collection, object, or subresource)."""
    parts = ["/api/v1"] if not kind.group else [f"/apis/{kind.group}/{kind.version}"]
    if kind.namespaced and namespace:
        parts.append(f"/namespaces/{namespace}")
    parts.append(f"/{kind.plural}")
    if name is not None:
        if not name:
            raise ValueError(f"{kind.kind}: empty name")
        parts.append(f"/{name}")
        if subresource:
            parts.append(f"/{subresource}")
    return "".join(parts)


_PATCH_NOT_APPLICABLE = (
    # kube-apiserver's words for a JSON patch that cannot be applied (a failed ``test`` op,
    # or a path that no longer exists): a 422 with no field causes.
    "the server rejected our request due to an error in our request",
    "test failed",
    "testing value",
)


def _is_patch_application_error(error: Invalid) -> bool:
    """A 422 from applying the patch itself (not from validating the patched object)."""
    if error.details.get("causes"):
        return False
    return any(phrase in error.message for phrase in _PATCH_NOT_APPLICABLE)


def _selectors(label_selector: str | None, field_selector: str | None) -> dict[str, str]:
    """The query parameters of the selectors given (a list's or a watch's)."""
    params: dict[str, str] = {}
    if label_selector:
        params["labelSelector"] = label_selector
    if field_selector:
        params["fieldSelector"] = field_selector
    return params


def _meta_str(body: Mapping[str, Any], field_name: str) -> str:
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        value = metadata.get(field_name)
        if isinstance(value, str):
            return value
    return ""


@contextmanager
def _collector_paused(freeze: bool) -> Iterator[None]:
    """With ``freeze``: no cycle collection inside, and what was allocated is frozen after."""
    if not freeze:
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _decode_object(content: bytes) -> JsonObject:
    try:
        decoded = _json_decode(content)
    except msgspec.DecodeError as error:
        raise KubeResponseError(f"response is not JSON: {error}") from None
    if not isinstance(decoded, dict):
        raise KubeResponseError("response is not a JSON object")
    return decoded


def _typed(kind: Kind, raw: JsonObject) -> JsonObject:
    """``raw`` with ``apiVersion`` and ``kind`` filled in where it has none (in place)."""
    raw.setdefault("apiVersion", kind.api_version)
    raw.setdefault("kind", kind.kind)
    return raw


def _to_object(kind: Kind, raw: JsonObject, projection: Projection) -> KubeObject:
    return KubeObject(kind, projection(_typed(kind, raw)))


async def _watch_events(
    response: httpx2.Response, kind: Kind, projection: Projection
) -> AsyncIterator[WatchEvent]:
    try:
        async for line in response.aiter_lines():
            if not line.strip():
                continue
            try:
                event = _json_decode(line)
            except msgspec.DecodeError as error:
                raise KubeResponseError(f"watch of {kind.plural}: bad event: {error}") from None
            if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
                raise KubeResponseError(f"watch of {kind.plural}: event without object")
            event_type = str(event.get("type", ""))
            raw: JsonObject = event["object"]
            if event_type == "ERROR":
                raise classify_status(0, raw)
            if event_type == "BOOKMARK":
                yield WatchEvent(event_type, KubeObject(kind, raw))
            else:
                yield WatchEvent(event_type, _to_object(kind, raw, projection))
    except httpx2.HTTPError as error:
        raise from_transport(error) from error


__all__ = [
    "JSON_PATCH",
    "MERGE_PATCH",
    "ApiStatusError",
    "ClientSettings",
    "JsonPatchOp",
    "KubeClient",
    "ListPage",
    "ObjectList",
    "PropagationPolicy",
    "WatchEvent",
    "resource_path",
]
