"""A request hook for tests that count a client's requests: each request (watches aside)
appended to a list as ``"<METHOD> <resource>/<name>"``, the namespace path stripped."""

from __future__ import annotations

import re
from collections.abc import Sequence

import httpx2

from scaleset.devtools.transports import RequestHook


def request_log(requests: list[str], methods: Sequence[str] = ("GET",)) -> list[RequestHook]:
    """Hooks that append each request of ``methods`` to ``requests``, in order."""

    async def record(request: httpx2.Request) -> None:
        if request.url.params.get("watch") is not None:
            return
        path = re.sub(r"^/apis?/([^/]+/)?v1(alpha1)?/namespaces/[^/]+/", "", request.url.path)
        requests.append(f"{request.method} {path}")

    return [RequestHook(method, ".*", record, times=10**9) for method in methods]
