"""``scaleset doctor`` on a cluster that got into trouble for real: the EphemeralRunnerSet and
EphemeralRunner controllers, the simulated kubelet running the simulated runner (and the real
listener binary), the fake GitHub service, one ``ManualClock`` — on both backends.

Six runners come up idle: the doctor finds nothing. Then the controllers go down (an outage, or
ARC's controller, which does the things below itself), and each fingerprint is produced by the
actor that produces it in a cluster:

- **runner version deprecated** — the runner process exits 7 (a deprecated version) while only
  the runner controller runs: it marks the runner Outdated, and the set controller, which
  would reap it, is down;
- **registration missing on GitHub** — the registration is deleted on GitHub (its UI);
- **pod much newer than its EphemeralRunner** (ARC #4588) — the pod is deleted and recreated with
  the same spec, as ARC's controller recreates it from the used JIT config;
- **Running with no job** — the runner is marked Running because its pod runs (ARC's meaning of
  Running; scaleset only writes it from JobStarted);
- **stuck with a finalizer** — the runner is deleted while no controller removes its finalizers;
- **idle runner past its age** — a runner nobody touched, seen by a doctor whose clock is two
  hours later;
- **listener pod crash-looping** — the real listener binary with a token GitHub refuses, in a pod
  with ``restartPolicy: Always``: the kubelet restarts it into CrashLoopBackOff.

A second scenario lets GitHub itself refuse the runner version: the fake's broker answers the
runners' message poll 403 "deprecated" (ARC #4601), the runners exit 7, scaleset's controllers
mark them and their set Outdated, and the doctor names the runner set.

The fake GitHub serves TLS (the doctor sends a credential over https only, to a host it was
told to trust); the controllers do not verify its certificate, the runners trust its CA.

Duplicate listener sessions are seen by the doctor as two AutoscalingListeners for one scale set
(two controllers managing it); producing that needs two controller installations, so it is left
to the hand-written objects of test_doctor.py.

API-server timestamps are real time while the controllers run on the ManualClock, so the doctor
looks from two hours after the real time with one-hour thresholds, and from the real time with
the default thresholds for the healthy set; the recreated pod is made at least 2 s after its
runner (server timestamps have whole seconds) and looked for with a 1 s threshold.
"""

from __future__ import annotations

import base64
import contextlib
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import trustme
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from tests.integration.controllers.ephemeralrunnerset.world import SCALE_SET, World
from tests.integration.doctor.world import approved
from tests.plugins.kube_backends import KubeBackend
from tests.plugins.secret_guard import register_secret, register_secret_source
from tests.support.kube import make_client
from tests.support.managers import manual_manager, running
from tests.support.waiting import eventually

from scaleset.api import keys
from scaleset.clock import ManualClock, SystemClock
from scaleset.controllers.ephemeralrunner.settings import Settings
from scaleset.controllers.ephemeralrunner.setup import USER_AGENT, build
from scaleset.controllers.ephemeralrunnerset import setup as runner_set_setup
from scaleset.controllers.ephemeralrunnerset.metrics import RunnerSetMetrics
from scaleset.controllers.ephemeralrunnerset.settings import Settings as RunnerSetSettings
from scaleset.controllers.github_access import ClientOptions, GitHubClients
from scaleset.controllers.manager_process import ControllerOptions
from scaleset.controllers.setup import ProcessContext
from scaleset.doctor.diagnose import diagnose
from scaleset.doctor.findings import Report
from scaleset.doctor.inventory import Thresholds
from scaleset.doctor.registrations import GitHubAccess
from scaleset.embedded.actions import FakeGitHub
from scaleset.embedded.kubelet import SimulatedKubelet, default_runtime, runner_program
from scaleset.embedded.kubelet.programs import ContainerRun
from scaleset.github import PersonalAccessToken
from scaleset.kube import KubeClient, KubeObject, NotFound
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD, SECRET
from scaleset.listener import main as listener_main
from scaleset.listener.config import parse_config

pytestmark = pytest.mark.timeout(120)

PAT = "ghp_doctorScenario0123456789abcdefghijk"
REFUSED = "ghp_doctorScenarioRefused0123456789abcd"
LISTENER_IMAGE = "ghcr.io/scaleset/scaleset:scenario"
RUNNERS = 6
LATER = Thresholds(
    pod_newer_than_runner=1.0,
    running_without_job=3600.0,
    deleting=3600.0,
    idle_age=3600.0,
    listener_restarts=3,
)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(wall=datetime.now(UTC))


@pytest.fixture
async def fake(clock: ManualClock, github_ca: trustme.CA) -> AsyncIterator[FakeGitHub]:
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    github_ca.issue_cert("127.0.0.1").configure_cert(server_context)
    async with FakeGitHub(
        clock=clock, poll_hold_seconds=0.05, ssl_context=server_context
    ) as server:
        server.add_pat(register_secret(PAT))
        register_secret(REFUSED)
        register_secret_source(server.control.issued_secrets)
        yield server


