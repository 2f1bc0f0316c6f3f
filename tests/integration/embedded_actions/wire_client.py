"""A deliberately small, hand-written client for the fake's tests: raw httpx2 calls that spell the
protocol out (spec §1, §2, §4) so every test shows exactly what goes over the wire."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx2
import jwt

from scaleset.embedded.actions import FakeGitHub, decode_jit_config

PAT = "ghp_fakeTestToken0123456789"
API_VERSION = {"api-version": "6.0-preview"}


def app_jwt(
    private_key_pem: str, issuer: str, now: float, *, iat_skew: float = 60, lifetime: float = 540
) -> str:
    """A GitHub App JWT (RS256; ``iat`` backdated by ``iat_skew``, ``exp`` ``lifetime`` later)."""
    iat = int(now - iat_skew)
    return jwt.encode(
        {"iat": iat, "exp": int(iat + lifetime), "iss": issuer}, private_key_pem, algorithm="RS256"
    )


@dataclass
class ScaleSetClient:
    http: httpx2.AsyncClient
    fake: FakeGitHub
    config_url: str
    tenant_url: str
    admin_token: str

    @classmethod
    async def register(
        cls, http: httpx2.AsyncClient, fake: FakeGitHub, config_url: str, pat: str = PAT
    ) -> ScaleSetClient:
        scope = config_url.removeprefix(fake.base_url + "/").strip("/")
        if scope.startswith("enterprises/"):
            path = f"/enterprises/{scope.split('/', 1)[1]}"
        elif "/" in scope:
            path = f"/repos/{scope}"
        else:
            path = f"/orgs/{scope}"
        reg = await http.post(
            f"{fake.api_url}{path}/actions/runners/registration-token",
            headers={"Authorization": f"Bearer {pat}"},
        )
        assert reg.status_code == 201, reg.text
        tenant = await http.post(
            f"{fake.api_url}/actions/runner-registration",
            headers={"Authorization": f"RemoteAuth {reg.json()['token']}"},
            json={"url": config_url, "runner_event": "register"},
        )
        assert tenant.status_code == 201, tenant.text
        body = tenant.json()
        return cls(http, fake, config_url, body["url"], body["token"])

    async def admin(
        self, method: str, path: str, *, params: dict[str, Any] | None = None, **kwargs: Any
    ) -> httpx2.Response:
        return await self.http.request(
            method,
            self.tenant_url + path,
            params={**API_VERSION, **(params or {})},
            headers={"Authorization": f"Bearer {self.admin_token}"},
            **kwargs,
        )

    async def create_scale_set(self, name: str, labels: list[str] | None = None) -> int:
        response = await self.admin(
            "POST",
            "_apis/runtime/runnerscalesets",
            json={
                "name": name,
                "runnerGroupId": 1,
                "labels": [{"name": label, "type": "System"} for label in labels or [name]],
                "RunnerSetting": {"disableUpdate": True},
            },
        )
        assert response.status_code == 200, response.text
        return int(response.json()["id"])

    async def jit(self, scale_set_id: int, name: str) -> httpx2.Response:
        return await self.admin(
            "POST",
            f"_apis/runtime/runnerscalesets/{scale_set_id}/generatejitconfig",
            json={"name": name, "workFolder": ""},
        )

    async def open_session(self, scale_set_id: int, owner: str = "listener") -> Session:
        response = await self.admin(
            "POST",
            f"_apis/runtime/runnerscalesets/{scale_set_id}/sessions",
            json={"ownerName": owner},
        )
        assert response.status_code == 200, response.text
        return Session(self, scale_set_id, response.json())


@dataclass
class Session:
    """A listener's message session, as raw calls."""

    client: ScaleSetClient
    scale_set_id: int
    body: dict[str, Any]
    last_message_id: int = 0
    seen: list[dict[str, Any]] = field(default_factory=list)

    @property
    def queue_url(self) -> str:
        return str(self.body["messageQueueUrl"])

    @property
    def token(self) -> str:
        return str(self.body["messageQueueAccessToken"])

    def _mq_headers(self, capacity: int | None = 10) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json; api-version=6.0-preview",
        }
        if capacity is not None:
            headers["X-ScaleSetMaxCapacity"] = str(capacity)
        return headers

    async def poll(
        self, last_message_id: int | None = None, capacity: int | None = 10
    ) -> httpx2.Response:
        url = httpx2.URL(self.queue_url)
        last = self.last_message_id if last_message_id is None else last_message_id
        if last > 0:
            url = url.copy_add_param("lastMessageId", str(last))
        return await self.client.http.get(url, headers=self._mq_headers(capacity))

    async def delete(self, message_id: int) -> httpx2.Response:
        url = httpx2.URL(self.queue_url)
        url = url.copy_with(path=f"{url.path}/{message_id}")
        return await self.client.http.delete(url, headers=self._mq_headers())

    async def next_batch(
        self, capacity: int | None = 10
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Poll, parse the double-encoded body, delete the message; returns (message, jobs)."""
        response = await self.poll(capacity=capacity)
        assert response.status_code == 200, (response.status_code, response.text)
        message = response.json()
        jobs = json.loads(message["body"]) if message["body"] else []
        self.last_message_id = message["messageId"]
        deleted = await self.delete(message["messageId"])
        assert deleted.status_code == 204, deleted.text
        self.seen.extend(jobs)
        return message, jobs

    async def refresh(self) -> httpx2.Response:
        response = await self.client.admin(
            "PATCH",
            f"_apis/runtime/runnerscalesets/{self.scale_set_id}/sessions/{self.body['sessionId']}",
        )
        if response.status_code == 200:
            self.body = response.json()
        return response

    async def close(self) -> httpx2.Response:
        return await self.client.admin(
            "DELETE",
            f"_apis/runtime/runnerscalesets/{self.scale_set_id}/sessions/{self.body['sessionId']}",
        )

    async def acquire(self, ids: list[int]) -> httpx2.Response:
        return await self.client.http.post(
            self.client.tenant_url
            + f"_apis/runtime/runnerscalesets/{self.scale_set_id}/acquirejobs",
            params=API_VERSION,
            headers={"Authorization": f"Bearer {self.token}"},
            json=ids,
        )


@dataclass
class BrokerRunner:
    """A runner process spoken by hand: the fake's runner-side (broker) endpoints."""

    http: httpx2.AsyncClient
    broker_url: str
    credential: str = field(repr=False)
    session_id: str = ""

    @classmethod
    def from_jit(cls, http: httpx2.AsyncClient, encoded_jit_config: str) -> BrokerRunner:
        config = decode_jit_config(encoded_jit_config)
        return cls(http, config.broker_url, config.credential)

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.credential}"}

    async def open(self) -> httpx2.Response:
        response = await self.http.post(
            self.broker_url + "session", headers=self._headers(), json={}
        )
        if response.status_code == 200:
            self.session_id = response.json()["sessionId"]
        return response

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        return await self.http.request(
            method,
            self.broker_url + path,
            params={"sessionId": self.session_id},
            headers=self._headers(),
            **kwargs,
        )

    async def take_job(self) -> dict[str, Any]:
        response = await self.call("GET", "message")
        assert response.status_code == 200, (response.status_code, response.text)
        return dict(json.loads(response.json()["body"]))
