"""httpx2 transport wrappers for tests (lightkube's HTTP stack is httpx2).

- ``ImpersonatingTransport`` adds ``Impersonate-User`` / ``Impersonate-Group`` headers, so a client
  holding the admin token acts as a ServiceAccount and RBAC is enforced for real.
- ``InterceptingTransport`` runs a ``RequestHook`` just before forwarding a matching request: the
  client-side fault hook that lets read-modify-write race tests (a conflicting write between a
  client's read and its write) run against a real kube-apiserver as well as the embedded one.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import httpx2

SERVICE_ACCOUNT_GROUP = "system:serviceaccounts"
AUTHENTICATED_GROUP = "system:authenticated"


@dataclass(frozen=True)
class ServiceAccountRef:
    """A ServiceAccount to act as."""

    namespace: str
    name: str

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    @property
    def groups(self) -> tuple[str, ...]:
        """The groups the API server gives a ServiceAccount's token."""
        return (
            SERVICE_ACCOUNT_GROUP,
            f"{SERVICE_ACCOUNT_GROUP}:{self.namespace}",
            AUTHENTICATED_GROUP,
        )


class ImpersonatingTransport(httpx2.AsyncBaseTransport):
    """Forward every request as ``user`` (with ``groups``) through the API server's
    impersonation headers; the credentials on the request must be allowed to impersonate."""

    def __init__(
        self, inner: httpx2.AsyncBaseTransport, user: str, groups: Sequence[str] = ()
    ) -> None:
        self._inner = inner
        self._user = user
        self._groups = tuple(groups)

    @classmethod
    def as_service_account(
        cls, inner: httpx2.AsyncBaseTransport, account: ServiceAccountRef
    ) -> ImpersonatingTransport:
        return cls(inner, account.username, account.groups)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        # one Impersonate-Group header per group: the API server does not split on commas
        kept = [
            (key, value)
            for key, value in request.headers.multi_items()
            if key.lower() not in ("impersonate-user", "impersonate-group")
        ]
        impersonation = [("Impersonate-User", self._user)]
        impersonation += [("Impersonate-Group", group) for group in self._groups]
        request.headers = httpx2.Headers([*kept, *impersonation])
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


RequestAction = Callable[[httpx2.Request], Awaitable[None]]


@dataclass
class RequestHook:
    """Run ``action`` before forwarding the first ``times`` requests that match ``method`` and
    whose URL path matches ``path`` (a regular expression, searched).

    ``fired`` counts how often it ran, so a test can assert that its race really happened."""

    method: str
    path: str
    action: RequestAction
    times: int = 1
    fired: int = field(default=0, init=False)

    def matches(self, request: httpx2.Request) -> bool:
        return (
            self.fired < self.times
            and request.method.upper() == self.method.upper()
            and re.search(self.path, request.url.path) is not None
        )


class InterceptingTransport(httpx2.AsyncBaseTransport):
    """Run the first matching ``RequestHook`` (in order) before forwarding a request."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, hooks: Sequence[RequestHook]) -> None:
        self._inner = inner
        self._hooks = list(hooks)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        for hook in self._hooks:
            if hook.matches(request):
                hook.fired += 1
                await hook.action(request)
                break
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