@pytest.fixture
async def world(
    kube_backend: KubeBackend,
    client: KubeClient,
    actions_crds: None,
    namespace: str,
    clock: ManualClock,
    fake: FakeGitHub,
) -> World:
    token = base64.b64encode(PAT.encode()).decode()
    await client.create(
        SECRET,
        {"metadata": {"name": "github-config"}, "data": {"github_token": token}},
        namespace=namespace,
    )
    scale_set_id = fake.control.create_scale_set(fake.config_url("acme"), SCALE_SET)
    return World(kube_backend, client, namespace, clock, fake, scale_set_id)


def trusting(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


def crash_looping_listener(world: World, ca: trustme.CA) -> Any:
    """The listener binary with a token GitHub refuses: it exits 3 on every start."""
    config = parse_config(
        {
            "configure_url": world.fake.config_url("acme"),
            "server_root_ca": ca.cert_pem.bytes().decode(),
            "github_token": REFUSED,
            "ephemeral_runner_set_namespace": world.namespace,
            "ephemeral_runner_set_name": "arc",
            "min_runners": 0,
            "max_runners": 10,
            "runner_scale_set_id": world.scale_set_id,
            "runner_scale_set_name": SCALE_SET,
        }
    )

    async def program(run: ContainerRun) -> int:
        return await listener_main.serve(
            config,
            owner=run.pod.name,
            clock=run.clock,
            kubeconfig=str(world.backend.kubeconfig_path),
            stop=run.stop,
            handle_signals=False,
        )

    return program


@asynccontextmanager
async def node(world: World, ca: trustme.CA) -> AsyncIterator[SimulatedKubelet]:
    runtime = default_runtime(runner_program(verify=trusting(ca))).with_program(
        LISTENER_IMAGE, crash_looping_listener(world, ca)
    )
    async with SimulatedKubelet(
        world.client,
        nodes=["sim-node-1"],
        namespaces=[world.namespace],
        clock=world.clock,
        runtime=runtime,
    ) as kubelet:
        yield kubelet


@asynccontextmanager
async def controllers(world: World, *, runner_set: bool) -> AsyncIterator[None]:
    """The runner controller, and the set controller when ``runner_set``, in one manager."""
    own = make_client(world.backend, clock=world.clock)
    github = GitHubClients(
        own,
        ClientOptions(clock=world.clock, environ={}, verify_tls=False, allow_http_github_url=True),
    )
    try:
        manager = manual_manager(own, world.namespace, "controller-1", world.clock)
        options = ControllerOptions(controller_namespace=world.namespace, listener_image="x")
        context = ProcessContext(options, own, world.clock)
        build(manager, context, settings=Settings(user_agent=USER_AGENT), github=github)
        if runner_set:
            runner_set_setup.build(
                manager,
                context,
                settings=RunnerSetSettings(),
                github=github,
                metrics=RunnerSetMetrics(CollectorRegistry()),
            )
        async with running(manager):
            await eventually(manager.leading.is_set, within=30.0, what="leading")
            yield
    finally:
        await github.aclose()
        await own.close()


def found(report: Report, check: str) -> set[str]:
    """Names of the objects a check found."""
    return {f.target.rsplit("/", 1)[-1] for f in report.findings if f.check == check}


async def doctor(
    world: World, clock: Any, ca: trustme.CA, thresholds: Thresholds | None = None
) -> Report:
    access = GitHubAccess(
        credentials=PersonalAccessToken(token=SecretStr(PAT)),
        hosts=approved(world.fake),
        root_ca_pem=ca.cert_pem.bytes().decode(),
    )
    report = await diagnose(
        world.client, clock, namespace=world.namespace, github=access, thresholds=thresholds
    )
    assert report.skipped == (), report.skipped
    return report


async def all_idle(world: World) -> bool:
    runners = await world.runners(include_deleting=True)
    return len(runners) == RUNNERS and all(
        r.status.get("ready") and r.status.get("runnerId") for r in runners
    )


async def pod_of(world: World, name: str) -> KubeObject | None:
    try:
        return await world.client.get(POD, world.key(name))
    except NotFound:
        return None


async def recreate_pod(world: World, name: str) -> None:
    """ARC's controller after a pod vanished: the same pod again, from the same JIT Secret."""
    old = await pod_of(world, name)
    assert old is not None
    runner = await world.runner(name)
    assert runner is not None
    created = datetime.fromisoformat(str(runner.metadata["creationTimestamp"]))
    await world.client.delete(POD, old.key)

    async def gone() -> bool:
        return await pod_of(world, name) is None

    await world.until(gone, "the pod deleted")
    await eventually(  # whole-second server timestamps: at least 2 s apart
        lambda: datetime.now(UTC) >= created + timedelta(seconds=2.5), what="2 s past the runner"
    )
    spec = dict(old.raw["spec"])
    spec.pop("nodeName", None)
    meta = old.raw["metadata"]
    await world.client.create(
        POD,
        {
            "metadata": {
                "name": name,
                "namespace": world.namespace,
                "labels": meta.get("labels", {}),
                "annotations": meta.get("annotations", {}),
                "ownerReferences": meta.get("ownerReferences", []),
            },
            "spec": spec,
        },
    )


async def test_doctor_finds_each_fingerprint_produced_by_the_system(
    world: World, github_ca: trustme.CA
) -> None:
    await world.create_set(replicas=RUNNERS, patch_id=1)
    async with node(world, github_ca) as kubelet:
        try:
            async with controllers(world, runner_set=True):
                await world.until(lambda: all_idle(world), f"{RUNNERS} idle runners")
                healthy = await doctor(world, SystemClock(), github_ca)
                assert healthy.findings == (), healthy.findings
                names = await world.names()
            outdated, missing, recreated, running, untouched, deleting = names
            async with controllers(world, runner_set=False):
                await kubelet.exit(world.namespace, outdated, "runner", 7)

                async def marked_outdated() -> bool:
                    runner = await world.runner(outdated)
                    return runner is not None and runner.status.get("phase") == "Outdated"

                await world.until(marked_outdated, "the runner marked Outdated")
            # no controller from here on
            runner = await world.runner(missing)
            assert runner is not None
            world.fake.control.delete_runner(int(runner.status["runnerId"]))
            await recreate_pod(world, recreated)
            await world.patch_status(running, {"phase": "Running"})
            await world.client.delete(EPHEMERAL_RUNNER, world.key(deleting))
            await world.client.create(
                POD,
                {
                    "metadata": {
                        "name": "arc-listener",
                        "namespace": world.namespace,
                        "labels": {
                            keys.COMPONENT_LABEL: keys.COMPONENT_LISTENER,
                            keys.SCALE_SET_NAMESPACE_LABEL: world.namespace,
                        },
                    },
                    "spec": {
                        "restartPolicy": "Always",
                        "containers": [{"name": "listener", "image": LISTENER_IMAGE}],
                    },
                },
            )

            async def crash_looping() -> bool:
                pod = await pod_of(world, "arc-listener")
                statuses = pod.status.get("containerStatuses") if pod is not None else None
                if not isinstance(statuses, list) or not statuses:
                    return False
                return int(statuses[0].get("restartCount") or 0) >= 3

            await eventually(
                crash_looping, clock=world.clock, max_step=10.0, within=60.0, what="crash loop"
            )

            later = ManualClock(wall=datetime.now(UTC) + timedelta(hours=2))
            report = await doctor(world, later, github_ca, LATER)
            assert found(report, "runner-version-deprecated") == {SCALE_SET}
            assert outdated not in found(report, "terminal-holding-slot")
            assert missing in found(report, "registration-missing")
            assert recreated in found(report, "pod-newer-than-runner")
            assert found(report, "running-without-job") == {running}
            assert untouched in found(report, "idle-past-age")
            assert found(report, "stuck-deleting") == {deleting}
            assert found(report, "listener-crash-loop") == {"arc-listener"}
            assert found(report, "crd-outdated") == set()
            for check in ("runner-pod-missing", "registration-missing", "running-without-job"):
                assert untouched not in found(report, check)
        finally:
            await release(world, kubelet)


async def test_doctor_names_the_runner_set_github_refuses_as_deprecated(
    world: World, github_ca: trustme.CA
) -> None:
    """GitHub's broker refuses the runners' version (ARC #4601): each runner exits 7 on its
    first message poll, scaleset marks it Outdated and its set Outdated — and the doctor says
    why no job runs, on the runner set."""
    world.fake.control.deprecate_runner_versions_below("99.0.0")
    await world.create_set(replicas=2, patch_id=1)
    async with node(world, github_ca) as kubelet:
        try:
            async with controllers(world, runner_set=True):

                async def refused() -> bool:
                    runner_set = await world.runner_set()
                    return runner_set is not None and runner_set.status.phase == "Outdated"

                await world.until(refused, "the runner set Outdated")
                report = await doctor(world, SystemClock(), github_ca)
        finally:
            await release(world, kubelet)
    [finding] = [f for f in report.findings if f.check == "runner-version-deprecated"]
    assert finding.target == f"EphemeralRunnerSet {world.namespace}/{SCALE_SET}"
    assert "the runner set's phase is Outdated" in finding.detail
    assert finding.severity == "error"


async def release(world: World, kubelet: SimulatedKubelet) -> None:
    """Drop the runners' finalizers (no controller is left to do it) and stop every pod while
    virtual time passes (a container's termination grace runs on the ManualClock)."""
    for runner in await world.runners(include_deleting=True):
        await world.client.patch_merge(
            EPHEMERAL_RUNNER, runner.key, {"metadata": {"finalizers": None}}
        )
    for pod in (await world.client.list(POD, namespace=world.namespace)).items:
        with contextlib.suppress(NotFound):  # its runner's removal may have taken it already
            await world.client.delete(POD, pod.key)
    await eventually(
        lambda: not kubelet.pods(), clock=world.clock, max_step=10.0, what="every pod stopped"
    )
