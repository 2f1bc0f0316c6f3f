"""Pod status writes (``pods/{name}/status``): what a 1.20 server validates and converts.

The kubelet writes pod status through this path, so the simulated kubelet must meet the same
rules the real one does:

- a container whose restart policy forbids a restart (``Never``, or ``OnFailure`` after exit
  code 0) may not leave the terminated state (Forbidden, indexed by the *stored* status list);
- every pod IP must parse as an IP, and several IPs must be one per family without duplicates
  (errors name ``status.podIPs``, even when only ``podIP`` was sent);
- condition types other than the built-in ones must be qualified names (the real server names
  the field ``metadata.conditions[i].Type``);
- ``podIP`` and ``podIPs`` are kept in step: either one fills the other, and ``podIP`` wins when
  they disagree.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from tests.conformance.widgets import resource_path

MERGE_PATCH = {"content-type": "application/merge-patch+json"}
STATUS_WRITER = "pod-status-writer"
NOT_TERMINATED = "Forbidden: may not be transitioned to non-terminated state"
NOT_AN_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
ONE_PER_FAMILY = "may specify no more than one IP for each IP family"

RUNNING = {"running": {"startedAt": "2024-01-01T00:00:02Z"}}

Cause = tuple[str, str, str]  # (field, reason, message)


def terminated(exit_code: int = 0) -> dict[str, Any]:
    return {
        "terminated": {
            "exitCode": exit_code,
            "startedAt": "2024-01-01T00:00:00Z",
            "finishedAt": "2024-01-01T00:00:01Z",
        }
    }


def statuses(*containers: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Container statuses as a kubelet writes them, one per (name, state)."""
    return [
        {
            "name": name,
            "image": "runner:1",
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "state": state,
        }
        for name, state in containers
    ]


def pod_path(namespace: str, name: str, subresource: str = "") -> str:
    return resource_path("v1", "pods", namespace, name, subresource)


async def create_pod(
    http: httpx2.AsyncClient,
    namespace: str,
    name: str = "p",
    *,
    restart_policy: str = "Never",
    containers: tuple[str, ...] = ("runner",),
    init_containers: tuple[str, ...] = (),
) -> None:
    spec: dict[str, Any] = {
        "restartPolicy": restart_policy,
        "containers": [{"name": c, "image": "runner:1"} for c in containers],
    }
    if init_containers:
        spec["initContainers"] = [{"name": c, "image": "runner:1"} for c in init_containers]
    response = await http.post(
        f"/api/v1/namespaces/{namespace}/pods",
        json={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec},
    )
    assert response.status_code == 201, response.text


async def patch_status(
    http: httpx2.AsyncClient, namespace: str, status: dict[str, Any], name: str = "p"
) -> httpx2.Response:
    return await http.patch(
        pod_path(namespace, name, "status"),
        params={"fieldManager": STATUS_WRITER},
        content=json.dumps({"status": status}),
        headers=MERGE_PATCH,
    )


async def written_status(
    http: httpx2.AsyncClient, namespace: str, status: dict[str, Any], name: str = "p"
) -> dict[str, Any]:
    response = await patch_status(http, namespace, status, name)
    assert response.status_code == 200, response.text
    written: dict[str, Any] = response.json()["status"]
    return written


async def stored_status(http: httpx2.AsyncClient, namespace: str, name: str = "p") -> Any:
    response = await http.get(pod_path(namespace, name))
    assert response.status_code == 200, response.text
    return response.json()["status"]


def assert_invalid(response: httpx2.Response, causes: list[Cause], name: str = "p") -> None:
    """A 422 Invalid naming the pod, with exactly these causes in this order."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert (body["kind"], body["status"], body["reason"], body["code"]) == (
        "Status",
        "Failure",
        "Invalid",
        422,
    )
    details = body["details"]
    assert (details["name"], details["kind"]) == (name, "Pod")
    assert [(c["field"], c["reason"], c["message"]) for c in details["causes"]] == causes
    rendered = [f"{field}: {message}" for field, _, message in causes]
    listed = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    assert body["message"] == f'Pod "{name}" is invalid: {listed}'


def not_terminated(path: str) -> Cause:
    return (path, "FieldValueForbidden", NOT_TERMINATED)


def bad_ip(index: int, value: str) -> Cause:
    return (
        f"status.podIPs[{index}]",
        "FieldValueInvalid",
        f"Invalid value: {json.dumps(value)}: {NOT_AN_IP}",
    )


def bad_condition(index: int, value: str, detail: str) -> Cause:
    return (
        f"metadata.conditions[{index}].Type",
        "FieldValueInvalid",
        f"Invalid value: {json.dumps(value)}: {detail}",
    )


def go_pod_ips(ips: list[str]) -> str:
    """A []core.PodIP as Go's %#v prints it in a field error."""
    return "[]core.PodIP{" + ", ".join(f"core.PodIP{{IP:{json.dumps(ip)}}}" for ip in ips) + "}"


