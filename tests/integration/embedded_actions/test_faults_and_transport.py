"""Fault injection, byte-order marks, TLS and the HTTP control endpoint of the fake."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator

import httpx2
import pytest
import trustme
from tests.integration.embedded_actions.wire_client import PAT, ScaleSetClient

from scaleset.clock import ManualClock
from scaleset.embedded.actions import DropMode, FakeGitHub, Surface

BOM = b"\xef\xbb\xbf"


async def test_a_5xx_burst_then_success(org: ScaleSetClient, fake: FakeGitHub) -> None:
    fake.control.faults.fail_next(3, 500, surface=Surface.ACTIONS, path_contains="runnergroups")
    statuses = [
        (await org.admin("GET", "_apis/runtime/runnergroups/")).status_code for _ in range(4)
    ]
    assert statuses == [500, 500, 500, 200]
    assert [r.status for r in fake.control.requests_to("runnergroups")] == statuses


async def test_faults_only_hit_matching_requests(org: ScaleSetClient, fake: FakeGitHub) -> None:
    fake.control.faults.fail_next(1, 502, method="POST")
    assert (await org.admin("GET", "_apis/runtime/runnergroups/")).status_code == 200
    assert (
        await org.admin("POST", "_apis/runtime/runnerscalesets", json={"name": "a"})
    ).status_code == 502


async def test_429_and_503_carry_retry_after(org: ScaleSetClient, fake: FakeGitHub) -> None:
    fake.control.faults.rate_limit(1, retry_after_seconds=7)
    fake.control.faults.unavailable(1, retry_after_seconds=3)
    limited = await org.admin("GET", "_apis/runtime/runnergroups/")
    assert limited.status_code == 429
    assert limited.headers["Retry-After"] == "7"
    unavailable = await org.admin("GET", "_apis/runtime/runnergroups/")
    assert unavailable.status_code == 503
    assert unavailable.headers["Retry-After"] == "3"
    assert unavailable.headers["Content-Type"].startswith("text/plain")


async def test_latency_rule_fires_and_the_request_still_succeeds(
    org: ScaleSetClient, fake: FakeGitHub
) -> None:
    rule_id = fake.control.faults.add_latency(0.01, times=1)
    assert (await org.admin("GET", "_apis/runtime/runnergroups/")).status_code == 200
    (rule,) = [r for r in fake.control.faults.rules if r.id == rule_id]
    assert rule.hits == 1
    assert rule.spent


async def test_dropped_polls_then_delivery(org: ScaleSetClient, fake: FakeGitHub) -> None:
    session = await org.open_session(await org.create_scale_set("arc"))
    fake.control.queue_job(["arc"])
    fake.control.drop_polls(1, DropMode.EMPTY)
    assert (await session.poll()).status_code == 202
    assert (await session.poll()).status_code == 200


async def test_a_disconnected_poll_is_redelivered(org: ScaleSetClient, fake: FakeGitHub) -> None:
    session = await org.open_session(await org.create_scale_set("arc"))
    fake.control.queue_job(["arc"])
    fake.control.drop_polls(1, DropMode.DISCONNECT)
    with pytest.raises(httpx2.RemoteProtocolError):
        await session.poll()
    message = (await session.poll()).json()
    assert message["messageId"] == 1


async def test_stale_statistics(org: ScaleSetClient, fake: FakeGitHub) -> None:
    session = await org.open_session(await org.create_scale_set("arc"))
    fake.control.set_stale_statistics(True)
    fake.control.queue_job(["arc"])
    message, _ = await session.next_batch()
    assert message["statistics"]["totalAssignedJobs"] == 0
    assert fake.control.snapshot().scale_sets[0].statistics.total_assigned_jobs == 1
    fake.control.set_stale_statistics(False)
    fake.control.queue_job(["arc"])
    message, _ = await session.next_batch()
    assert message["statistics"]["totalAssignedJobs"] == 2


@pytest.mark.parametrize("surface", [Surface.GITHUB, Surface.ACTIONS, Surface.MESSAGE_QUEUE])
async def test_bom_on_bodies(org: ScaleSetClient, fake: FakeGitHub, surface: Surface) -> None:
    session = await org.open_session(await org.create_scale_set("arc"))
    fake.control.queue_job(["arc"])
    fake.control.faults.set_bom(True, {surface})
    if surface is Surface.GITHUB:
        response = await org.http.post(
            f"{fake.api_url}/orgs/acme/actions/runners/registration-token",
            headers={"Authorization": f"Bearer {PAT}"},
        )
    elif surface is Surface.ACTIONS:
        response = await org.admin("GET", "_apis/runtime/runnergroups/")
    else:
        response = await session.poll()
    assert response.content.startswith(BOM)
    other = (
        await org.admin("GET", "_apis/runtime/runnergroups/")
        if surface is not Surface.ACTIONS
        else await session.poll(last_message_id=99)
    )
    assert not other.content.startswith(BOM)
    fake.control.faults.set_bom(False)
    assert not (await org.admin("GET", "_apis/runtime/runnergroups/")).content.startswith(BOM)


async def test_bom_on_error_bodies_too(org: ScaleSetClient, fake: FakeGitHub) -> None:
    fake.control.faults.set_bom(True)
    response = await org.admin("GET", "_apis/runtime/runnerscalesets/404")
    assert response.status_code == 404
    assert response.content.startswith(BOM)


class TestTls:
    @pytest.fixture
    async def tls_fake(self, clock: ManualClock) -> AsyncIterator[tuple[FakeGitHub, trustme.CA]]:
        ca = trustme.CA()
        server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1").configure_cert(server_context)
        async with FakeGitHub(
            clock=clock, ssl_context=server_context, poll_hold_seconds=0.05
        ) as fake:
            fake.add_pat(PAT)
            yield fake, ca

    async def test_https_with_the_test_ca(self, tls_fake: tuple[FakeGitHub, trustme.CA]) -> None:
        fake, ca = tls_fake
        assert fake.base_url.startswith("https://")
        client_context = ssl.create_default_context()
        ca.configure_trust(client_context)
        async with httpx2.AsyncClient(verify=client_context) as http:
            client = await ScaleSetClient.register(http, fake, fake.config_url("acme"))
            assert client.tenant_url.startswith("https://")
            session = await client.open_session(await client.create_scale_set("arc"))
            assert session.queue_url.startswith("https://")
            assert (await session.poll()).status_code == 202

    async def test_unknown_ca_is_refused(self, tls_fake: tuple[FakeGitHub, trustme.CA]) -> None:
        fake, _ = tls_fake
        async with httpx2.AsyncClient() as http:
            with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await http.post(f"{fake.api_url}/orgs/acme/actions/runners/registration-token")


class TestRestRunnersList:
    async def test_pagination_and_link_header(self, org: ScaleSetClient, fake: FakeGitHub) -> None:
        scale_set_id = await org.create_scale_set("arc")
        for index in range(5):
            assert (await org.jit(scale_set_id, f"arc-runner-{index}")).status_code == 200
        url = f"{fake.api_url}/orgs/acme/actions/runners"
        headers = {"Authorization": f"Bearer {PAT}"}
        names: list[str] = []
        next_url: str | None = url + "?per_page=2"
        pages = 0
        while next_url:
            response = await org.http.get(next_url, headers=headers)
            assert response.status_code == 200
            body = response.json()
            assert body["total_count"] == 5
            names += [runner["name"] for runner in body["runners"]]
            next_url = response.links.get("next", {}).get("url")
            pages += 1
        assert pages == 3
        assert names == [f"arc-runner-{i}" for i in range(5)]
        last = await org.http.get(url, params={"per_page": 2, "page": 3}, headers=headers)
        assert 'rel="prev"' in last.headers["Link"]
        runner = last.json()["runners"][0]
        assert runner["status"] == "offline"
        assert runner["busy"] is False
        assert runner["labels"][0]["name"] == "arc"
        beyond = await org.http.get(url, params={"per_page": 2, "page": 9}, headers=headers)
        assert beyond.json()["runners"] == []

    async def test_name_filter_scope_and_auth(self, org: ScaleSetClient, fake: FakeGitHub) -> None:
        scale_set_id = await org.create_scale_set("arc")
        await org.jit(scale_set_id, "one")
        await org.jit(scale_set_id, "two")
        headers = {"Authorization": f"Bearer {PAT}"}
        filtered = await org.http.get(
            f"{fake.api_url}/orgs/acme/actions/runners", params={"name": "two"}, headers=headers
        )
        assert [r["name"] for r in filtered.json()["runners"]] == ["two"]
        repo = await org.http.get(f"{fake.api_url}/repos/acme/app/actions/runners", headers=headers)
        assert repo.json() == {"total_count": 0, "runners": []}
        unauthorized = await org.http.get(f"{fake.api_url}/orgs/acme/actions/runners")
        assert unauthorized.status_code == 401

    async def test_per_page_is_capped_at_100(self, org: ScaleSetClient, fake: FakeGitHub) -> None:
        scale_set_id = await org.create_scale_set("arc")
        for index in range(101):
            fake.control.generate_jit_config(scale_set_id, f"r{index}")
        response = await org.http.get(
            f"{fake.api_url}/orgs/acme/actions/runners",
            params={"per_page": 500},
            headers={"Authorization": f"Bearer {PAT}"},
        )
        assert len(response.json()["runners"]) == 100
        assert 'rel="next"' in response.headers["Link"]


async def test_nulls_are_sent_where_asked_inside_encoded_bodies_too(
    org: ScaleSetClient, fake: FakeGitHub
) -> None:
    scale_set_id = await org.create_scale_set("arc")
    fake.control.faults.send_nulls({"runnerGroupName", "totalAssignedJobs"}, times=1)
    scale_set = (await org.admin("GET", f"_apis/runtime/runnerscalesets/{scale_set_id}")).json()
    assert scale_set["runnerGroupName"] is None
    assert scale_set["statistics"]["totalAssignedJobs"] is None
    assert scale_set["statistics"]["totalIdleRunners"] == 0  # only the named members
    again = (await org.admin("GET", f"_apis/runtime/runnerscalesets/{scale_set_id}")).json()
    assert again["runnerGroupName"] == "Default"  # the rule fired once

    session = await org.open_session(scale_set_id)
    request_id = fake.control.queue_job(["arc"])
    fake.control.faults.send_nulls({"jobDisplayName"}, surface=Surface.MESSAGE_QUEUE)
    message = (await session.poll()).json()
    (entry,) = json.loads(message["body"])
    assert (entry["runnerRequestId"], entry["jobDisplayName"]) == (request_id, None)


async def test_a_late_answer_is_processed_before_it_is_held(
    org: ScaleSetClient, fake: FakeGitHub
) -> None:
    scale_set_id = await org.create_scale_set("arc")
    fake.control.faults.delay_answers(1.0, 1, path_contains="/generatejitconfig")
    with pytest.raises(httpx2.ReadTimeout):
        await org.admin(
            "POST",
            f"_apis/runtime/runnerscalesets/{scale_set_id}/generatejitconfig",
            json={"name": "r1", "workFolder": ""},
            timeout=httpx2.Timeout(5.0, read=0.2),
        )
    (runner,) = fake.control.snapshot().registered_runners(scale_set_id)
    assert runner.name == "r1"


async def test_injected_answers_carry_headers_and_secondary_rate_limits_are_403(
    org: ScaleSetClient, fake: FakeGitHub
) -> None:
    fake.control.faults.fail_next(1, 403, headers={"x-ratelimit-remaining": "0"})
    limited = await org.admin("GET", "_apis/runtime/runnergroups/")
    assert (limited.status_code, limited.headers["x-ratelimit-remaining"]) == (403, "0")
    fake.control.faults.secondary_rate_limit(1, 42, surface=None)
    secondary = await org.admin("GET", "_apis/runtime/runnergroups/")
    assert (secondary.status_code, secondary.headers["Retry-After"]) == (403, "42")
    assert "secondary rate limit" in secondary.json()["message"]


class TestControlEndpoint:
    async def test_drive_and_observe_over_http(
        self, org: ScaleSetClient, fake: FakeGitHub, control: httpx2.AsyncClient
    ) -> None:
        http, base = control, ""
        created = await http.post(
            base + "/scale-sets", json={"configUrl": org.config_url, "name": "arc"}
        )
        assert created.status_code == 201
        scale_set_id = created.json()["id"]
        session = await org.open_session(scale_set_id)
        queued = await http.post(base + "/jobs", json={"labels": ["arc"], "durationSeconds": 5})
        assert queued.status_code == 201
        request_id = queued.json()["runnerRequestId"]
        state = (await http.get(base + "/state")).json()
        (job,) = state["jobs"]
        assert job["request_id"] == request_id
        assert job["state"] == "assigned"
        assert state["scale_sets"][0]["statistics"]["totalAssignedJobs"] == 1
        assert state["sessions"][0]["scale_set_id"] == scale_set_id
        cancel = await http.post(base + f"/jobs/{request_id}/cancel")
        assert cancel.json() == {"canceled": True}
        fault = await http.post(
            base + "/faults", json={"kind": "status", "status": 503, "surface": "mq"}
        )
        assert fault.status_code == 201
        assert (await session.poll()).status_code == 503
        token = await http.post(base + f"/scale-sets/{scale_set_id}/session/expire-token")
        assert token.json() == {"expired": True}
        assert (await session.poll()).status_code == 401
        expired = await http.post(base + f"/scale-sets/{scale_set_id}/session/expire")
        assert expired.json() == {"expired": True}
        assert (await http.get(base + "/state")).json()["sessions"] == []

    async def test_runner_deletion_and_errors(
        self, org: ScaleSetClient, fake: FakeGitHub, control: httpx2.AsyncClient
    ) -> None:
        http, base = control, ""
        runner = fake.control.generate_jit_config(await org.create_scale_set("arc"), "r1")
        assert (await http.delete(base + f"/runners/{runner.id}")).status_code == 204
        assert (await http.get(base + "/state")).json()["runners"][0]["registered"] is False
        assert (await http.delete(base + "/runners/999")).status_code == 404
        bad = await http.post(base + "/jobs", json={"labels": []})
        assert bad.status_code == 400
        assert "error" in bad.json()
        unknown = await http.post(base + "/faults", json={"kind": "earthquake"})
        assert unknown.status_code == 400
        no_fields = await http.post(base + "/faults", json={"kind": "nulls", "fields": []})
        assert no_fields.status_code == 400
        bad_headers = await http.post(
            base + "/faults", json={"kind": "status", "status": 500, "headers": {"a": 1}}
        )
        assert bad_headers.status_code == 400

    async def test_nulls_late_answers_and_rate_limits_over_http(
        self, org: ScaleSetClient, fake: FakeGitHub, control: httpx2.AsyncClient
    ) -> None:
        http, base = control, ""
        rules = [
            {"kind": "nulls", "fields": ["runnerGroupName"], "surface": "actions"},
            {"kind": "late_answers", "seconds": 0.01, "pathContains": "/runnergroups"},
            {"kind": "secondary_rate_limit", "retryAfterSeconds": 9, "surface": "github"},
            {"kind": "status", "status": 429, "headers": {"x-ratelimit-remaining": "0"}},
        ]
        for rule in rules:
            assert (await http.post(base + "/faults", json=rule)).status_code == 201
        kinds = sorted(rule.kind.value for rule in fake.control.faults.rules)
        assert kinds == ["late_answer", "nulls", "status", "status"]
        limited = await org.admin("GET", "_apis/runtime/runnergroups/")
        assert (limited.status_code, limited.headers["x-ratelimit-remaining"]) == (429, "0")

    async def test_pat_bom_stale_statistics_and_ledger(
        self, org: ScaleSetClient, fake: FakeGitHub, control: httpx2.AsyncClient
    ) -> None:
        http, base = control, ""
        assert (await http.post(base + "/pats", json={"token": "ghp_added"})).status_code == 204
        reg = await http.post(
            f"{fake.api_url}/orgs/acme/actions/runners/registration-token",
            headers={"Authorization": "Bearer ghp_added"},
        )
        assert reg.status_code == 201
        assert (await http.post(base + "/faults", json={"kind": "bom"})).status_code == 204
        assert (await org.admin("GET", "_apis/runtime/runnergroups/")).content.startswith(BOM)
        assert not (await http.get(base + "/state")).content.startswith(BOM)
        assert (await http.delete(base + "/faults")).status_code == 204
        assert not (await org.admin("GET", "_apis/runtime/runnergroups/")).content.startswith(BOM)
        stale = await http.post(base + "/faults", json={"kind": "stale_statistics"})
        assert stale.status_code == 204
        assert fake.service.statistics_frozen
        ledger = (await http.get(base + "/ledger")).json()
        assert any(e["kind"] == "ASSUMPTION" for e in ledger)

    async def test_unknown_paths_have_the_surface_shape(
        self, org: ScaleSetClient, fake: FakeGitHub
    ) -> None:
        github = await org.http.get(fake.api_url + "/nope")
        assert github.status_code == 404
        assert github.json()["message"] == "Not Found"
        actions = await org.admin("GET", "_apis/nope")
        assert actions.status_code == 404
        assert "typeName" in actions.json()
        wrong_method = await org.admin("PUT", "_apis/runtime/runnergroups/")
        assert wrong_method.status_code == 405


async def test_a_throttle_answers_like_a_secondary_rate_limit_once_its_bucket_is_empty(
    org: ScaleSetClient, fake: FakeGitHub, clock: ManualClock
) -> None:
    scale_set_id = await org.create_scale_set("arc")
    fake.control.faults.throttle(2.0, burst=2, path_contains="/generatejitconfig")
    statuses = [(await org.jit(scale_set_id, f"r{i}")).status_code for i in range(3)]
    assert statuses == [200, 200, 403]
    refused = await org.jit(scale_set_id, "r3")
    assert (refused.status_code, refused.headers["Retry-After"]) == (403, "1")
    assert "secondary rate limit" in refused.json()["message"]
    assert (await org.admin("GET", "_apis/runtime/runnergroups/")).status_code == 200
    clock.advance(0.5)
    assert (await org.jit(scale_set_id, "r3")).status_code == 200
    assert (await org.jit(scale_set_id, "r4")).status_code == 403
    (rule,) = fake.control.faults.rules
    assert rule.hits == 3
