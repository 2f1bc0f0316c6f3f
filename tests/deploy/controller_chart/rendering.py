"""Rendering our controller chart for the tests: objects, NOTES, merged values.

``render_ours`` renders with Helm's engine (``tests.support.helm``); ``notes`` returns the
rendered NOTES.txt (the install notes, where ignored values are warned about); ``merged_values``
is the case's values over our values.yaml, merged as Helm merges them (maps deep, ``null``
removes a default).

No scaleset image is published, so the chart refuses to render without ``image.repository`` (and
with ARC's controller image). A user sets their own build; ``installable`` does the same for a
case that names no image or ARC's (``TEST_IMAGE``), and ``render_ours``, ``notes`` and
``merged_values`` apply it unless told ``installable=False``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import helm_python
import yaml
from tests.deploy.controller_chart.cases import CHART, NAMESPACE, RELEASE
from tests.support.helm import render

TEST_IMAGE = {"repository": "registry.example.com/platform/scaleset", "tag": "0.1.0-test"}
"""The image a user built with scripts/build-image and pushed to their registry."""
ARC_IMAGE = re.compile(r"(^|/)gha-runner-scale-set-controller$")


def installable(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with ``TEST_IMAGE`` when they name no image repository, or ARC's."""
    image = values.get("image")
    repository = str(image.get("repository") or "") if isinstance(image, dict) else ""
    if repository and not ARC_IMAGE.search(repository):
        return values
    copy: dict[str, Any] = yaml.safe_load(yaml.safe_dump(values))
    copy["image"] = {**(image if isinstance(image, dict) else {}), **TEST_IMAGE}
    return copy


def render_ours(
    values: dict[str, Any],
    *,
    name: str = RELEASE,
    namespace: str = NAMESPACE,
    include_crds: bool = False,
    installable: bool = True,
) -> list[dict[str, Any]]:
    chosen = _installable(values) if installable else values
    return render(CHART, chosen, name=name, namespace=namespace, include_crds=include_crds)


_installable = installable


def notes(
    values: dict[str, Any],
    *,
    name: str = RELEASE,
    namespace: str = NAMESPACE,
    installable: bool = True,
) -> str:
    chosen = _installable(values) if installable else values
    with helm_python.Chart.load(CHART) as chart:
        manifests = chart.render(chosen, name=name, namespace=namespace, is_install=True)
    return next(text for path, text in manifests.items() if path.endswith("/NOTES.txt"))


def chart_meta() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((CHART / "Chart.yaml").read_text())
    return loaded


def default_values() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return loaded


def _merge(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = _merge(base.get(key), value)
        return merged
    return override


def merged_values(values: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = _merge(default_values(), installable(values))
    return merged


def only(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The one object of ``kind``."""
    found = [obj for obj in objects if obj["kind"] == kind]
    assert len(found) == 1, [obj["metadata"]["name"] for obj in found]
    return found[0]


def manager_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = only(objects, "Deployment")
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "manager")


def chart_path() -> Path:
    return CHART
