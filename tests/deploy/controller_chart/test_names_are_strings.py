"""Every name the controller chart renders is a YAML string, whatever name the values give.

A name of digits only is a valid DNS-1123 label (``fullnameOverride: "0"``), and an unquoted
``name: {{ $name }}`` renders it as a YAML integer, which the API server refuses for every object
(the Helm values fuzzer found it).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.deploy.controller_chart.rendering import render_ours

NAME_FIELDS = ("name", "namespace", "serviceAccountName")


def _names(node: Any, path: str) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in NAME_FIELDS and not isinstance(value, dict | list):
                found.append((f"{path}.{key}", value))
            found += _names(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _names(value, f"{path}[{index}]")
    return found


@pytest.mark.parametrize(
    "values",
    [
        {"fullnameOverride": "0"},
        {"nameOverride": "12"},
        {"serviceAccount": {"create": True, "name": "7"}},
    ],
)
def test_a_name_of_digits_renders_as_a_string(values: dict[str, Any]) -> None:
    names = [
        (f"{obj['kind']}{path}", value)
        for obj in render_ours(values)
        for path, value in _names(obj, "")
    ]
    assert names, "the chart rendered no names"
    not_strings = [(path, value) for path, value in names if not isinstance(value, str)]
    assert not_strings == []
