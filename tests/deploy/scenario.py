"""Everything the controller manager and the listener do, in one run of the demo system.

``run_everything(watch_namespaces)`` starts ``DemoSystem`` on its own embedded API server and
walks it through every path that touches the Kubernetes API: the start-up CRD check, leader
election and a hand-over, a scale set registered with its runner set, listener, listener
ServiceAccount/Role/RoleBinding/config Secret and pod; runners created, started, busy and done
(JIT Secrets written and deleted); a runner hung after its job (L4: pod and runner deleted); a busy
runner evicted (L5 replacement); the listener killed (pod recreated); the GitHub Secret rotated
(listener config rewritten); the scale set's spec changed (runner set and listener updated in
place; a proxy with credentials, whose runner proxy Secret is then rewritten when the credentials
change; the container hooks of the kubernetes container mode, so runners going away look for
their hook Pods and Secrets by label); the registration pass; scale-down; and the scale set deleted
(L10: everything removed). It returns the server's access log; tests compare each component's
part of it with RBAC.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.access import read_access_log
from tests.support.waiting import eventually

from scaleset.api import keys
from scaleset.api.listener_rbac import RBAC_GROUP
from scaleset.api.naming import ephemeral_runner_set_proxy_secret_name
from scaleset.clock import SystemClock
from scaleset.controllers import manager_process
from scaleset.controllers.autoscalingrunnerset.observed import CHART_OBJECT_KINDS
from scaleset.controllers.crd_check import installed_crd_problem
from scaleset.demo.system import SCALE_SET_NAME, SECRET_NAME, DemoSystem
from scaleset.demo.truth import Truth
from scaleset.embedded.actions.faults import Surface
from scaleset.embedded.actions.model import JobState
from scaleset.embedded.apiserver._access import AccessEntry
from scaleset.kube import KubeClient, KubeObject, NotFound, ObjectKey
from scaleset.kube.resources import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER,
    EPHEMERAL_RUNNER_SET,
    EVENT,
    POD,
    ROLE,
    ROLE_BINDING,
    SECRET,
    Kind,
)
from scaleset.listener.loop import POISON_EVENT_REASON, LoopSettings

CHARTS = Path(__file__).resolve().parents[2] / "deploy" / "charts"
CONTROLLER_CHART = CHARTS / "scaleset-controller"
RUNNER_SET_CHART = CHARTS / "scaleset-runner-set"
GRACE = 3.0
ROOT_CA = "kube-root-ca.crt"
PROXY_CREDENTIALS = "proxy-credentials"
PROXY_URL = "http://proxy.invalid:3128"
"""Never contacted: GitHub (the fake, on loopback) bypasses any proxy, and runners are fakes."""
CONTROLLER = "scaleset-controller"
LISTENER = "scaleset-listener"


def runner_set_values(controller_account: str, controller_namespace: str) -> dict[str, Any]:
    """Values of the runner scale set chart for the scale set the scenario runs (with the CA
    ConfigMap it switches to), bound to the controller's ServiceAccount."""
    return {
        "githubConfigUrl": "https://github.com/acme",
        "githubConfigSecret": {"github_token": "ghp_placeholder"},
        "githubServerTLS": {
            "certificateFrom": {"configMapKeyRef": {"name": ROOT_CA, "key": "ca.crt"}}
        },
        "controllerServiceAccount": {"name": controller_account, "namespace": controller_namespace},
    }


@dataclass(frozen=True)
class Run:
    """What one run recorded: the access log, and the listener's RBAC objects as the controller
    created them (read before the scale set was deleted)."""

    accesses: dict[AccessEntry, int]
    listener_rbac: list[dict[str, Any]]
    listener_account: tuple[str, str]
    controller_namespace: str
    runner_namespace: str

    def of(self, component: str) -> list[AccessEntry]:
        return sorted(a for a in self.accesses if a.component == component)


async def _job(system: DemoSystem, duration: float, state: JobState) -> int:
    assert system.fake is not None
    control = system.fake.control
    job = control.queue_job([SCALE_SET_NAME], duration_seconds=duration)
    await eventually(
        lambda: control.snapshot().job(job).state == state,
        within=60,
        what=f"job {job} {state.value}",
        interval=0.1,
    )
    return job


