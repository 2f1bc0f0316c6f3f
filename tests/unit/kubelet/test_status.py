"""The pure status rules: pod phase (the kubelet's getPhase), conditions and their transition
times, container records through start / exit / restart, image references."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scaleset.embedded.kubelet.status import (
    ContainerRecord,
    ContainerRole,
    PodView,
    Running,
    Terminated,
    Waiting,
    containers_ready_condition,
    exited,
    held,
    image_id,
    initialized_condition,
    kubelet_conditions,
    merge_conditions,
    normalize_image,
    pod_phase,
    pod_status,
    started,
    waiting,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
UID = "0b5c6f1e-0000-4000-8000-000000000001"


def record(
    name: str, state: str, *, role: ContainerRole = "main", code: int = 0
) -> ContainerRecord:
    base = waiting(name, "busybox", role, has_init=False)
    if state == "waiting":
        return base
    run = started(base, at=T0, pod_uid=UID)
    if state == "running":
        return run
    return exited(run, exit_code=code, reason="Completed" if code == 0 else "Error", at=T0)


@pytest.mark.parametrize(
    ("policy", "main", "expected"),
    [
        ("Never", [("waiting", 0)], "Pending"),
        ("Never", [("running", 0), ("waiting", 0)], "Pending"),
        ("Never", [("running", 0)], "Running"),
        ("Never", [("running", 0), ("terminated", 1)], "Running"),
        ("Never", [("terminated", 0), ("terminated", 0)], "Succeeded"),
        ("Never", [("terminated", 0), ("terminated", 2)], "Failed"),
        ("OnFailure", [("terminated", 0)], "Succeeded"),
        ("OnFailure", [("terminated", 1)], "Running"),
        ("Always", [("terminated", 0)], "Running"),
    ],
)
def test_phase_from_the_main_containers(
    policy: str, main: list[tuple[str, int]], expected: str
) -> None:
    records = [record(f"c{i}", state, code=code) for i, (state, code) in enumerate(main)]
    assert pod_phase(policy, [], records) == expected


def test_phase_with_init_containers() -> None:
    main = [record("main", "waiting")]
    assert pod_phase("Never", [record("init", "running", role="init")], main) == "Pending"
    assert pod_phase("Never", [record("init", "terminated", role="init", code=1)], main) == "Failed"
    assert (
        pod_phase("OnFailure", [record("init", "terminated", role="init", code=1)], main)
        == "Pending"
    )
    done = record("init", "terminated", role="init")
    assert pod_phase("Never", [done], [record("main", "running")]) == "Running"


def test_a_backing_off_init_container_that_failed_counts_as_failed() -> None:
    failed = record("init", "terminated", role="init", code=1)
    backing_off = held(failed, Waiting("CrashLoopBackOff"))
    assert backing_off.last_state is not None
    assert pod_phase("Never", [backing_off], [record("main", "waiting")]) == "Failed"
    assert pod_phase("Always", [backing_off], [record("main", "waiting")]) == "Pending"


def test_sidecars_must_start_but_never_decide_the_phase() -> None:
    main_done = [record("main", "terminated")]
    assert pod_phase("Never", [record("dind", "waiting", role="sidecar")], main_done) == "Pending"
    assert pod_phase("Never", [record("dind", "running", role="sidecar")], main_done) == "Succeeded"
    sidecar_failed = record("dind", "terminated", role="sidecar", code=1)
    assert pod_phase("Never", [sidecar_failed], main_done) == "Succeeded"


def test_a_terminal_pod_is_succeeded_only_if_every_main_container_exited_zero() -> None:
    assert pod_phase("Always", [], [record("a", "terminated")], terminal=True) == "Succeeded"
    assert pod_phase("Always", [], [record("a", "terminated", code=143)], terminal=True) == "Failed"
    assert pod_phase("Never", [], [record("a", "waiting")], terminal=True) == "Failed"
    assert pod_phase("Never", [], [record("a", "running")], terminal=True) == "Failed"


def test_condition_messages_list_the_containers_in_spec_order() -> None:
    init = [record("setup", "terminated", role="init"), record("migrate", "running", role="init")]
    condition = initialized_condition(init, "Pending")
    assert (condition.status, condition.reason) == ("False", "ContainersNotInitialized")
    assert condition.message == "containers with incomplete status: [migrate]"
    main = [record("app", "waiting"), record("proxy", "running"), record("log", "waiting")]
    ready = containers_ready_condition(main, "Pending")
    assert ready.message == "containers with unready status: [app log]"
    assert containers_ready_condition([record("app", "terminated")], "Succeeded").reason == (
        "PodCompleted"
    )


def test_the_kubelet_conditions_come_in_its_order() -> None:
    kinds = [c.type for c in kubelet_conditions([], [record("a", "running")], "Running")]
    assert kinds == ["Initialized", "Ready", "ContainersReady", "PodScheduled"]


def test_transition_times_move_only_when_the_status_changes() -> None:
    computed = kubelet_conditions([], [record("a", "running")], "Running")
    first = merge_conditions(computed, [], T0)
    later = T0 + timedelta(minutes=5)
    again = merge_conditions(computed, first, later)
    assert [c["lastTransitionTime"] for c in again] == [c["lastTransitionTime"] for c in first]
    flipped = kubelet_conditions([], [record("a", "terminated", code=1)], "Failed")
    moved = {c["type"]: c for c in merge_conditions(flipped, again, later)}
    assert moved["Ready"]["lastTransitionTime"] == "2026-01-01T00:05:00Z"
    assert moved["PodScheduled"]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_conditions_owned_by_others_are_kept() -> None:
    foreign = {"type": "example.com/Gate", "status": "True", "lastTransitionTime": "x"}
    merged = merge_conditions(kubelet_conditions([], [], "Pending"), [foreign], T0)
    assert merged[-1] == foreign
    assert all(c["lastProbeTime"] is None for c in merged[:-1])


def test_a_container_record_through_two_runs() -> None:
    first = started(waiting("app", "busybox", "main", has_init=False), at=T0, pod_uid=UID)
    assert (first.restart_count, first.ready, first.last_state) == (0, True, None)
    crashed = exited(first, exit_code=2, reason="Error", at=T0 + timedelta(seconds=3))
    assert isinstance(crashed.state, Terminated)
    assert crashed.state.started_at == T0
    assert crashed.state.container_id == first.container_id
    assert not crashed.ready
    backing_off = held(crashed, Waiting("CrashLoopBackOff", "back-off 10s"))
    assert backing_off.last_state == crashed.state
    assert backing_off.restart_count == 0
    second = started(backing_off, at=T0 + timedelta(seconds=13), pod_uid=UID)
    assert second.restart_count == 1
    assert second.last_state == crashed.state
    assert second.container_id != first.container_id
    status = second.to_json()
    assert status["lastState"]["terminated"]["exitCode"] == 2
    assert status["state"] == {"running": {"startedAt": "2026-01-01T00:00:13Z"}}
    assert status["started"] is True


def test_an_immediate_restart_counts_too() -> None:
    first = started(waiting("app", "busybox", "main", has_init=False), at=T0, pod_uid=UID)
    done = exited(first, exit_code=1, reason="Error", at=T0)
    again = started(done, at=T0, pod_uid=UID)
    assert again.restart_count == 1
    assert again.last_state == done.state


def test_init_containers_are_ready_only_when_completed() -> None:
    init = started(waiting("setup", "busybox", "init", has_init=True), at=T0, pod_uid=UID)
    assert not init.ready
    assert exited(init, exit_code=0, reason="Completed", at=T0).ready
    assert not exited(init, exit_code=1, reason="Error", at=T0).ready
    assert waiting("setup", "busybox", "init", has_init=True).state == Waiting("PodInitializing")


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("busybox", "docker.io/library/busybox:latest"),
        ("busybox:1.36", "docker.io/library/busybox:1.36"),
        ("library/busybox", "docker.io/library/busybox:latest"),
        ("envoyproxy/envoy:v1.30", "docker.io/envoyproxy/envoy:v1.30"),
        ("ghcr.io/actions/actions-runner:2.335.1", "ghcr.io/actions/actions-runner:2.335.1"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        ("localhost/app:1", "localhost/app:1"),
        ("registry.example/app@sha256:abc", "registry.example/app@sha256:abc"),
    ],
)
def test_image_references_are_normalised(image: str, expected: str) -> None:
    assert normalize_image(image) == expected


def test_image_ids_are_repository_digests() -> None:
    assert image_id("busybox:1.36").startswith("docker.io/library/busybox@sha256:")
    assert image_id("localhost:5000/app").startswith("localhost:5000/app@sha256:")
    assert image_id("busybox:1.36") == image_id("docker.io/library/busybox:1.36")
    assert image_id("busybox:1.36") != image_id("busybox:1.37")


def test_the_status_document() -> None:
    view = PodView(
        restart_policy="Never",
        init=[record("setup", "terminated", role="init")],
        main=[record("main", "running")],
        host_ip="10.0.0.10",
        pod_ip="10.64.0.2",
        start_time=T0,
    )
    status = pod_status(view, {}, T0)
    assert status["phase"] == "Running"
    assert status["podIPs"] == [{"ip": "10.64.0.2"}]
    assert status["startTime"] == "2026-01-01T00:00:00Z"
    assert [s["name"] for s in status["initContainerStatuses"]] == ["setup"]
    assert "reason" not in status
    evicted = pod_status(
        PodView(
            "Never",
            [],
            [record("main", "terminated", code=137)],
            "10.0.0.10",
            "",
            T0,
            terminal=True,
            reason="Evicted",
            message="The node was low on resource: memory. ",
        ),
        status,
        T0,
    )
    assert (evicted["phase"], evicted["reason"]) == ("Failed", "Evicted")
    assert "podIP" not in evicted
    assert "initContainerStatuses" not in evicted


def test_states_serialise_as_the_api_spells_them() -> None:
    assert Waiting("ErrImagePull", "boom").to_json() == {
        "waiting": {"reason": "ErrImagePull", "message": "boom"}
    }
    assert Running(T0).to_json() == {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    assert Terminated(0, "Completed", None, T0, "containerd://x").to_json() == {
        "terminated": {
            "exitCode": 0,
            "reason": "Completed",
            "startedAt": None,
            "finishedAt": "2026-01-01T00:00:00Z",
            "containerID": "containerd://x",
        }
    }
