"""Our four CRDs on a real API server: they install and become Established, the objects ARC's
chart and controller write are accepted whole (pod templates keep every field, native sidecars
included), and the status fields scaleset adds (lifecycle L0, L4, L5) survive the server's
structural pruning — an undeclared field would be dropped silently, the classic way a status
field gets lost (L8)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, cast

import httpx2
import pytest
import yaml
from lightkube import AsyncClient
from tests.conformance.widgets import install_crd, resource_path

from scaleset.api.crds import all_crds, installed_crd_gaps

FIXTURES = Path(__file__).parent.parent / "fixtures" / "arc"
GROUP_VERSION = "actions.github.com/v1alpha1"
TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io"


def _fixture(name: str) -> dict[str, Any]:
    return cast(dict[str, Any], yaml.safe_load((FIXTURES / name).read_text()))


def _plural(crd: dict[str, Any]) -> str:
    return cast(str, crd["spec"]["names"]["plural"])


def _path(plural: str, namespace: str, name: str = "", subresource: str = "") -> str:
    return resource_path(GROUP_VERSION, plural, namespace, name, subresource)


def _fresh(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The fixture as a client would create it: no server-owned metadata, our namespace."""
    body = copy.deepcopy(obj)
    meta = body["metadata"]
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp", "ownerReferences"):
        meta.pop(key, None)
    meta["namespace"] = namespace
    body.pop("status", None)
    return body


async def _create_fixture(
    kube_http: httpx2.AsyncClient, plural: str, namespace: str, fixture: dict[str, Any]
) -> str:
    """Create the fixture (without server-owned fields) in ``namespace``; returns its name."""
    created = await kube_http.post(_path(plural, namespace), json=_fresh(fixture, namespace))
    assert created.status_code == 201, created.text
    return cast(str, created.json()["metadata"]["name"])


async def _patch_status(
    kube_http: httpx2.AsyncClient, plural: str, namespace: str, name: str, status: Any
) -> dict[str, Any]:
    """Merge-patch ``/status``; returns the stored status."""
    response = await kube_http.patch(
        _path(plural, namespace, name, "status"),
        json={"status": status},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text
    return cast(dict[str, Any], response.json()["status"])


@pytest.fixture(scope="session")
async def scaleset_crds(kube: AsyncClient) -> dict[str, dict[str, Any]]:
    """Install the four generated CRDs once per backend; returns them by kind."""
    documents = all_crds()
    for document in documents:
        await install_crd(kube, document)
    return {d["spec"]["names"]["kind"]: d for d in documents}


async def test_installed_crds_declare_every_field_scaleset_writes(
    kube_http: httpx2.AsyncClient, scaleset_crds: dict[str, dict[str, Any]]
) -> None:
    for document in scaleset_crds.values():
        name = document["metadata"]["name"]
        response = await kube_http.get(
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        )
        assert response.status_code == 200
        assert installed_crd_gaps(response.json()) == []


async def test_arc_autoscalingrunnerset_with_native_sidecar_keeps_every_template_field(
    kube_http: httpx2.AsyncClient, scaleset_crds: dict[str, dict[str, Any]], namespace: str
) -> None:
    ars = _fresh(_fixture("autoscalingrunnerset-dind.yaml"), namespace)
    plural = _plural(scaleset_crds["AutoscalingRunnerSet"])

    response = await kube_http.post(_path(plural, namespace), json=ars)

    assert response.status_code == 201, response.text
    stored = response.json()
    assert stored["spec"]["template"] == ars["spec"]["template"]
    init = stored["spec"]["template"]["spec"]["initContainers"]
    assert any(c.get("restartPolicy") == "Always" for c in init)
    assert stored["spec"]["maxRunners"] == ars["spec"]["maxRunners"]


async def test_ephemeral_runner_status_additions_survive_pruning(
    kube_http: httpx2.AsyncClient, scaleset_crds: dict[str, dict[str, Any]], namespace: str
) -> None:
    fixture = _fixture("ephemeralrunner-scaleset-completed.yaml")
    plural = _plural(scaleset_crds["EphemeralRunner"])
    name = await _create_fixture(kube_http, plural, namespace, fixture)

    status = await _patch_status(kube_http, plural, namespace, name, fixture["status"])

    for key in ("jobCompletion", "jobCompletionDeadline", "runnerStartedAt", "conditions"):
        assert status[key] == fixture["status"][key], key
    assert status["jobId"] == fixture["status"]["jobId"]


async def test_runner_set_status_reports_all_five_states(
    kube_http: httpx2.AsyncClient, scaleset_crds: dict[str, dict[str, Any]], namespace: str
) -> None:
    fixture = _fixture("ephemeralrunnerset.yaml")
    plural = _plural(scaleset_crds["EphemeralRunnerSet"])
    name = await _create_fixture(kube_http, plural, namespace, fixture)
    counts = {
        "currentReplicas": 9,
        "startingEphemeralRunners": 1,
        "idleEphemeralRunners": 2,
        "busyEphemeralRunners": 3,
        "terminalEphemeralRunners": 1,
        "deletingEphemeralRunners": 2,
    }

    status = await _patch_status(kube_http, plural, namespace, name, counts)

    assert {key: status.get(key) for key in counts} == counts


async def test_printer_columns_are_served_as_a_table(
    kube_http: httpx2.AsyncClient, scaleset_crds: dict[str, dict[str, Any]], namespace: str
) -> None:
    fixture = _fixture("ephemeralrunner-scaleset-completed.yaml")
    plural = _plural(scaleset_crds["EphemeralRunner"])
    await _create_fixture(kube_http, plural, namespace, fixture)

    response = await kube_http.get(_path(plural, namespace), headers={"Accept": TABLE_ACCEPT})

    assert response.status_code == 200, response.text
    table = response.json()
    assert table["kind"] == "Table"
    names = [column["name"] for column in table["columnDefinitions"]]
    declared = [
        c["name"]
        for c in scaleset_crds["EphemeralRunner"]["spec"]["versions"][0]["additionalPrinterColumns"]
    ]
    assert names[0] == "Name"
    assert [n for n in names[1:] if n != "Age"] == [n for n in declared if n != "Age"]
    assert len(table["rows"]) == 1
    cells = table["rows"][0]["cells"]
    assert cells[0] == fixture["metadata"]["name"]
    # a "date" column is rendered by the server as the time since then, as kubectl shows it
    age = cells[names.index("Age")]
    assert re.fullmatch(r"\d+s|\d+m(\d+s)?", age), age