async def run_everything(watch_namespaces: tuple[str, ...]) -> Run:
    clock = SystemClock()
    system = DemoSystem(
        clock=clock,
        truth=Truth(zombie_bound=GRACE + 10.0),
        min_runners=1,
        max_runners=4,
        grace=GRACE,
        kubeconfig=None,
        started_at=clock.monotonic(),
        watch_namespaces=watch_namespaces,
    )
    await system.start()
    try:
        assert system.fake is not None
        assert system.client is not None
        assert system.kubelet is not None
        control, client = system.fake.control, system.client
        ns, ctrl_ns = system.runner_namespace, system.controller_namespace
        # what `scaleset controller` does before it builds the manager, with its own client
        options = manager_process.ControllerOptions(
            controller_namespace=ctrl_ns, listener_image="x"
        )
        checker = KubeClient.from_kubeconfig(
            system.kubeconfig, settings=manager_process.client_settings(options)
        )
        try:
            assert await installed_crd_problem(checker) is None
        finally:
            await checker.close()

        await control.wait_for(
            lambda t: any(s.polls > 0 for s in t.sessions), within=60, what="listener session"
        )
        system.chaos.hangs_pending = 1  # the first runner hangs after its job: L4
        await _job(system, 0.5, JobState.COMPLETED)
        await _job(system, 0.5, JobState.COMPLETED)

        busy = await _job(system, 30.0, JobState.RUNNING)
        runner = control.snapshot().job(busy).runner_name
        assert runner
        await system.kubelet.evict(ns, runner)  # a busy runner lost: L5 replacement

        async def replaced() -> bool:
            try:
                await client.get(EPHEMERAL_RUNNER, ObjectKey(ns, runner))
            except NotFound:
                return True
            return False

        await eventually(replaced, within=60, what="the evicted runner replaced", interval=0.1)

        old = await _listener_pod(client, ctrl_ns)
        assert old is not None
        listener_pod = old.name
        await system.kubelet.exit(ctrl_ns, listener_pod, "listener", 137)

        async def recreated() -> bool:
            try:
                pod = await client.get(POD, ObjectKey(ctrl_ns, listener_pod))
            except NotFound:
                return False
            return pod.uid != old.uid

        await eventually(recreated, within=60, what="the listener pod recreated", interval=0.1)

        await system.stop_controller()  # lease released, then taken by a new manager
        await system.start_controller()

        # a label on the scale set: propagated to the listener's objects by merge patches
        await client.patch_merge(
            AUTOSCALING_RUNNER_SET,
            ObjectKey(ns, SCALE_SET_NAME),
            {"metadata": {"labels": {"team": "ci"}}},
        )

        running = await _listener_pod(client, ctrl_ns)
        assert running is not None

        async def listener_relabelled() -> bool:
            pod = await _listener_pod(client, ctrl_ns)
            return pod is not None and pod.labels.get("team") == "ci"

        await eventually(listener_relabelled, within=60, what="the listener pod relabelled")
        relabelled = await _listener_pod(client, ctrl_ns)
        assert relabelled is not None
        assert relabelled.uid == running.uid, "the listener pod was replaced, not patched"

        await client.patch_merge(
            SECRET,
            ObjectKey(ns, SECRET_NAME),
            {"stringData": {"github_token": system.pat, "rotated": "yes"}},
        )
        await client.create(
            SECRET,
            {
                "metadata": {"name": PROXY_CREDENTIALS, "namespace": ns},
                "stringData": {"username": "proxy-user", "password": "first"},
            },
        )
        # a spec change: runner set and listener updated in place, a CA ConfigMap read, the
        # listener's config rewritten (its pod replaced); a proxy (the runner set's proxy
        # Secret); the kubernetes container mode's hooks in the runner container
        tls = {"certificateFrom": {"configMapKeyRef": {"name": ROOT_CA, "key": "ca.crt"}}}
        hooks = {"name": keys.RUNNER_CONTAINER_HOOKS_ENV, "value": "/home/runner/k8s/index.js"}
        await client.patch_merge(
            AUTOSCALING_RUNNER_SET,
            ObjectKey(ns, SCALE_SET_NAME),
            {
                "spec": {
                    "maxRunners": 5,
                    "githubServerTLS": tls,
                    "proxy": {
                        "http": {"url": PROXY_URL, "credentialSecretRef": PROXY_CREDENTIALS},
                        "noProxy": ["example.com"],
                    },
                    "template": {
                        "metadata": {"labels": {"team": "ci"}},
                        "spec": {
                            "containers": [
                                {
                                    "name": keys.RUNNER_CONTAINER,
                                    "image": "ghcr.io/actions/actions-runner:latest",
                                    "command": ["/home/runner/run.sh"],
                                    "env": [hooks],
                                }
                            ]
                        },
                    },
                },
            },
        )

        async def rolled_out() -> bool:
            sets = await client.list(EPHEMERAL_RUNNER_SET, namespace=ns)
            listeners = await client.list(AUTOSCALING_LISTENER, namespace=ctrl_ns)
            return any('"team": "ci"' in json.dumps(s.raw["spec"]) for s in sets.items) and any(
                item.raw["spec"].get("maxRunners") == 5 for item in listeners.items
            )

        await eventually(rolled_out, within=60, what="the spec change rolled out", interval=0.1)

        async def listener_replaced() -> bool:
            # the changed config (CA, proxy) replaces the listener pod; the poison messages below
            # must all reach the new listener, or the old one takes some and the count resets
            pod = await _listener_pod(client, ctrl_ns)
            return (
                pod is not None
                and pod.uid != relabelled.uid
                and pod.raw.get("status", {}).get("phase") == "Running"
            )

        await eventually(listener_replaced, within=60, what="the new listener pod", interval=0.1)
        await eventually(lambda: _proxy_secret_has(system, "first"), within=60, what="proxy Secret")
        # the poison messages before the proxy's credentials change: the controller watches
        # them, and a changed password replaces the listener pod at once, which would take some
        poison_events = _poison(system)
        await eventually(poison_events, within=60, what="the poison Event created and counted")
        # the proxy's credentials change: the runner set rewrites its proxy Secret the next time
        # it reconciles (when the next job's runner finishes)
        await client.patch_merge(
            SECRET, ObjectKey(ns, PROXY_CREDENTIALS), {"stringData": {"password": "second"}}
        )
        await _job(system, 0.5, JobState.COMPLETED)
        await eventually(
            lambda: _proxy_secret_has(system, "second"), within=60, what="proxy Secret rewritten"
        )

        listener_rbac, account = await _listener_rbac(system)
        chart_objects = await _chart_objects(system)
        await client.delete(AUTOSCALING_RUNNER_SET, ObjectKey(ns, SCALE_SET_NAME))

        async def everything_gone() -> bool:
            listed = await client.list(AUTOSCALING_LISTENER, namespace=ctrl_ns)
            runners = await client.list(EPHEMERAL_RUNNER, namespace=ns)
            try:
                await client.get(AUTOSCALING_RUNNER_SET, ObjectKey(ns, SCALE_SET_NAME))
            except NotFound:
                return not listed.items and not runners.items
            return False

        await eventually(everything_gone, within=90, what="the scale set deleted", interval=0.2)
        for kind, key in chart_objects:  # released: cleanup-protection removed
            released = await client.get(kind, key)
            assert keys.CLEANUP_PROTECTION_FINALIZER not in released.raw["metadata"].get(
                "finalizers", []
            ), f"{kind.kind} {key} still protected"
        assert control.snapshot().scale_sets == ()
        await asyncio.sleep(0)
        accesses = await read_access_log(system.kubeconfig)
        return Run(accesses, listener_rbac, account, ctrl_ns, ns)
    finally:
        await system.stop()


