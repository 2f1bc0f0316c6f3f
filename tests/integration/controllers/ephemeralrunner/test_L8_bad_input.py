"""L8 — bad input gets a clear answer, never a crash loop; and the pod-level refusals of L5.

A missing GitHub Secret or a malformed spec: a ``Configured=False`` condition and an Event that
name the field, looks again with back-off, other runners unaffected, and recovery once fixed.
A template that cannot work (restarts asked for, a pod the API server rejects): Failed with
reason InvalidPod. A ResourceQuota refusal: retried with back-off, the runner replaced after
ten minutes. A pod that never starts its runner: replaced after the pending timeout.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable

from lightkube.resources import core_v1
from tests.integration.controllers.ephemeralrunner.world import PAT, World

from scaleset.api import EphemeralRunner
from scaleset.kube.resources import SECRET, Kind

RESOURCE_QUOTA = Kind(
    "",
    "v1",
    "ResourceQuota",
    "resourcequotas",
    True,
    True,
    core_v1.ResourceQuota,
    core_v1.ResourceQuotaStatus,
)


def configured(runner: EphemeralRunner) -> tuple[str, str, str] | None:
    condition = next((c for c in runner.status.conditions if c.type == "Configured"), None)
    if condition is None:
        return None
    return condition.status, condition.reason, condition.message


async def test_L8_a_missing_github_secret_names_the_field_and_recovers_once_created(
    world: World,
) -> None:
    name, healthy = "arc-runner-nosecret", "arc-runner-healthy"
    async with world.controller() as controller:
        await world.create_runner(name, githubConfigSecret="missing-config")
        await world.create_runner(healthy)
        runner = await world.runner_where(name, lambda r: configured(r) is not None, "condition")
        status, reason, message = configured(runner) or ("", "", "")
        assert (status, reason) == ("False", "GitHubSecretMissing")
        assert message.startswith("spec.githubConfigSecret: Secret")
        assert "missing-config" in message
        events = await world.event_reasons(name, "GitHubSecretMissing")
        assert events
        # Nothing else is affected: the healthy runner registers and gets its pod.
        await world.runner_where(healthy, lambda r: r.status.runner_id > 0, "healthy registered")
        # Backs off instead of looping: a handful of looks over five virtual minutes.
        before = controller.reconciles()
        for _ in range(10):
            world.clock.advance(30)
            await world.settle(controller, healthy)
        assert controller.reconciles() - before < 40

        token = base64.b64encode(PAT.encode()).decode()
        await world.client.create(
            SECRET,
            {"metadata": {"name": "missing-config"}, "data": {"github_token": token}},
            namespace=world.namespace,
        )
        runner = await world.runner_where(name, lambda r: r.status.runner_id > 0, "registered")
        assert configured(runner) is None


async def test_L8_a_bad_config_url_names_the_field(world: World) -> None:
    name = "arc-runner-badurl"
    async with world.controller():
        await world.create_runner(name, githubConfigUrl="https://github.com/")
        runner = await world.runner_where(name, lambda r: configured(r) is not None, "condition")
        status, reason, message = configured(runner) or ("", "", "")
        assert (status, reason) == ("False", "InvalidSpec")
        assert message.startswith("spec.githubConfigUrl")
        await world.event_reasons(name, "InvalidSpec")
    assert world.registrations(name) == []


async def test_L8_an_http_config_url_is_refused_unless_the_controller_allows_it(
    world: World,
) -> None:
    """A runner created directly with an http config URL (no scale set refused it first) is
    not registered (the JIT request would carry the GitHub credentials in clear text): the
    condition and an Event name the field, and GitHub is not called; allowed, it registers."""
    name = "arc-runner-http"
    assert world.fake.config_url("acme").startswith("http://"), "the fake GitHub serves http"
    async with world.controller(allow_http_github_url=False):
        await world.create_runner(name)
        runner = await world.runner_where(name, lambda r: configured(r) is not None, "condition")
        status, reason, message = configured(runner) or ("", "", "")
        assert (status, reason) == ("False", "InsecureGitHubUrl")
        assert message.startswith("spec.githubConfigUrl: uses http://")
        assert "--allow-http-github-url" in message
        assert await world.event_reasons(name, "InsecureGitHubUrl")
    assert world.registrations(name) == []
    assert world.fake.control.requests == [], "no GitHub call"
    async with world.controller():
        await world.runner_where(name, lambda r: r.status.runner_id > 0, "registered")


async def test_L5_a_template_asking_for_restarts_fails_the_runner_as_invalid_pod(
    world: World,
) -> None:
    name = "arc-runner-restarts"
    async with world.controller():
        await world.create_runner(name, pod_spec={"restartPolicy": "Always"})
        runner = await world.runner_where(name, lambda r: r.status.phase == "Failed", "Failed")
        assert runner.status.reason == "InvalidPod"
        assert "spec.spec.restartPolicy" in runner.status.message
        status, reason, message = configured(runner) or ("", "", "")
        assert (status, reason) == ("False", "InvalidPod")
        assert "restartPolicy" in message
        await world.event_reasons(name, "InvalidPod")
    assert world.registrations(name) == []
    assert await world.pod(name) is None


async def test_L8_an_unparseable_template_fails_the_runner_naming_the_field(world: World) -> None:
    name = "arc-runner-garbage"
    async with world.controller():
        await world.create_runner(name, pod_spec={"containers": "not a list"})
        runner = await world.runner_where(name, lambda r: r.status.phase == "Failed", "Failed")
        assert runner.status.reason == "InvalidPod"
        assert runner.status.message.startswith("spec.spec.containers")
    assert world.registrations(name) == []


async def test_L5_a_pod_the_api_server_rejects_fails_the_runner_and_frees_its_registration(
    world: World,
) -> None:
    name = "arc-runner-rejected"
    sidecar = {"name": "Bad_Name", "image": "busybox:1.36"}
    runner_container = {"name": "runner", "image": "ghcr.io/actions/actions-runner:2.335.1"}
    async with world.controller():
        await world.create_runner(name, pod_spec={"containers": [runner_container, sidecar]})
        runner = await world.runner_where(name, lambda r: r.status.phase == "Failed", "Failed")
        assert runner.status.reason == "InvalidPod"
        assert "Failed to create the pod:" in runner.status.message
        await world.until(
            lambda: not world.registrations(name)[0].registered, "registration removed"
        )
        await world.until(secret_gone(world, name), "JIT Secret deleted")


def secret_gone(world: World, name: str) -> Callable[[], Awaitable[bool]]:
    async def gone() -> bool:
        return await world.secret(name) is None

    return gone


async def refuse_pods_by_quota(world: World) -> None:
    """A ResourceQuota that admits no pod. On the real kube-apiserver, a real one (its status
    written by hand: there is no quota controller); the embedded server has no quota admission,
    so there its refusal is injected."""
    if world.backend.name == "real":
        quota = await world.client.create(
            RESOURCE_QUOTA,
            {"metadata": {"name": "no-pods"}, "spec": {"hard": {"pods": "0"}}},
            namespace=world.namespace,
        )
        await world.client.patch_merge(
            RESOURCE_QUOTA,
            quota.key,
            {"status": {"hard": {"pods": "0"}, "used": {"pods": "0"}}},
            status=True,
        )
        return
    world.backend.server.faults.fail_next(
        1000,
        403,
        verb="create",
        resource="pods",
        namespace=world.namespace,
        reason="Forbidden",
        message='pods "x" is forbidden: exceeded quota: no-pods, requested: pods=1, '
        "used: pods=0, limited: pods=0",
    )


async def test_L5_a_quota_refusal_is_retried_with_backoff_and_replaced_after_ten_minutes(
    world: World,
) -> None:
    name = "arc-runner-quota"
    await refuse_pods_by_quota(world)
    try:
        async with world.controller() as controller:
            await world.create_runner(name)
            runner = await world.runner_where(
                name,
                lambda r: any(c.reason == "QuotaExceeded" for c in r.status.conditions),
                "quota refusal recorded",
            )
            assert runner.status.phase == "Pending"
            assert runner.metadata.deletion_timestamp is None
            await world.event_reasons(name, "QuotaExceeded")
            await world.gone(name)
            assert controller.decisions("QuotaExceeded") >= 3
            assert controller.decisions("QuotaExceeded") < 40  # backed off, not a loop
            assert controller.decisions("QuotaExceededTooLong") == 1
    finally:
        if world.backend.name == "embedded":
            world.backend.server.faults.clear()
    [registration] = world.registrations(name)
    assert not registration.registered


async def test_a_pod_that_never_starts_its_runner_is_replaced_after_the_pending_timeout(
    world: World,
) -> None:
    """No kubelet: the pod is never scheduled. After 15 (virtual) minutes it is replaced."""
    name = "arc-runner-stuck"
    async with world.controller() as controller:
        await world.create_runner(name)
        await world.runner_where(name, lambda r: r.status.runner_id > 0, "registered")
        world.clock.advance(14 * 60)
        await world.settle(controller, name)
        assert await world.pod(name) is not None
        await world.gone(name)
        assert controller.decisions("PodPendingTimeout") == 1
        reasons = await world.event_reasons(name, "PodPendingTimeout")
        assert "PodPendingTimeout" in reasons
