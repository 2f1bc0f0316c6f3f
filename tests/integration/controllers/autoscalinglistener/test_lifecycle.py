"""A listener's objects under the controller, on both backends:
creation in ARC's shape, deletion in ARC's order, drift (Role rules, metadata), the template,
the proxy Secret, the CA, and pods that end or vanish."""

from __future__ import annotations

import base64
import dataclasses

from tests.integration.controllers.autoscalinglistener.world import (
    LISTENER_IMAGE,
    PAT,
    SCALE_SET,
    SETTINGS,
    World,
)

from scaleset.api import keys
from scaleset.api.listener_rbac import listener_role_rules
from scaleset.embedded.kubelet import SimulatedKubelet
from scaleset.kube import ObjectKey
from scaleset.kube.resources import AUTOSCALING_LISTENER, CONFIG_MAP, POD, SECRET
from scaleset.listener.config import parse_config


async def test_a_listener_gets_finalizer_service_account_role_binding_config_and_pod(
    world: World,
) -> None:
    async with world.kubelet(), world.controller():
        await world.create_listener()
        pod = await world.running_pod()
        running = await world.condition_where(
            "ListenerRunning", lambda c: c["status"] == "True", "ListenerRunning=True"
        )
        assert running["reason"] == "Running"
        configured = await world.condition("Configured")
        assert configured is not None
        assert (configured["status"], configured["reason"]) == ("True", "ConfigWritten")

        listener = await world.listener()
        assert listener is not None
        assert listener.metadata.finalizers == [keys.AUTOSCALING_LISTENER_FINALIZER]

        objects = await world.listener_objects()
        account, role, binding = objects["serviceaccount"], objects["role"], objects["rolebinding"]
        assert account is not None
        assert role is not None
        assert binding is not None
        assert role.raw["rules"] == listener_role_rules(SCALE_SET)
        assert binding.raw["roleRef"]["name"] == world.name
        assert binding.raw["subjects"] == [
            {"kind": "ServiceAccount", "name": world.name, "namespace": world.namespace}
        ]
        for obj in (role, binding):
            assert obj.labels[keys.LISTENER_NAME_LABEL] == world.name
            assert obj.labels[keys.LISTENER_NAMESPACE_LABEL] == world.namespace

        config = parse_config(json_bytes(await world.config_json()))
        assert config.github_token.get_secret_value() == PAT
        assert config.runner_scale_set_id == world.scale_set_id
        assert config.ephemeral_runner_set_name == SCALE_SET

        spec = pod.raw["spec"]
        assert spec["serviceAccountName"] == world.name
        assert spec["restartPolicy"] == "Never"
        container = spec["containers"][0]
        assert container["image"] == LISTENER_IMAGE
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["LISTENER_CONFIG_PATH"] == "/etc/gha-listener/config.json"
        owners = {name: obj.controller_owner for name, obj in {"pod": pod, "sa": account}.items()}
        for owner in owners.values():
            assert owner is not None
            assert (owner.kind, owner.name, owner.uid) == (
                "AutoscalingListener",
                world.name,
                listener.metadata.uid,
            )


async def test_deletion_removes_pod_role_binding_role_config_and_account_then_the_listener(
    world: World,
) -> None:
    async with world.kubelet(), world.controller() as controller:
        await world.create_listener()
        await world.running_pod()

        def gauge(value: float) -> bool:
            return controller.running_listener(world.name, world.namespace) == value

        await world.until_still(lambda: gauge(1.0), "gha_controller_running_listeners 1")
        await world.client.delete(AUTOSCALING_LISTENER, world.key())

        async def gone() -> bool:
            return await world.listener() is None

        await world.until(gone, "the listener gone")
        assert all(obj is None for obj in (await world.listener_objects()).values())
        await world.until_still(lambda: gauge(0.0), "gha_controller_running_listeners 0")


