"""The simulated runner (``scaleset.embedded.runner``) as a container program.

``runner_program(...)`` returns a program that runs ``run_runner`` with the container's
resolved environment (so ``ACTIONS_RUNNER_INPUT_JITCONFIG`` comes from the JIT Secret through
``secretKeyRef``, exactly as in ARC's runner pod), the kubelet's clock for job durations, and the
container's SIGTERM as the runner's ``stop``. Runner faults come from the program's ``faults``
and from the pod annotation ``scaleset.dev/sim-runner-faults``. ``on_phase(run, phase)`` reports
what the runner is doing, per container start, for ground truth.

``RUNNER_IMAGES`` are the image patterns ``default_runtime`` maps to it.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import replace

from scaleset.clock import Clock
from scaleset.embedded.kubelet.directives import DirectiveError, parse_annotations
from scaleset.embedded.kubelet.programs import ContainerRun, ContainerRuntime, Program
from scaleset.embedded.runner import RunnerFaults, RunnerPhase, run_runner
from scaleset.logs import get_logger

log = get_logger(__name__)

RUNNER_IMAGES = (
    "ghcr.io/actions/actions-runner",
    "ghcr.io/actions/actions-runner:*",
    "ghcr.io/actions/actions-runner@*",
)

PhaseObserver = Callable[[ContainerRun, RunnerPhase], None]


def _annotated_faults(run: ContainerRun, faults: RunnerFaults) -> RunnerFaults:
    try:
        names = parse_annotations(run.annotations).runner_faults
    except DirectiveError:
        return faults  # the kubelet already reported the bad annotation
    return replace(
        faults,
        hang_after_completion=faults.hang_after_completion or "hang-after-completion" in names,
        crash_mid_job=faults.crash_mid_job or "crash-mid-job" in names,
        outdated=faults.outdated or "outdated" in names,
    )


def runner_program(
    *,
    faults: RunnerFaults | None = None,
    clock: Clock | None = None,
    verify: ssl.SSLContext | bool = True,
    on_phase: PhaseObserver | None = None,
    conflict_retry_seconds: float = 30.0,
    session_conflict_give_up_seconds: float | None = None,
    transient_retry_seconds: float = 5.0,
) -> Program:
    """A program running the simulated runner; ``clock`` defaults to the kubelet's clock."""
    base = faults or RunnerFaults()

    async def program(run: ContainerRun) -> int:
        observe = on_phase
        return await run_runner(
            run.env,
            clock=clock or run.clock,
            faults=_annotated_faults(run, base),
            verify=verify,
            on_phase=(lambda phase: observe(run, phase)) if observe else None,
            stop=run.stop,
            conflict_retry_seconds=conflict_retry_seconds,
            session_conflict_give_up_seconds=session_conflict_give_up_seconds,
            transient_retry_seconds=transient_retry_seconds,
        )

    return program


def default_runtime(
    runner: Program | None = None, *, extra_runner_images: tuple[str, ...] = ()
) -> ContainerRuntime:
    """Runner images run the simulated runner; every other image runs until stopped."""
    program = runner or runner_program()
    return ContainerRuntime([(pattern, program) for pattern in RUNNER_IMAGES + extra_runner_images])
