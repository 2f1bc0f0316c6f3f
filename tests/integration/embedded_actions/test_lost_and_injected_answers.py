"""Two fault modes over raw HTTP: a lost response (the request is handled in full, then the
connection is cut with nothing sent) on every surface, and an injected answer with any status —
2xx included — and a raw body, in place of handling the request."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx2
import pytest
from tests.integration.embedded_actions.wire_client import (
    PAT,
    BrokerRunner,
    ScaleSetClient,
)
from tests.support.waiting import eventually

from scaleset.embedded.actions import FakeGitHub, Surface

LOST = (httpx2.RemoteProtocolError, httpx2.ReadError)
"""What a client sees when the server closes the connection without answering."""


@pytest.fixture(autouse=True)
def no_error_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """A deliberate fault is not a server error: nothing may log at ERROR (aiohttp's
    "Error handling request" traceback included)."""
    caplog.set_level(logging.DEBUG)
    yield
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [f"{r.name}: {r.getMessage()}" for r in errors]


class TestLostResponse:
    async def test_session_is_created_but_the_answer_never_arrives(
        self, org: ScaleSetClient, fake: FakeGitHub
    ) -> None:
        scale_set_id = await org.create_scale_set("arc")
        rule_id = fake.control.faults.drop_responses(
            1, surface=Surface.ACTIONS, method="POST", path_contains="/sessions"
        )
        with pytest.raises(LOST):
            await org.open_session(scale_set_id, owner="pod-a")
        truth = fake.control.snapshot()
        (session,) = truth.sessions
        assert session.scale_set_id == scale_set_id
        assert session.owner_name == "pod-a"
        (record,) = fake.control.requests_to("/sessions", "POST")
        assert (record.status, record.unsent_status) == (0, 200)
        (rule,) = [r for r in fake.control.faults.rules if r.id == rule_id]
        assert rule.spent
        again = await org.admin(
            "POST",
            f"_apis/runtime/runnerscalesets/{scale_set_id}/sessions",
            json={"ownerName": "pod-a"},
        )
        assert again.status_code == 409
        assert "SessionConflictException" in again.json()["typeName"]
        assert len(fake.control.snapshot().sessions) == 1

    async def test_jit_registration_happens_and_a_repeat_meets_agent_exists(
        self, org: ScaleSetClient, fake: FakeGitHub
    ) -> None:
        scale_set_id = await org.create_scale_set("arc")
        fake.control.faults.drop_responses(1, method="POST", path_contains="/generatejitconfig")
        with pytest.raises(LOST):
            await org.jit(scale_set_id, "runner-1")
        assert [r.name for r in fake.control.snapshot().registered_runners()] == ["runner-1"]
        repeat = await org.jit(scale_set_id, "runner-1")
        assert repeat.status_code == 409
        assert "AgentExistsException" in repeat.json()["typeName"]

    async def test_github_rest_registration_token_is_issued_unseen(
        self, org: ScaleSetClient, fake: FakeGitHub
    ) -> None:
        issued = len(fake.control.issued_secrets())
        fake.control.faults.drop_responses(1, surface=Surface.GITHUB)
        with pytest.raises(LOST):
            await org.http.post(
                f"{fake.api_url}/orgs/acme/actions/runners/registration-token",
                headers={"Authorization": f"Bearer {PAT}"},
            )
        assert len(fake.control.issued_secrets()) == issued + 1
        record = fake.control.requests_to("registration-token")[-1]
        assert (record.surface, record.status, record.unsent_status) == (Surface.GITHUB, 0, 201)

    async def test_message_delete_is_applied_so_the_message_is_not_redelivered(
        self, org: ScaleSetClient, fake: FakeGitHub
    ) -> None:
        session = await org.open_session(await org.create_scale_set("arc"))
        fake.control.queue_job(["arc"])
        message = (await session.poll()).json()
        fake.control.faults.drop_responses(1, surface=Surface.MESSAGE_QUEUE, method="DELETE")
        with pytest.raises(LOST):
            await session.delete(message["messageId"])
        (truth,) = fake.control.snapshot().sessions
        assert truth.deleted_messages == 1
        assert truth.undelivered_or_unacked_messages == 0
        assert (await session.poll(last_message_id=message["messageId"])).status_code == 202

    async def test_broker_session_opens_so_a_second_open_conflicts(
        self, org: ScaleSetClient, fake: FakeGitHub
    ) -> None:
        response = await org.jit(await org.create_scale_set("arc"), "runner-1")
        runner = BrokerRunner.from_jit(org.http, response.json()["encodedJITConfig"])
        fake.control.faults.drop_responses(1, surface=Surface.BROKER, path_contains="/session")
        with pytest.raises(LOST):
            await runner.open()
        (truth,) = fake.control.snapshot().runners
        assert truth.connected
        assert (await runner.open()).status_code == 409
        assert fake.control.snapshot().runners[0].session_rejections == ("conflict",)

    async def test_fires_n_times_only_on_matching_requests(
        self, org: ScaleSetClient, fake: FakeGitHub
    ) -> None:
        fake.control.faults.drop_responses(2, method="GET", path_contains="runnergroups")
        scale_sets = await org.admin("GET", "_apis/runtime/runnerscalesets", params={"name": "x"})
        assert scale_sets.status_code == 200
        for _ in range(2):
            with pytest.raises(LOST):
                await org.admin("GET", "_apis/runtime/runnergroups/")
        assert (await org.admin("GET", "_apis/runtime/runnergroups/")).status_code == 200
        statuses = [r.status for r in fake.control.requests_to("runnergroups")]
        assert statuses == [0, 0, 200]

    async def test_the_control_surface_is_never_dropped_and_serves_the_fault(
        self, org: ScaleSetClient, fake: FakeGitHub, control: httpx2.AsyncClient
    ) -> None:
        created = await control.post(
            "/faults",
            json={"kind": "drop_responses", "times": 1, "method": "POST", "surface": "actions"},
        )
        assert created.status_code == 201
        fake.control.faults.drop_responses(None)  # everything, forever — but not /_fake
        assert (await control.get("/state")).status_code == 200
        with pytest.raises(LOST):
            await org.admin("GET", "_apis/runtime/runnergroups/")
        assert (await control.delete("/faults")).status_code == 204
        assert (await org.admin("GET", "_apis/runtime/runnergroups/")).status_code == 200

    async def test_bad_times_is_refused(self, fake: FakeGitHub) -> None:
        with pytest.raises(ValueError, match="at least once"):
            fake.control.faults.drop_responses(0)


async def test_latency_past_the_client_timeout_leaves_the_request_unhandled(
    org: ScaleSetClient, fake: FakeGitHub
) -> None:
    """The contrast to a lost response: the client gave up before the fake read the body, so
    nothing happened — and the fake says so quietly (no ERROR traceback)."""
    scale_set_id = await org.create_scale_set("arc")
    fake.control.faults.add_latency(1.0, 1, method="POST", path_contains="/sessions")
    with pytest.raises(httpx2.ReadTimeout):
        await org.admin(
            "POST",
            f"_apis/runtime/runnerscalesets/{scale_set_id}/sessions",
            json={"ownerName": "pod-a"},
            timeout=httpx2.Timeout(5.0, read=0.1),
        )
    await eventually(
        lambda: bool(fake.control.requests_to("/sessions")),
        within=10.0,
        what="the held request to end",
    )
    (record,) = fake.control.requests_to("/sessions")
    assert (record.status, record.unsent_status) == (0, None)
    assert fake.control.snapshot().sessions == ()


class TestInjectedAnswer:
    async def test_200_with_a_json_body_instead_of_the_delete(
        self, org: ScaleSetClient, fake: FakeGitHub
    ) -> None:
        session = await org.open_session(await org.create_scale_set("arc"))
        fake.control.queue_job(["arc"])
        message = (await session.poll()).json()
        fake.control.faults.fail_next(
            1,
            200,
            body='{"unexpected": true}',
            content_type="application/json",
            surface=Surface.MESSAGE_QUEUE,
            method="DELETE",
        )
        deleted = await session.delete(message["messageId"])
        assert deleted.status_code == 200
        assert deleted.headers["Content-Type"] == "application/json"
        assert deleted.content == b'{"unexpected": true}'
        # Answered instead of handled: the message was not deleted and comes again.
        assert (await session.poll()).json()["messageId"] == message["messageId"]

    async def test_2xx_without_a_body_is_empty_and_text_is_the_default_type(
        self, org: ScaleSetClient, fake: FakeGitHub
    ) -> None:
        fake.control.faults.fail_next(1, 202, path_contains="runnergroups")
        fake.control.faults.fail_next(1, 200, body="plain words", path_contains="runnergroups")
        empty = await org.admin("GET", "_apis/runtime/runnergroups/")
        assert (empty.status_code, empty.content) == (202, b"")
        text = await org.admin("GET", "_apis/runtime/runnergroups/")
        assert text.status_code == 200
        assert text.headers["Content-Type"].startswith("text/plain")
        assert text.text == "plain words"

    async def test_over_http_control(
        self, org: ScaleSetClient, control: httpx2.AsyncClient
    ) -> None:
        created = await control.post(
            "/faults",
            json={
                "kind": "status",
                "status": 200,
                "body": "[1]",
                "contentType": "application/json",
                "pathContains": "runnergroups",
            },
        )
        assert created.status_code == 201
        answered = await org.admin("GET", "_apis/runtime/runnergroups/")
        assert (answered.status_code, answered.json()) == (200, [1])
        refused = await control.post("/faults", json={"kind": "status", "status": 100})
        assert refused.status_code == 400
        no_body = await control.post(
            "/faults", json={"kind": "status", "status": 200, "contentType": "text/html"}
        )
        assert no_body.status_code == 400