async def test_changing_the_runner_set_name_updates_the_role_rules(world: World) -> None:
    async with world.kubelet(), world.controller():
        await world.create_listener()
        await world.running_pod()
        await world.runner_set("arc-v2")
        await world.patch_listener({"spec": {"ephemeralRunnerSetName": "arc-v2"}})

        async def updated() -> bool:
            role = (await world.listener_objects())["role"]
            return role is not None and role.raw["rules"] == listener_role_rules("arc-v2")

        await world.until(updated, "Role rules naming arc-v2")
        config = await world.config_json()
        assert config["ephemeral_runner_set_name"] == "arc-v2"


async def test_listener_metadata_changes_reach_its_objects(world: World) -> None:
    async with world.kubelet(), world.controller():
        await world.create_listener()
        first = await world.running_pod()
        await world.patch_listener(
            {
                "metadata": {"labels": {"team": "ci"}},
                "spec": {
                    "serviceAccountMetadata": {"labels": {"sa": "1"}, "annotations": {"a": "sa"}},
                    "roleMetadata": {"labels": {"role": "1"}},
                    "roleBindingMetadata": {"labels": {"binding": "1"}},
                    "configSecretMetadata": {"labels": {"config": "1"}},
                },
            }
        )

        async def propagated() -> bool:
            objects = await world.listener_objects()
            wanted = {
                "serviceaccount": ("sa", "team"),
                "role": ("role", "team"),
                "rolebinding": ("binding", "team"),
                "config": ("config",),
                "pod": ("team",),
            }
            return all(
                (obj := objects[name]) is not None and all(k in obj.labels for k in labels)
                for name, labels in wanted.items()
            )

        await world.until(propagated, "labels on every listener object")
        account = (await world.listener_objects())["serviceaccount"]
        assert account is not None
        assert account.annotations["a"] == "sa"
        pod = await world.pod()
        assert pod is not None
        assert pod.uid == first.uid, "a label change does not restart the listener"


async def test_a_terminated_listener_gets_a_new_pod_and_keeps_its_config_secret(
    world: World,
) -> None:
    async with world.kubelet() as kubelet, world.controller():
        await world.create_listener()
        first = await world.running_pod()
        config = await world.config_secret()
        assert config is not None
        await kubelet.exit(world.namespace, world.name, "listener", 1)
        second = await world.running_pod(other_than=first.uid)
        assert second.uid != first.uid
        kept = await world.config_secret()
        assert kept is not None
        assert kept.uid == config.uid
        listener = await world.listener()
        assert listener is not None
        failure = listener.status.last_pod_failure
        assert failure is not None
        assert (failure.pod_uid, failure.reason, failure.exit_code) == (
            first.uid,
            "ListenerConfigInvalid",
            1,
        )
        await world.event_where(
            lambda kind, reason, _: (kind, reason) == ("Warning", "ListenerPodFailed"),
            "a Warning Event about the failed pod",
        )


async def test_a_deleted_or_evicted_listener_pod_is_replaced(world: World) -> None:
    async with world.kubelet() as kubelet, world.controller():
        await world.create_listener()
        first = await world.running_pod()
        await world.client.delete(POD, world.key(), grace_period_seconds=0)
        second = await world.running_pod(other_than=first.uid)
        # an eviction counts unless the listener ran at least the initial back-off: let it run
        # that long. (How far waiting for the pod moved the clock depends on timing: CI saw an
        # eviction after less than that counted, pod_failures 1, where other runs reached the
        # failure count's reset by the next pod's health before the assertion read it.)
        world.clock.advance(SETTINGS.backoff_initial + 10.0)
        await kubelet.evict(world.namespace, world.name)
        third = await world.running_pod(other_than=second.uid)
        assert third.uid not in (first.uid, second.uid)
        listener = await world.listener()
        assert listener is not None
        # the deletion is no failure; the eviction of a listener that ran is on record but not
        # counted towards the back-off (the node chose it: not a crash loop)
        assert listener.status.pod_failures == 0
        assert listener.status.last_pod_failure is not None
        assert listener.status.last_pod_failure.reason == "Evicted"


