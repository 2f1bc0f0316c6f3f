"""Spec §8 end to end, as the fake should see it: GitHub App auth, registration, runner
registration, a scale set, the listener session, a job through a simulated runner, the runner's
removal, the session's deletion — plus the fake-level behaviours around it (outage by restart,
App registration over the control endpoint, the assumptions a run relied on)."""

from __future__ import annotations

import asyncio
import json

import httpx2
import jwt
from tests.integration.embedded_actions.wire_client import API_VERSION, app_jwt
from tests.support.waiting import eventually

from scaleset.clock import ManualClock
from scaleset.embedded.actions import FakeGitHub, JobState
from scaleset.embedded.runner import run_runner


def control(fake: FakeGitHub) -> dict[str, str]:
    """The header the fake's control API wants."""
    return {"Authorization": f"Bearer {fake.control_token}"}


async def test_section_8_happy_path(
    fake: FakeGitHub, clock: ManualClock, http: httpx2.AsyncClient
) -> None:
    app = fake.add_github_app(app_id="123", installation_id=42)
    # 1. installation token
    installation = await http.post(
        f"{fake.api_url}/app/installations/42/access_tokens",
        headers={
            "Authorization": f"Bearer {app_jwt(app.private_key_pem, '123', clock.time())}",
            "Content-Type": "application/vnd.github+json",
        },
    )
    assert installation.status_code == 201
    # 2. registration token
    reg = await http.post(
        f"{fake.api_url}/orgs/acme/actions/runners/registration-token",
        headers={"Authorization": f"Bearer {installation.json()['token']}"},
    )
    assert reg.status_code == 201
    # 3. runner-registration -> tenant URL + admin JWT
    registration = await http.post(
        f"{fake.api_url}/actions/runner-registration",
        headers={"Authorization": f"RemoteAuth {reg.json()['token']}"},
        content=json.dumps({"url": fake.config_url("acme"), "runner_event": "register"}) + "\n",
    )
    assert registration.status_code == 201
    tenant, admin = registration.json()["url"], registration.json()["token"]
    assert jwt.decode(admin, options={"verify_signature": False})["exp"] > clock.time()
    headers = {"Authorization": f"Bearer {admin}", "Content-Type": "application/json"}

    async def call(method: str, path: str, json: object = None) -> httpx2.Response:
        return await http.request(
            method, tenant + path, params=API_VERSION, headers=headers, json=json
        )

    scale_set = await call(
        "POST", "_apis/runtime/runnerscalesets", json={"name": "arc", "runnerGroupId": 1}
    )
    scale_set_id = scale_set.json()["id"]
    # 4. session
    session = await call(
        "POST",
        f"_apis/runtime/runnerscalesets/{scale_set_id}/sessions",
        json={"sessionId": "00000000-0000-0000-0000-000000000000", "ownerName": "listener-pod"},
    )
    assert session.status_code == 200
    body = session.json()
    mq = {
        "Authorization": f"Bearer {body['messageQueueAccessToken']}",
        "X-ScaleSetMaxCapacity": "2147483647",
    }
    # 6. nothing yet
    assert (await http.get(body["messageQueueUrl"], headers=mq)).status_code == 202
    # 7. a job arrives
    request_id = fake.control.queue_job(["arc"], duration_seconds=30)
    first = await http.get(body["messageQueueUrl"], headers=mq)
    assert first.json()["messageId"] == 1
    assert json.loads(first.json()["body"])[0]["messageType"] == "JobAssigned"
    assert first.json()["statistics"]["totalAssignedJobs"] == 1
    # 8. ack
    queue = httpx2.URL(body["messageQueueUrl"])
    ack = await http.delete(queue.copy_with(path=queue.path + "/1"), headers=mq)
    assert ack.status_code == 204
    # 9. the controller creates the runner, a simulated runner takes the job
    jit = await call(
        "POST",
        f"_apis/runtime/runnerscalesets/{scale_set_id}/generatejitconfig",
        json={"name": "arc-abcde-runner-x", "workFolder": ""},
    )
    env = {"ACTIONS_RUNNER_INPUT_JITCONFIG": jit.json()["encodedJITConfig"]}
    runner = asyncio.ensure_future(run_runner(env, clock=clock))
    await fake.control.wait_for(
        lambda t: t.job(request_id).state is JobState.RUNNING, what="job runs"
    )
    # 10. JobStarted
    started = await http.get(queue.copy_add_param("lastMessageId", "1"), headers=mq)
    (event,) = json.loads(started.json()["body"])
    assert (event["messageType"], event["runnerName"]) == ("JobStarted", "arc-abcde-runner-x")
    await http.delete(
        queue.copy_with(path=f"{queue.path}/{started.json()['messageId']}"), headers=mq
    )
    # 11. JobCompleted; the runner exits and its registration is gone
    await eventually(lambda: clock.sleepers > 0, within=10.0, what="runner working on its job")
    clock.advance(30)
    assert await asyncio.wait_for(runner, timeout=10) == 0
    completed = await http.get(
        queue.copy_add_param("lastMessageId", str(started.json()["messageId"])), headers=mq
    )
    (event,) = json.loads(completed.json()["body"])
    assert (event["messageType"], event["result"]) == ("JobCompleted", "success")
    assert completed.json()["statistics"]["totalAssignedJobs"] == 0
    removed = await call(
        "DELETE", f"_apis/distributedtask/pools/0/agents/{jit.json()['runner']['id']}"
    )
    assert removed.status_code == 404  # the service already removed the ephemeral registration
    shown = repr(fake.control.snapshot()) + repr(fake.service.sessions) + repr(fake.service.runners)
    assert fake.service.sessions
    assert not [secret for secret in fake.control.issued_secrets() if secret in shown]
    # 12. shutdown
    deleted = await call(
        "DELETE", f"_apis/runtime/runnerscalesets/{scale_set_id}/sessions/{body['sessionId']}"
    )
    assert deleted.status_code == 204
    relied_on = {entry.key for entry in fake.control.assumptions_relied_on()}
    assert {"A-MQ-URL", "A-RUNNER-PROTOCOL", "A-JOB-MATCHING", "A-TENANT-PER-SCOPE"} <= relied_on
    assert "A-JOB-CANCEL" not in relied_on