def not_one_per_family(ips: list[str]) -> Cause:
    return (
        "status.podIPs",
        "FieldValueInvalid",
        f"Invalid value: {go_pod_ips(ips)}: {ONE_PER_FAMILY}",
    )


# -- container state transitions -----------------------------------------------------------


@pytest.mark.parametrize(
    "new_state", [RUNNING, {"waiting": {"reason": "ContainerCreating"}}, {}], ids=repr
)
async def test_never_restarting_container_may_not_leave_terminated(
    kube_http: httpx2.AsyncClient, namespace: str, new_state: dict[str, Any]
) -> None:
    await create_pod(kube_http, namespace)
    done = await written_status(
        kube_http, namespace, {"containerStatuses": statuses(("runner", terminated()))}
    )

    response = await patch_status(
        kube_http, namespace, {"containerStatuses": statuses(("runner", new_state))}
    )

    assert_invalid(response, [not_terminated("status.containerStatuses[0].state")])
    assert await stored_status(kube_http, namespace) == done


async def test_transition_error_indexes_the_stored_statuses(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    """Errors point at the terminated container's place in the stored list, containers first,
    then init containers; a container the write leaves out is not checked."""
    await create_pod(
        kube_http, namespace, containers=("runner", "sidecar", "helper"), init_containers=("init",)
    )
    await written_status(
        kube_http,
        namespace,
        {
            "initContainerStatuses": statuses(("init", terminated())),
            "containerStatuses": statuses(
                ("runner", RUNNING), ("sidecar", terminated()), ("helper", terminated())
            ),
        },
    )

    response = await patch_status(
        kube_http,
        namespace,
        {
            "initContainerStatuses": statuses(("init", RUNNING)),
            "containerStatuses": statuses(("sidecar", RUNNING), ("runner", RUNNING)),
        },
    )

    assert_invalid(
        response,
        [
            not_terminated("status.containerStatuses[1].state"),
            not_terminated("status.initContainerStatuses[0].state"),
        ],
    )


@pytest.mark.parametrize(
    ("restart_policy", "exit_code", "allowed"),
    [
        ("OnFailure", 1, True),
        ("OnFailure", 0, False),
        ("Never", 1, False),
        ("Always", 0, True),
        ("Always", 1, True),
    ],
)
async def test_restart_policy_decides_whether_terminated_may_be_left(
    kube_http: httpx2.AsyncClient,
    namespace: str,
    restart_policy: str,
    exit_code: int,
    allowed: bool,
) -> None:
    await create_pod(kube_http, namespace, restart_policy=restart_policy)
    await written_status(
        kube_http, namespace, {"containerStatuses": statuses(("runner", terminated(exit_code)))}
    )

    response = await patch_status(
        kube_http, namespace, {"containerStatuses": statuses(("runner", RUNNING))}
    )

    if allowed:
        assert response.status_code == 200, response.text
        assert response.json()["status"]["containerStatuses"][0]["state"] == RUNNING
    else:
        assert_invalid(response, [not_terminated("status.containerStatuses[0].state")])


async def test_terminated_container_may_stay_terminated(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    await create_pod(kube_http, namespace)
    await written_status(
        kube_http, namespace, {"containerStatuses": statuses(("runner", terminated()))}
    )

    written = await written_status(
        kube_http,
        namespace,
        {"phase": "Succeeded", "containerStatuses": statuses(("runner", terminated()))},
    )

    assert written["phase"] == "Succeeded"


# -- pod IPs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pod_ip", ["not-an-ip", "010.0.0.1", "1.2.3", "10.0.0.1 ", "fe80::1%eth0", "10.0.0.256"]
)
async def test_pod_ip_that_is_not_an_ip_is_invalid(
    kube_http: httpx2.AsyncClient, namespace: str, pod_ip: str
) -> None:
    await create_pod(kube_http, namespace)

    response = await patch_status(kube_http, namespace, {"podIP": pod_ip})

    assert_invalid(response, [bad_ip(0, pod_ip)])
    assert "podIP" not in await stored_status(kube_http, namespace)


async def test_pod_ip_is_validated_on_put_too(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    await create_pod(kube_http, namespace)
    current = (await kube_http.get(pod_path(namespace, "p"))).json()
    current["status"]["podIP"] = "not-an-ip"

    response = await kube_http.put(pod_path(namespace, "p", "status"), json=current)

    assert_invalid(response, [bad_ip(0, "not-an-ip")])


@pytest.mark.parametrize(
    ("pod_ips", "causes"),
    [
        (["bad"], [bad_ip(0, "bad")]),
        ([""], [bad_ip(0, "")]),
        (["10.0.0.1", "10.0.0.2"], [not_one_per_family(["10.0.0.1", "10.0.0.2"])]),
        (
            ["10.0.0.1", "10.0.0.1"],
            [
                not_one_per_family(["10.0.0.1", "10.0.0.1"]),
                (
                    "status.podIPs[1]",
                    "FieldValueDuplicate",
                    'Duplicate value: core.PodIP{IP:"10.0.0.1"}',
                ),
            ],
        ),
        (
            ["10.0.0.1", "2001:db8::1", "10.0.0.3"],
            [not_one_per_family(["10.0.0.1", "2001:db8::1", "10.0.0.3"])],
        ),
        (
            ["10.0.0.1", "bad"],
            [
                bad_ip(1, "bad"),
                (
                    "status.podIPs",
                    "InternalError",
                    "Internal error: failed to check for dual stack with error:ip <nil> is invalid",
                ),
                not_one_per_family(["10.0.0.1", "bad"]),
            ],
        ),
    ],
    ids=lambda v: json.dumps(v)[:40],
)
async def test_pod_ips_are_validated(
    kube_http: httpx2.AsyncClient, namespace: str, pod_ips: list[str], causes: list[Cause]
) -> None:
    await create_pod(kube_http, namespace)

    response = await patch_status(kube_http, namespace, {"podIPs": [{"ip": ip} for ip in pod_ips]})

    assert_invalid(response, causes)


@pytest.mark.parametrize("pod_ip", ["10.0.0.5", "2001:db8::1", "::ffff:1.2.3.4", "::"])
async def test_pod_ip_fills_pod_ips(
    kube_http: httpx2.AsyncClient, namespace: str, pod_ip: str
) -> None:
    await create_pod(kube_http, namespace)

    written = await written_status(kube_http, namespace, {"podIP": pod_ip})

    assert (written["podIP"], written["podIPs"]) == (pod_ip, [{"ip": pod_ip}])
    stored = await stored_status(kube_http, namespace)
    assert (stored["podIP"], stored["podIPs"]) == (pod_ip, [{"ip": pod_ip}])


async def test_pod_ips_fill_pod_ip(kube_http: httpx2.AsyncClient, namespace: str) -> None:
    await create_pod(kube_http, namespace)

    written = await written_status(
        kube_http, namespace, {"podIPs": [{"ip": "10.0.0.8"}, {"ip": "2001:db8::8"}]}
    )

    assert written["podIP"] == "10.0.0.8"
    assert written["podIPs"] == [{"ip": "10.0.0.8"}, {"ip": "2001:db8::8"}]


async def test_pod_ip_wins_when_the_two_disagree(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    await create_pod(kube_http, namespace)
    dual_stack = [{"ip": "10.0.0.8"}, {"ip": "2001:db8::8"}]

    kept = await written_status(kube_http, namespace, {"podIP": "10.0.0.8", "podIPs": dual_stack})
    replaced = await written_status(
        kube_http, namespace, {"podIP": "10.0.0.9", "podIPs": dual_stack}
    )
    # a merge patch of podIPs alone keeps the stored podIP, which then wins
    merged = await written_status(kube_http, namespace, {"podIPs": [{"ip": "10.0.0.7"}]})

    assert (kept["podIP"], kept["podIPs"]) == ("10.0.0.8", dual_stack)
    assert (replaced["podIP"], replaced["podIPs"]) == ("10.0.0.9", [{"ip": "10.0.0.9"}])
    assert (merged["podIP"], merged["podIPs"]) == ("10.0.0.9", [{"ip": "10.0.0.9"}])


async def test_clearing_pod_ip_keeps_pod_ips_and_clearing_both_drops_them(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    await create_pod(kube_http, namespace)
    await written_status(kube_http, namespace, {"podIP": "10.0.0.5"})

    emptied = await written_status(kube_http, namespace, {"podIP": ""})
    cleared = await written_status(kube_http, namespace, {"podIP": None, "podIPs": []})

    assert (emptied["podIP"], emptied["podIPs"]) == ("10.0.0.5", [{"ip": "10.0.0.5"}])
    assert "podIP" not in cleared
    assert "podIPs" not in cleared


async def test_status_writer_owns_the_filled_pod_ips(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    await create_pod(kube_http, namespace)
    await written_status(kube_http, namespace, {"podIP": "10.1.1.1"})

    meta = (await kube_http.get(pod_path(namespace, "p"))).json()["metadata"]

    owned = [m["fieldsV1"] for m in meta["managedFields"] if m["manager"] == STATUS_WRITER]
    assert owned == [
        {
            "f:status": {
                "f:podIP": {},
                "f:podIPs": {".": {}, 'k:{"ip":"10.1.1.1"}': {".": {}, "f:ip": {}}},
            }
        }
    ]


# -- conditions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("condition_type", "details"),
    [
        ("not a name!", [NAME_PART]),
        ("-starts-with-a-dash", [NAME_PART]),
        ("", ["name part must be non-empty", NAME_PART]),
        ("x" * 64, ["name part must be no more than 63 characters"]),
        ("/Ready", ["prefix part must be non-empty"]),
        ("Bad_Prefix/Ready", ["prefix part " + SUBDOMAIN]),
        (
            "a/b/c",
            [
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                "'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
                "prefix and '/' (e.g. 'example.com/MyName')"
            ],
        ),
    ],
    ids=lambda v: repr(v)[:30],
)
async def test_condition_type_must_be_a_qualified_name(
    kube_http: httpx2.AsyncClient, namespace: str, condition_type: str, details: list[str]
) -> None:
    await create_pod(kube_http, namespace)
    conditions = [
        {"type": "PodScheduled", "status": "True"},
        {"type": condition_type, "status": "True"},
    ]

    response = await patch_status(kube_http, namespace, {"conditions": conditions})

    assert_invalid(response, [bad_condition(1, condition_type, d) for d in details])
    assert "conditions" not in await stored_status(kube_http, namespace)


async def test_qualified_condition_types_are_accepted(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    await create_pod(kube_http, namespace)
    types = ["PodScheduled", "Initialized", "ContainersReady", "Ready", "example.com/Drained"]

    written = await written_status(
        kube_http, namespace, {"conditions": [{"type": t, "status": "True"} for t in types]}
    )

    assert [c["type"] for c in written["conditions"]] == types


# -- several problems at once ---------------------------------------------------------------


async def test_problems_are_reported_in_validation_order(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    await create_pod(kube_http, namespace)
    await written_status(
        kube_http, namespace, {"containerStatuses": statuses(("runner", terminated()))}
    )

    response = await patch_status(
        kube_http,
        namespace,
        {
            "podIP": "x",
            "conditions": [{"type": "a b", "status": "True"}],
            "containerStatuses": statuses(("runner", RUNNING)),
            "nominatedNodeName": "Bad_",
        },
    )

    assert_invalid(
        response,
        [
            bad_condition(0, "a b", NAME_PART),
            (
                "status.nominatedNodeName",
                "FieldValueInvalid",
                f'Invalid value: "Bad_": {SUBDOMAIN}',
            ),
            not_terminated("status.containerStatuses[0].state"),
            bad_ip(0, "x"),
        ],
    )


async def test_nominated_node_name_is_checked_only_when_it_changes(
    kube_http: httpx2.AsyncClient, namespace: str
) -> None:
    await create_pod(kube_http, namespace)

    set_once = await written_status(kube_http, namespace, {"nominatedNodeName": "node-1"})
    cleared = await written_status(kube_http, namespace, {"nominatedNodeName": ""})

    assert set_once["nominatedNodeName"] == "node-1"
    assert "nominatedNodeName" not in cleared