async def test_the_listener_template_is_applied(world: World) -> None:
    """ARC's merge, with the full template allowed (``--allow-full-listener-template``): a
    sidecar and any listener container field."""
    template = {
        "metadata": {"labels": {"from-template": "yes"}},
        "spec": {
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
            "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {"name": "listener", "imagePullPolicy": "Always"},
                {"name": "sidecar", "image": LISTENER_IMAGE},
            ],
        },
    }
    full = dataclasses.replace(
        SETTINGS, policy=dataclasses.replace(SETTINGS.policy, allow_full_listener_template=True)
    )
    async with world.kubelet(), world.controller(settings=full):
        await world.create_listener(template=template)
        pod = await world.running_pod()
        spec = pod.raw["spec"]
        assert spec["securityContext"]["runAsUser"] == 1000
        assert spec["tolerations"][0]["key"] == "spot"
        names = [c["name"] for c in spec["containers"]]
        assert names == ["listener", "sidecar"]
        assert spec["containers"][0]["imagePullPolicy"] == "Always"
        assert pod.labels["from-template"] == "yes"


async def test_the_proxy_secret_is_created_used_for_env_and_deleted_on_cleanup(
    world: World,
) -> None:
    await world.client.create(
        SECRET,
        {
            "metadata": {"name": "proxy-auth", "namespace": world.scale_set_namespace},
            "stringData": {"username": "proxy-user", "password": "proxy-pass-123"},
        },
    )
    proxy = {
        "http": {"url": "http://proxy.example:3128", "credentialSecretRef": "proxy-auth"},
        "noProxy": ["example.com", "10.0.0.0/8"],
    }
    async with world.kubelet(), world.controller():
        await world.create_listener(proxy=proxy)
        pod = await world.running_pod()
        proxy_key = ObjectKey(world.namespace, f"{world.name}-proxy")
        secret = await world.get(SECRET, proxy_key)
        assert secret is not None
        data = {k: base64.b64decode(v).decode() for k, v in secret.raw["data"].items()}
        assert data == {
            "http_proxy": "http://proxy-user:proxy-pass-123@proxy.example:3128",
            "https_proxy": "",
            "no_proxy": "example.com,10.0.0.0/8",
        }
        env = {e["name"]: e for e in pod.raw["spec"]["containers"][0]["env"]}
        assert env["http_proxy"]["valueFrom"]["secretKeyRef"]["name"] == proxy_key.name
        assert env["no_proxy"]["valueFrom"]["secretKeyRef"]["key"] == "no_proxy"
        assert "https_proxy" not in env
        await world.client.delete(AUTOSCALING_LISTENER, world.key())

        async def gone() -> bool:
            return await world.get(SECRET, proxy_key) is None and await world.listener() is None

        await world.until(gone, "the proxy Secret and the listener gone")


async def test_the_github_server_ca_is_written_into_the_listener_config(world: World) -> None:
    pem = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"
    await world.client.create(
        CONFIG_MAP,
        {
            "metadata": {"name": "github-ca", "namespace": world.scale_set_namespace},
            "data": {"ca.crt": pem},
        },
    )
    tls = {"certificateFrom": {"configMapKeyRef": {"name": "github-ca", "key": "ca.crt"}}}
    async with world.controller():
        await world.create_listener(githubServerTLS=tls)

        async def written() -> bool:
            return await world.config_secret() is not None

        await world.until(written, "the config Secret")
        assert (await world.config_json())["server_root_ca"] == pem


async def test_a_listener_whose_scale_set_is_gone_is_deleted(world: World) -> None:
    async with world.controller() as controller:
        await world.create_listener(autoscalingRunnerSetName="gone")

        async def deleted() -> bool:
            return await world.listener() is None

        await world.until(deleted, "the orphaned listener deleted")
        assert controller.decisions("ScaleSetGone") == 1


def json_bytes(document: dict[str, object]) -> bytes:
    import json

    return json.dumps(document).encode()


__all__ = ["SimulatedKubelet"]
