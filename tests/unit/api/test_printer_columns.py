"""What ``kubectl get`` shows of runners: states that tell starting from idle from busy.

ARC's Pending/Running columns cannot: a runner is ``Running`` only once the listener saw its job
(L1), so RUNNING always equals BUSY, and PENDING holds starting and idle runners alike. The
default columns of the EphemeralRunnerSet are the L0 states (from the five counts the controller
writes); ARC's two stay, as duplicates, at priority 1 (``-o wide``). The AutoscalingRunnerSet
shows no counts: its status no longer copies them. An EphemeralRunner shows when
its runner started (blank while starting). Checked on the column declarations and, through the
API server's Table rendering, on both backends.
"""

from __future__ import annotations

from typing import Any

import httpx2
from tests.plugins.kube_backends import KubeBackend
from tests.support.kube import install_actions_crds

from scaleset.api import crds
from scaleset.api.runner_counts import RunnerCountFields

TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io"
STATE_COLUMNS = {
    "Starting": ".status.startingEphemeralRunners",
    "Idle": ".status.idleEphemeralRunners",
    "Busy": ".status.busyEphemeralRunners",
    "Terminal": ".status.terminalEphemeralRunners",
    "Deleting": ".status.deletingEphemeralRunners",
}
SPEC = {
    "githubConfigUrl": "https://github.com/acme",
    "githubConfigSecret": "github-config",
    "runnerScaleSetId": 1,
    "spec": {"containers": [{"name": "runner", "image": "runner:1"}]},
}
ARC_DUPLICATES = {".status.pendingEphemeralRunners", ".status.runningEphemeralRunners"}


def columns(kind: str, *, wide: bool) -> dict[str, str]:
    """``{name: jsonPath}`` of the kind's columns shown by default (or only with ``-o wide``)."""
    return {
        column["name"]: column["jsonPath"]
        for column in crds.PRINTER_COLUMNS[kind]
        if bool(column.get("priority", 0)) == wide
    }


def test_runner_sets_show_the_l0_states_by_default() -> None:
    shown = columns("EphemeralRunnerSet", wide=False)
    assert {name: shown.get(name) for name in STATE_COLUMNS} == STATE_COLUMNS
    assert not ARC_DUPLICATES & set(shown.values())


def test_arcs_pending_and_running_columns_stay_at_priority_1() -> None:
    assert set(columns("EphemeralRunnerSet", wide=True).values()) >= ARC_DUPLICATES


def test_the_state_columns_read_the_fields_the_controllers_write() -> None:
    written = {f".status.{field.alias}" for field in RunnerCountFields.model_fields.values()}
    assert set(STATE_COLUMNS.values()) <= written


def test_an_ephemeral_runner_shows_when_its_runner_started() -> None:
    shown = columns("EphemeralRunner", wide=False)
    assert shown.get("Started") == ".status.runnerStartedAt"


async def test_kubectl_sees_starting_idle_and_busy_apart(
    kube_backend: KubeBackend, kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    await install_actions_crds(kube_backend)
    base = f"/apis/actions.github.com/v1alpha1/namespaces/{namespace}/ephemeralrunnersets"
    body: dict[str, Any] = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {"name": "states"},
        "spec": {"replicas": 6, "patchID": 0, "ephemeralRunnerSpec": SPEC},
    }
    created = await kube_http.post(base, json=body)
    assert created.status_code == 201, created.text
    counts = {"starting": 1, "idle": 2, "busy": 3, "pending": 3, "running": 3}
    status = {f"{state}EphemeralRunners": count for state, count in counts.items()}
    patched = await kube_http.patch(
        f"{base}/states/status",
        json={"status": {"currentReplicas": 6, **status}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text

    table = (await kube_http.get(base, headers={"Accept": TABLE_ACCEPT})).json()
    definitions = table["columnDefinitions"]
    cells = dict(zip([d["name"] for d in definitions], table["rows"][0]["cells"], strict=True))
    assert (cells["Starting"], cells["Idle"], cells["Busy"]) == (1, 2, 3)
    wide = {d["name"] for d in definitions if d.get("priority", 0) > 0}
    assert {"Pending Runners", "Running Runners"} <= wide
