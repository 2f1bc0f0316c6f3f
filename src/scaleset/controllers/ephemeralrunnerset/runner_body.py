"""The EphemeralRunner an EphemeralRunnerSet creates, as ARC builds it.

- name: ``generateName: <set>-runner-``, in the set's namespace;
- labels: the set's labels, ``app.kubernetes.io/component=runner``, then
  ``spec.ephemeralRunnerMetadata.labels``;
- annotations: the set's annotations (minus kubectl's last-applied copy and scaleset's own
  ``scaleset.dev/`` keys, which describe the set),
  ``actions.github.com/patch-id=<spec.patchID>``, then ``spec.ephemeralRunnerMetadata
  .annotations``;
- both runner finalizers from the start, the set as controller owner;
- spec: the set's ``spec.ephemeralRunnerSpec`` as stored (raw JSON, unknown fields kept), with
  ``proxySecretRef`` naming the set's runner proxy Secret when a proxy is configured.

``expected_runner_spec`` is that spec: a runner whose spec differs was built from an older
runner spec (spec change, §3.3).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scaleset.api import keys
from scaleset.api.naming import (
    ephemeral_runner_generate_name,
    ephemeral_runner_set_proxy_secret_name,
)
from scaleset.api.owned import controller_reference, string_map
from scaleset.kube.objects import JsonObject, KubeObject

_NOT_COPIED = ("kubectl.kubernetes.io/last-applied-configuration",)


def expected_runner_spec(runner_set: KubeObject) -> Mapping[str, Any]:
    """The spec a runner of this set gets today (with ``proxySecretRef`` when a proxy is set)."""
    spec = runner_set.spec.get("ephemeralRunnerSpec")
    if not isinstance(spec, dict):
        return {}
    proxy = spec.get("proxy")
    if isinstance(proxy, dict) and proxy:
        name = ephemeral_runner_set_proxy_secret_name(runner_set.name, runner_set.namespace)
        return {**spec, "proxySecretRef": name}
    return spec


def runner_body(runner_set: KubeObject, patch_id: int) -> JsonObject:
    """The JSON of one new EphemeralRunner for ``runner_set`` at ``patch_id``."""
    extra = runner_set.spec.get("ephemeralRunnerMetadata")
    extra = extra if isinstance(extra, dict) else {}
    labels = {
        **dict(runner_set.labels),
        keys.COMPONENT_LABEL: keys.COMPONENT_RUNNER,
        **string_map(extra.get("labels")),
    }
    annotations = {
        **{
            k: v
            for k, v in runner_set.annotations.items()
            if k not in _NOT_COPIED and not k.startswith(keys.OWN_KEY_PREFIX)
        },
        keys.PATCH_ID_ANNOTATION: str(patch_id),
        **string_map(extra.get("annotations")),
    }
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "EphemeralRunner",
        "metadata": {
            "generateName": ephemeral_runner_generate_name(runner_set.name),
            "namespace": runner_set.namespace,
            "labels": labels,
            "annotations": annotations,
            "finalizers": [
                keys.EPHEMERAL_RUNNER_FINALIZER,
                keys.EPHEMERAL_RUNNER_REGISTRATION_FINALIZER,
            ],
            "ownerReferences": [
                controller_reference("EphemeralRunnerSet", runner_set.name, runner_set.uid)
            ],
        },
        "spec": dict(expected_runner_spec(runner_set)),
    }
