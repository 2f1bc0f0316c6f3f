"""Scale sets, runner groups and the runner registry of the fake (spec §2 #1-#10, §3)."""

from __future__ import annotations

import httpx2
from tests.integration.embedded_actions.wire_client import BrokerRunner, ScaleSetClient

from scaleset.embedded.actions import FakeGitHub

SETS = "_apis/runtime/runnerscalesets"
AGENTS = "_apis/distributedtask/pools/0/agents"


async def test_create_then_find_by_name_and_id(org: ScaleSetClient) -> None:
    created = await org.admin(
        "POST",
        SETS,
        json={
            "name": "arc",
            "runnerGroupId": 1,
            "labels": [{"name": "arc", "type": "System"}],
            "RunnerSetting": {"disableUpdate": True},
        },
    )
    assert created.status_code == 200
    body = created.json()
    assert body["id"] > 0
    assert body["runnerGroupName"] == "Default"
    assert body["RunnerSetting"] == {"disableUpdate": True}
    assert body["statistics"]["totalAssignedJobs"] == 0
    found = await org.admin("GET", SETS, params={"runnerGroupId": 1, "name": "arc"})
    assert found.json()["count"] == 1
    assert found.json()["value"][0]["id"] == body["id"]
    missing = await org.admin("GET", SETS, params={"runnerGroupId": 1, "name": "nope"})
    assert missing.json() == {"count": 0, "value": []}
    by_id = await org.admin("GET", f"{SETS}/{body['id']}")
    assert by_id.status_code == 200
    assert by_id.json()["name"] == "arc"


async def test_labels_default_to_the_name_and_setting_key_is_case_insensitive(
    org: ScaleSetClient,
) -> None:
    created = await org.admin(
        "POST", SETS, json={"name": "arc", "runnerSetting": {"ephemeral": True}}
    )
    assert created.json()["labels"] == [{"type": "System", "name": "arc"}]
    assert created.json()["RunnerSetting"] == {"ephemeral": True}


async def test_unknown_scale_set_is_404_with_exception_body(org: ScaleSetClient) -> None:
    response = await org.admin("GET", f"{SETS}/999")
    assert response.status_code == 404
    assert "RunnerScaleSetNotFoundException" in response.json()["typeName"]
    assert response.headers["ActivityId"]


async def test_names_are_unique_per_runner_group(org: ScaleSetClient, fake: FakeGitHub) -> None:
    await org.create_scale_set("arc")
    dup = await org.admin("POST", SETS, json={"name": "arc", "runnerGroupId": 1})
    assert dup.status_code == 409
    group_id = fake.control.add_runner_group(org.config_url, "gpu")
    other_group = await org.admin("POST", SETS, json={"name": "arc", "runnerGroupId": group_id})
    assert other_group.status_code == 200


async def test_update_name_and_group_then_delete(org: ScaleSetClient, fake: FakeGitHub) -> None:
    scale_set_id = await org.create_scale_set("arc")
    group_id = fake.control.add_runner_group(org.config_url, "gpu")
    moved = await org.admin("PATCH", f"{SETS}/{scale_set_id}", json={"runnerGroupId": group_id})
    assert moved.status_code == 200
    assert moved.json()["runnerGroupId"] == group_id
    assert moved.json()["name"] == "arc"
    renamed = await org.admin("PATCH", f"{SETS}/{scale_set_id}", json={"name": "arc2"})
    assert renamed.json()["name"] == "arc2"
    assert renamed.json()["runnerGroupId"] == group_id
    deleted = await org.admin("DELETE", f"{SETS}/{scale_set_id}")
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert (await org.admin("GET", f"{SETS}/{scale_set_id}")).status_code == 404
    assert (await org.admin("DELETE", f"{SETS}/{scale_set_id}")).status_code == 404


async def test_runner_groups_by_name(org: ScaleSetClient, fake: FakeGitHub) -> None:
    default = await org.admin("GET", "_apis/runtime/runnergroups/", params={"groupName": "Default"})
    assert default.json() == {
        "count": 1,
        "value": [{"id": 1, "name": "Default", "size": 0, "isDefaultGroup": True}],
    }
    none = await org.admin("GET", "_apis/runtime/runnergroups/", params={"groupName": "gpu"})
    assert none.json()["count"] == 0
    fake.control.add_runner_group(org.config_url, "gpu")
    gpu = await org.admin("GET", "_apis/runtime/runnergroups/", params={"groupName": "gpu"})
    assert gpu.json()["value"][0]["isDefaultGroup"] is False


