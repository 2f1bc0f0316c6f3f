"""Container programs and processes on a manual clock: image matching, the built-in programs,
SIGTERM / SIGKILL / OOM / hang semantics, and a crashing program."""

from __future__ import annotations

import asyncio

from scaleset.clock import ManualClock
from scaleset.embedded.kubelet import (
    ContainerRun,
    ContainerRuntime,
    default_runtime,
    exit_after,
    runner_program,
    until_stopped,
)
from scaleset.embedded.kubelet._process import ContainerProcess, Exit
from scaleset.kube import ObjectKey


def a_run(clock: ManualClock, image: str = "busybox") -> ContainerRun:
    return ContainerRun(
        pod=ObjectKey("ns", "pod"),
        pod_uid="u",
        node="sim-node-1",
        container="main",
        image=image,
        spec={"name": "main", "image": image},
        env={"TOKEN": "do-not-print"},
        files={},
        labels={},
        annotations={},
        init=False,
        restart_count=0,
        clock=clock,
        stop=asyncio.Event(),
    )


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_images_map_to_programs_by_pattern_in_order() -> None:
    first, second, default = until_stopped(1), until_stopped(2), until_stopped(3)
    runtime = ContainerRuntime(
        [("example.com/app:*", first), ("example.com/*", second)],
        default=default,
        missing_images=["example.com/gone:*"],
    )
    assert runtime.program_for("example.com/app:v1") is first
    assert runtime.program_for("example.com/other:v1") is second
    assert runtime.program_for("busybox") is default
    assert runtime.with_program("busybox", first).program_for("busybox") is first
    assert runtime.image_missing("example.com/gone:1")
    assert not runtime.image_missing("example.com/app:1")


def test_the_default_runtime_runs_the_simulated_runner_for_runner_images() -> None:
    runner = runner_program()
    runtime = default_runtime(runner, extra_runner_images=("registry.example/runner:*",))
    for image in (
        "ghcr.io/actions/actions-runner:latest",
        "ghcr.io/actions/actions-runner",
        "ghcr.io/actions/actions-runner@sha256:abc",
        "registry.example/runner:1",
    ):
        assert runtime.program_for(image) is runner, image
    assert runtime.program_for("docker:dind") is runtime.default


async def test_exit_after_waits_on_the_clock_and_obeys_sigterm() -> None:
    clock = ManualClock()
    process = ContainerProcess(exit_after(30, 4), a_run(clock), lambda: False)
    await settle()
    clock.advance(29)
    await settle()
    assert not process.done
    clock.advance(1)
    assert await process.wait() == Exit(4, "Error")

    stopped = ContainerProcess(exit_after(30, 4, on_stop=0), a_run(clock), lambda: False)
    await settle()
    stopped.terminate()
    assert await stopped.wait() == Exit(0, "Completed")


async def test_sigkill_and_oom_report_137() -> None:
    clock = ManualClock()
    killed = ContainerProcess(until_stopped(), a_run(clock), lambda: False)
    await settle()
    killed.kill()
    assert await killed.wait() == Exit(137, "Error")
    oom = ContainerProcess(until_stopped(), a_run(clock), lambda: False)
    await settle()
    oom.kill(137, "OOMKilled")
    assert await oom.wait() == Exit(137, "OOMKilled")


async def test_a_hung_process_ignores_sigterm_and_does_not_exit() -> None:
    clock = ManualClock()
    process = ContainerProcess(exit_after(5, 0), a_run(clock), lambda: True)
    await settle()
    process.terminate()
    clock.advance(5)
    await settle()
    assert not process.done  # the program returned, the process hangs on
    process.kill()
    assert await process.wait() == Exit(137, "Error")


async def test_a_crashing_program_is_exit_code_1() -> None:
    async def broken(run: ContainerRun) -> int:
        raise RuntimeError("bug in the program")

    process = ContainerProcess(broken, a_run(ManualClock()), lambda: False)
    assert await process.wait() == Exit(1, "Error")


def test_a_container_run_never_shows_its_environment() -> None:
    assert "do-not-print" not in repr(a_run(ManualClock()))