async def _proxy_secret_has(system: DemoSystem, password: str) -> bool:
    """Whether the runner set's proxy Secret exists with ``password`` in its proxy URL."""
    assert system.client is not None
    client, ns = system.client, system.runner_namespace
    for runner_set in (await client.list(EPHEMERAL_RUNNER_SET, namespace=ns)).items:
        name = ephemeral_runner_set_proxy_secret_name(runner_set.name, ns)
        try:
            secret = await client.get(SECRET, ObjectKey(ns, name))
        except NotFound:
            continue
        url = base64.b64decode(secret.raw.get("data", {}).get(keys.PROXY_HTTP_KEY, ""))
        if f":{password}@".encode() in url:
            return True
    return False


def _poison(system: DemoSystem) -> Callable[[], Awaitable[bool]]:
    """Twice ``poison_cap`` unparsable messages: the listener acknowledges the message at its
    cap and says so with a Warning Event on its runner set, created once and counted again."""
    assert system.fake is not None
    assert system.client is not None
    client, namespace = system.client, system.runner_namespace
    poison = {
        "messageId": 777,
        "messageType": "RunnerScaleSetJobMessages",
        "body": "{not json",
        "statistics": {"totalAssignedJobs": 0, "totalRunningJobs": 0},
    }
    for _ in range(2 * LoopSettings().poison_cap):
        system.fake.control.faults.fail_next(
            1,
            200,
            body=json.dumps(poison),
            content_type="application/json",
            surface=Surface.MESSAGE_QUEUE,
            method="GET",
        )

    async def counted() -> bool:
        listed = await client.list(EVENT, namespace=namespace)
        return any(
            e.raw.get("reason") == POISON_EVENT_REASON and (e.raw.get("count") or 0) >= 2
            for e in listed.items
        )

    return counted


