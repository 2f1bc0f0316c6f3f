"""Render Helm charts in tests with Helm's own engine (PyPI's ``helm-python-sdk``, which ships
Helm's Go library as ``libhelm_c.so``): no ``helm`` binary, no cluster.

``render(chart_dir, values, name=..., namespace=...)`` returns the rendered objects, one dict per
YAML document, in template order, each with the template it came from under ``SOURCE`` (a key no
Kubernetes object has, so it can be popped before an object is compared or applied). Empty
documents (a template whose ``if`` was false) are dropped; ``kube_version`` (e.g. ``"v1.28.3"``)
sets ``.Capabilities.KubeVersion`` instead of Helm's default. ``lint(chart_dir, values)`` returns
Helm's lint messages of warning severity or worse.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import helm_python
import yaml
from helm_python import _native

SOURCE = "__template__"
"""Key under which ``render`` records each object's template path (``chart/templates/x.yaml``)."""


class KubeYamlLoader(yaml.SafeLoader):
    """YAML as Kubernetes reads it (sigs.k8s.io/yaml turns YAML into JSON): a timestamp-shaped
    scalar is a string. PyYAML's safe loader would make it a datetime, and fail on one that is
    not a valid date (``2026-13-45T99:99:99Z``), which Kubernetes accepts as a string."""


KubeYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def render(
    chart_dir: Path,
    values: dict[str, Any] | None = None,
    *,
    name: str = "release",
    namespace: str = "default",
    include_crds: bool = False,
    kube_version: str | None = None,
) -> list[dict[str, Any]]:
    """The objects the chart renders for ``values`` as release ``name`` in ``namespace``."""
    objects: list[dict[str, Any]] = []
    with helm_python.Chart.load(chart_dir) as chart:
        if kube_version is None:
            manifests = chart.render(values or {}, name=name, namespace=namespace, is_install=True)
        else:  # Chart.render has no kube_version argument; the library's render entry point has
            options = {
                "name": name,
                "namespace": namespace,
                "is_install": True,
                "kube_version": kube_version,
            }
            rendered = _native.call_string(
                "helm_render", chart._raw(), json.dumps(values or {}), json.dumps(options)
            )
            manifests = json.loads(rendered)
        crds = chart.crds if include_crds else []
    for crd in crds:
        for document in yaml.load_all(crd["data"], Loader=KubeYamlLoader):
            if document:
                document[SOURCE] = crd["name"]
                objects.append(document)
    for template in sorted(manifests):
        if not template.endswith((".yaml", ".yml")):
            continue
        for document in yaml.load_all(manifests[template], Loader=KubeYamlLoader):
            if document:
                document[SOURCE] = template
                objects.append(document)
    return objects


def lint(chart_dir: Path, values: dict[str, Any] | None = None) -> list[str]:
    """Helm lint's findings of warning severity or worse, as ``path: error`` lines."""
    report = helm_python.lint(chart_dir, values, strict=True)
    return [
        f"{message.get('path', '')}: {message.get('error', '')}"
        for message in report.get("messages", [])
        if int(message.get("severity", 0)) >= 2
    ]
