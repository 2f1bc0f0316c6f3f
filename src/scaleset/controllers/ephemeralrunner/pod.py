"""The runner pod and the JIT Secret of one EphemeralRunner, as ARC builds them, with
``restartPolicy: Never`` always (L5).

Pod: the runner's pod template; name and namespace of the runner; labels = runner labels ∪
template labels ∪ ``actions-ephemeral-runner=True`` ∪ ``pod-template-hash``; annotations =
runner ∪ template annotations; controller owner reference = the runner. The ``runner`` container
gets ``ACTIONS_RUNNER_INPUT_JITCONFIG`` from the Secret's ``jitToken``, the extra user agent,
``ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1`` and, when ``proxySecretRef`` is set,
``http_proxy`` / ``https_proxy`` / ``no_proxy`` from that Secret (each only if configured).

Secret: named like the runner, data ``jitToken``, ``runnerName``, ``runnerId``, ``scaleSetId``,
labels and annotations from ``ephemeralRunnerConfigSecretMetadata``, owned by the runner.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping
from typing import Any

from scaleset.api import EphemeralRunner, keys, naming
from scaleset.api.owned import controller_reference, string_map
from scaleset.github import JitRunnerConfig

JsonObject = dict[str, Any]


def work_folder(runner: EphemeralRunner) -> str:
    """The runner container's ``workingDir`` (ARC passes it to generatejitconfig)."""
    container = _runner_container(runner.spec.spec)
    value = container.get("workingDir") if container is not None else None
    return value if isinstance(value, str) else ""


def jit_secret(runner: EphemeralRunner, config: JitRunnerConfig) -> JsonObject:
    """The JIT Secret body (the JIT config goes only into ``data``)."""
    meta = runner.spec.ephemeral_runner_config_secret_metadata
    data = {
        keys.JIT_TOKEN_KEY: config.encoded_jit_config.get_secret_value(),
        keys.JIT_RUNNER_NAME_KEY: config.runner.name or runner.metadata.name,
        keys.JIT_RUNNER_ID_KEY: str(config.runner.id),
        keys.JIT_SCALE_SET_ID_KEY: str(runner.spec.runner_scale_set_id),
    }
    metadata: JsonObject = {
        "name": naming.jit_secret_name(runner.metadata.name),
        "namespace": runner.metadata.namespace,
        "ownerReferences": [
            controller_reference("EphemeralRunner", runner.metadata.name, runner.metadata.uid)
        ],
    }
    if meta is not None and meta.labels:
        metadata["labels"] = dict(meta.labels)
    if meta is not None and meta.annotations:
        metadata["annotations"] = dict(meta.annotations)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": "Opaque",
        "data": {key: _b64(value) for key, value in data.items()},
    }


def runner_pod(runner: EphemeralRunner, *, user_agent: str) -> JsonObject:
    """The runner pod body. The template was validated before (``api.validate``)."""
    template_meta = runner.spec.metadata
    spec: JsonObject = copy.deepcopy(dict(runner.spec.spec))
    spec["restartPolicy"] = "Never"
    containers = spec.get("containers")
    if isinstance(containers, list):
        spec["containers"] = [
            _with_runner_env(container, runner, user_agent)
            if isinstance(container, dict) and container.get("name") == keys.RUNNER_CONTAINER
            else container
            for container in containers
        ]
    labels = {
        **runner.metadata.labels,
        **string_map(template_meta.get("labels")),
        keys.EPHEMERAL_RUNNER_LABEL: keys.EPHEMERAL_RUNNER_LABEL_VALUE,
        keys.POD_TEMPLATE_HASH_LABEL: template_hash(runner),
    }
    annotations = {**runner.metadata.annotations, **string_map(template_meta.get("annotations"))}
    metadata: JsonObject = {
        "name": naming.runner_pod_name(runner.metadata.name),
        "namespace": runner.metadata.namespace,
        "labels": labels,
        "ownerReferences": [
            controller_reference("EphemeralRunner", runner.metadata.name, runner.metadata.uid)
        ],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def template_hash(runner: EphemeralRunner) -> str:
    """A short, stable hash of the pod template (the ``pod-template-hash`` label)."""
    text = json.dumps({"metadata": runner.spec.metadata, "spec": runner.spec.spec}, sort_keys=True)
    return naming.fnv_hash_string(text)


def _with_runner_env(
    container: Mapping[str, Any], runner: EphemeralRunner, user_agent: str
) -> JsonObject:
    ours: list[JsonObject] = [
        {
            "name": keys.RUNNER_JIT_CONFIG_ENV,
            "valueFrom": {
                "secretKeyRef": {
                    "name": naming.jit_secret_name(runner.metadata.name),
                    "key": keys.JIT_TOKEN_KEY,
                }
            },
        },
        {"name": keys.RUNNER_EXTRA_USER_AGENT_ENV, "value": user_agent},
        {"name": keys.RUNNER_DEPRECATED_EXIT_CODE_ENV, "value": "1"},
    ]
    proxy, secret = runner.spec.proxy, runner.spec.proxy_secret_ref
    if proxy is not None and secret:
        for configured, key in (
            (proxy.http is not None, keys.PROXY_HTTP_KEY),
            (proxy.https is not None, keys.PROXY_HTTPS_KEY),
            (bool(proxy.no_proxy), keys.PROXY_NO_PROXY_KEY),
        ):
            if configured:
                ours.append(
                    {"name": key, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}
                )
    names = {var["name"] for var in ours}
    env = container.get("env")
    kept = [
        var
        for var in (env if isinstance(env, list) else [])
        if not (isinstance(var, dict) and var.get("name") in names)
    ]
    return {**container, "env": [*kept, *ours]}


def _runner_container(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    containers = spec.get("containers")
    if not isinstance(containers, list):
        return None
    return next(
        (c for c in containers if isinstance(c, dict) and c.get("name") == keys.RUNNER_CONTAINER),
        None,
    )


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()
