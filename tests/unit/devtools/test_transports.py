"""Transport wrappers: impersonation headers, and hooks that run before matching requests."""

from __future__ import annotations

import httpx2

from scaleset.devtools.transports import (
    ImpersonatingTransport,
    InterceptingTransport,
    RequestHook,
    ServiceAccountRef,
)


class Recorder(httpx2.AsyncBaseTransport):
    """Stands in for the network: records what would be sent and answers 200."""

    def __init__(self) -> None:
        self.sent: list[httpx2.Request] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(request)
        return httpx2.Response(200, json={})


async def test_impersonation_sends_user_and_one_header_per_group() -> None:
    recorder = Recorder()
    account = ServiceAccountRef("arc-systems", "scaleset-controller")
    transport = ImpersonatingTransport.as_service_account(recorder, account)

    async with httpx2.AsyncClient(transport=transport, base_url="http://k") as client:
        await client.get("/api/v1/pods", headers={"Impersonate-Group": "smuggled"})

    headers = recorder.sent[0].headers
    assert headers["Impersonate-User"] == "system:serviceaccount:arc-systems:scaleset-controller"
    assert headers.get_list("Impersonate-Group") == [
        "system:serviceaccounts",
        "system:serviceaccounts:arc-systems",
        "system:authenticated",
    ]


async def test_hook_runs_before_the_matching_request_only_the_given_times() -> None:
    recorder = Recorder()
    order: list[str] = []

    async def action(request: httpx2.Request) -> None:
        order.append(f"hook {request.method} (sent so far: {len(recorder.sent)})")

    hook = RequestHook(method="PATCH", path=r"/widgets/w$", action=action, times=1)
    transport = InterceptingTransport(recorder, [hook])

    async with httpx2.AsyncClient(transport=transport, base_url="http://k") as client:
        await client.get("/apis/g/v1/namespaces/n/widgets/w")
        await client.patch("/apis/g/v1/namespaces/n/widgets/other")
        await client.patch("/apis/g/v1/namespaces/n/widgets/w")
        await client.patch("/apis/g/v1/namespaces/n/widgets/w")

    assert hook.fired == 1
    assert order == ["hook PATCH (sent so far: 2)"]
    assert len(recorder.sent) == 4