async def test_api_version_is_required_on_admin_calls(
    org: ScaleSetClient, http: httpx2.AsyncClient
) -> None:
    headers = {"Authorization": f"Bearer {org.admin_token}"}
    missing = await http.get(org.tenant_url + "_apis/runtime/runnergroups/", headers=headers)
    assert missing.status_code == 400
    assert "VersionNotSpecified" in missing.json()["typeName"]
    wrong = await http.get(
        org.tenant_url + "_apis/runtime/runnergroups/",
        params={"api-version": "5.1"},
        headers=headers,
    )
    assert wrong.status_code == 400


async def test_duplicate_slashes_are_collapsed(
    org: ScaleSetClient, http: httpx2.AsyncClient
) -> None:
    response = await http.get(
        org.tenant_url + "/_apis//runtime/runnergroups/",
        params={"api-version": "6.0-preview"},
        headers={"Authorization": f"Bearer {org.admin_token}"},
    )
    assert response.status_code == 200


async def test_jit_registers_a_runner_and_names_are_unique(org: ScaleSetClient) -> None:
    scale_set_id = await org.create_scale_set("arc")
    first = await org.jit(scale_set_id, "arc-runner-1")
    assert first.status_code == 200
    runner = first.json()["runner"]
    assert runner == {"id": runner["id"], "name": "arc-runner-1", "runnerScaleSetId": scale_set_id}
    assert first.json()["encodedJITConfig"]
    again = await org.jit(scale_set_id, "arc-runner-1")
    assert again.status_code == 409
    assert "AgentExistsException" in again.json()["typeName"]
    by_id = await org.admin("GET", f"{AGENTS}/{runner['id']}")
    assert by_id.json() == runner
    by_name = await org.admin("GET", AGENTS, params={"agentName": "arc-runner-1"})
    assert by_name.json() == {"count": 1, "value": [runner]}
    nobody = await org.admin("GET", AGENTS, params={"agentName": "ghost"})
    assert nobody.json() == {"count": 0, "value": []}
    stats = (await org.admin("GET", f"{SETS}/{scale_set_id}")).json()["statistics"]
    assert stats["totalRegisteredRunners"] == 1
    assert stats["totalIdleRunners"] == 1


async def test_jit_for_unknown_scale_set_is_404(org: ScaleSetClient) -> None:
    response = await org.jit(404, "x")
    assert response.status_code == 404


async def test_remove_runner_then_unknown_is_404_and_name_is_free(org: ScaleSetClient) -> None:
    scale_set_id = await org.create_scale_set("arc")
    runner_id = (await org.jit(scale_set_id, "r1")).json()["runner"]["id"]
    removed = await org.admin("DELETE", f"{AGENTS}/{runner_id}")
    assert removed.status_code == 204
    gone = await org.admin("DELETE", f"{AGENTS}/{runner_id}")
    assert gone.status_code == 404
    assert "AgentNotFoundException" in gone.json()["typeName"]
    assert (await org.admin("GET", f"{AGENTS}/{runner_id}")).status_code == 404
    assert (await org.jit(scale_set_id, "r1")).status_code == 200


async def test_removing_a_busy_runner_is_job_still_running(
    org: ScaleSetClient, fake: FakeGitHub
) -> None:
    scale_set_id = await org.create_scale_set("arc")
    jit = (await org.jit(scale_set_id, "r1")).json()
    runner_id = jit["runner"]["id"]
    fake.control.queue_job(["arc"])
    runner = BrokerRunner.from_jit(org.http, jit["encodedJITConfig"])
    assert (await runner.open()).status_code == 200
    await runner.take_job()
    response = await org.admin("DELETE", f"{AGENTS}/{runner_id}")
    assert response.status_code == 400
    assert "JobStillRunningException" in response.json()["typeName"]
    assert fake.control.snapshot().runner(runner_id).registered


async def test_runners_of_another_tenant_are_not_visible(
    fake: FakeGitHub, http: httpx2.AsyncClient
) -> None:
    acme = await ScaleSetClient.register(http, fake, fake.config_url("acme"))
    other = await ScaleSetClient.register(http, fake, fake.config_url("other"))
    runner_id = (await acme.jit(await acme.create_scale_set("arc"), "r1")).json()["runner"]["id"]
    assert (await other.admin("GET", f"{AGENTS}/{runner_id}")).status_code == 404
    assert (await other.admin("DELETE", f"{AGENTS}/{runner_id}")).status_code == 404