async def test_restart_is_an_outage_that_keeps_state(
    fake: FakeGitHub, http: httpx2.AsyncClient
) -> None:
    scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), "arc")
    base_url = fake.base_url
    await fake.stop()
    try:
        with_outage = httpx2.AsyncClient()
        async with with_outage:
            try:
                await with_outage.get(base_url + "/_fake/state")
                raise AssertionError("the fake still answers while stopped")
            except httpx2.ConnectError:
                pass
    finally:
        await fake.start()
    assert fake.base_url == base_url
    state = (await http.get(base_url + "/_fake/state", headers=control(fake))).json()
    assert [s["id"] for s in state["scale_sets"]] == [scale_set_id]


async def test_apps_and_assumptions_over_the_control_endpoint(
    fake: FakeGitHub, clock: ManualClock, http: httpx2.AsyncClient
) -> None:
    created = await http.post(
        fake.base_url + "/_fake/apps",
        json={"appId": 9, "installationId": 10},
        headers=control(fake),
    )
    assert created.status_code == 201
    pem = created.json()["privateKeyPem"]
    installation = await http.post(
        f"{fake.api_url}/app/installations/10/access_tokens",
        headers={"Authorization": f"Bearer {app_jwt(pem, '9', clock.time())}"},
    )
    assert installation.status_code == 201
    reg = await http.post(
        f"{fake.api_url}/enterprises/ent/actions/runners/registration-token",
        headers={"Authorization": f"Bearer {installation.json()['token']}"},
    )
    assert reg.status_code == 201
    bad = await http.post(
        fake.base_url + "/_fake/apps",
        json={"appId": 9, "installationId": 11, "privateKeyPem": "-----BEGIN nonsense"},
        headers=control(fake),
    )
    assert bad.status_code == 400
    assert "nonsense" not in bad.text
    assumptions = (
        await http.get(fake.base_url + "/_fake/assumptions", headers=control(fake))
    ).json()
    assert all(entry["kind"] == "ASSUMPTION" for entry in assumptions)
    assert "A-CREDENTIAL-SCOPES" in {entry["key"] for entry in assumptions}