async def _listener_pod(client: KubeClient, namespace: str) -> KubeObject | None:
    pods = await client.list(POD, namespace=namespace)
    return next((p for p in pods.items if p.name.endswith("-listener")), None)


async def _chart_objects(system: DemoSystem) -> list[tuple[Kind, ObjectKey]]:
    """The objects the runner scale set chart installs beside the scale set, with their
    cleanup-protection finalizer, named by the scale set's cleanup annotations — as a Helm install
    leaves them (the demo applies the scale set alone): the controller releases each at deletion.
    """
    assert system.client is not None
    client, ns = system.client, system.runner_namespace
    protected = {"finalizers": [keys.CLEANUP_PROTECTION_FINALIZER]}
    annotations: dict[str, str] = {}
    made: list[tuple[Kind, ObjectKey]] = []
    for annotation, kind in CHART_OBJECT_KINDS.items():
        if kind is SECRET:
            name = SECRET_NAME
            await client.patch_merge(SECRET, ObjectKey(ns, name), {"metadata": protected})
        else:
            name = f"{SCALE_SET_NAME}-{annotation.rsplit('/', 1)[1].removeprefix('cleanup-')}"
            body: dict[str, Any] = {"metadata": {"name": name, "namespace": ns, **protected}}
            if kind is ROLE:
                body["rules"] = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
            elif kind is ROLE_BINDING:
                body["roleRef"] = {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name}
                body["subjects"] = [{"kind": "ServiceAccount", "name": "x", "namespace": ns}]
            await client.create(kind, body)
        annotations[annotation] = name
        made.append((kind, ObjectKey(ns, name)))
    await client.patch_merge(
        AUTOSCALING_RUNNER_SET,
        ObjectKey(ns, SCALE_SET_NAME),
        {"metadata": {"annotations": annotations}},
    )
    return made


async def _listener_rbac(system: DemoSystem) -> tuple[list[dict[str, Any]], tuple[str, str]]:
    """The Roles and RoleBindings in the runner namespace, and the listener pod's account."""
    assert system.client is not None
    client = system.client
    objects: list[dict[str, Any]] = []
    for kind, name in ((ROLE, "Role"), (ROLE_BINDING, "RoleBinding")):
        for item in (await client.list(kind, namespace=system.runner_namespace)).items:
            objects.append({**item.raw, "kind": name})
    found: list[KubeObject] = []

    async def listener_pod() -> bool:  # a pod being replaced (a rotated input) is gone a moment
        pod = await _listener_pod(client, system.controller_namespace)
        if pod is not None:
            found.append(pod)
        return pod is not None

    await eventually(listener_pod, within=60, what="a listener pod", interval=0.1)
    account = str(found[-1].raw["spec"].get("serviceAccountName", ""))
    return objects, (system.controller_namespace, account)
