"""The doctor's checks (pure): each takes the ``Inventory`` and returns findings.

Runners (``runner_checks``):

- ``pod-newer-than-runner`` — a runner pod created long after its EphemeralRunner: the pod was
  recreated from the runner's used JIT config (ARC #4588); it cannot connect and holds a slot.
- ``runner-pod-missing`` — phase ``Running`` or ``Pending`` with no pod, unchanged for over a
  minute: the pod is gone and no controller acted (ARC #4588 in its plainest form).
- ``running-without-job`` — phase ``Running`` with no job fields for long, its pod running:
  ARC's "pod runs" Running, an idle runner or a zombie (#4588, L1).
- ``runner-version-deprecated`` — runners ``Outdated``, runner containers that exited 7, a set
  in phase ``Outdated``: GitHub refuses the runner version (ARC #4601).
- ``stuck-deleting`` — being deleted for long, held by finalizers.
- ``terminal-holding-slot`` — ``Failed``/``Succeeded`` and not deleted: it counts towards the
  set's size (ARC never reaps failed runners).
- ``idle-past-age`` — an idle runner older than the idle age.

What serves them (``control_plane_checks``):

- ``crd-outdated`` — a CRD missing, or lacking fields scaleset writes (ARC's CRDs still
  installed: the API server would drop those fields).
- ``controller-missing`` — scale sets in a namespace no ready controller pod serves.
- ``controller-not-leading`` — controller pods run, but nobody holds their leader Lease.
- ``scale-set-condition`` — an AutoscalingRunnerSet's ``Valid``, ``ScaleSetRegistered``,
  ``ControllerConflict`` or ``RunnerSetConflict`` condition says trouble.
- ``listener-missing`` — a registered scale set without a listener, or a listener without
  its pod.
- ``listener-session-conflict`` — two listeners for one scale set: only one message session
  can exist, the other waits or fails.
- ``listener-crash-loop`` — a listener pod restarting, in CrashLoopBackOff, or Failed.

GitHub (``github_checks``):

- ``github-host-not-allowed`` — a githubConfigUrl that is not an approved GitHub host over
  https: the doctor sends it no credential.
- ``registration-missing`` — a registered runner (runner id set) with no job, not terminal,
  that GitHub does not list (needs GitHub credentials).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from scaleset.doctor import control_plane_checks as plane
from scaleset.doctor import github_checks as github
from scaleset.doctor import runner_checks as runners
from scaleset.doctor.findings import Finding
from scaleset.doctor.inventory import Inventory, Thresholds

Check = Callable[[Inventory, Thresholds], list[Finding]]

KUBERNETES_CHECKS: dict[str, Check] = {
    "controller-missing": plane.controller_missing,
    "controller-not-leading": plane.controller_not_leading,
    "scale-set-condition": plane.scale_set_condition,
    "listener-missing": plane.listener_missing,
    "runner-version-deprecated": runners.runner_version_deprecated,
    "runner-pod-missing": runners.runner_pod_missing,
    "pod-newer-than-runner": runners.pod_newer_than_runner,
    "running-without-job": runners.running_without_job,
    "stuck-deleting": runners.stuck_deleting,
    "terminal-holding-slot": runners.terminal_holding_slot,
    "idle-past-age": runners.idle_past_age,
    "crd-outdated": plane.crd_outdated,
    "listener-session-conflict": plane.listener_session_conflict,
    "listener-crash-loop": plane.listener_crash_loop,
    "github-host-not-allowed": github.github_host_not_allowed,
}
GITHUB_CHECKS: dict[str, Check] = {"registration-missing": github.registration_missing}


def run_checks(inventory: Inventory, limits: Thresholds, names: Iterable[str]) -> list[Finding]:
    every = {**KUBERNETES_CHECKS, **GITHUB_CHECKS}
    return [finding for name in names for finding in every[name](inventory, limits)]
