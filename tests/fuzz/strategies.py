"""Shared fuzzing strategies: arbitrary JSON values, strings that have broken parsers before
(unicode digits, huge numbers, timestamps, base64), mutations of a known-good object, and one
settings profile (derandomized, no example database) so every run tries the same cases."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

ARC_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "arc"

Json = Any


def fuzz_settings(max_examples: int) -> settings:
    """Deterministic settings for a fuzz test: same cases every run, no database, no deadline
    (the machine is shared and slow), no health check that a slow generator trips."""
    return settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )


TRICKY_STRINGS: tuple[str, ...] = (
    "",
    " ",
    "0",
    "-1",
    "7",
    "00042",
    "²",  # str.isdigit() is True, int() refuses it
    "١٢٣",  # Arabic-Indic digits: int() accepts them
    "1" * 5000,  # more digits than int() converts by default
    "9" * 25,
    "1e3",
    "NaN",
    "null",
    "true",
    "Never",
    "Always",
    "OnFailure",
    "runner",
    "Pending",
    "Running",
    "Succeeded",
    "Failed",
    "Outdated",
    "2026-05-30T09:12:46Z",
    "2026-05-30T09:12:46.123456+02:00",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59-23:59",
    "2026-05-30T09:12:46",
    "2026-13-45T99:99:99Z",
    "https://github.com/octo-org",
    "https://github.com/octo-org/repo",
    "https://github.com/enterprises/e",
    "http://[::1",
    "https://github.com/%zz",
    "MTIz",  # base64 of "123"
    "wrI=",  # base64 of "²"
    "//8=",  # base64 of bytes that are not UTF-8
    "actions.github.com/v1alpha1",
    "AutoscalingRunnerSet",
    "EphemeralRunnerSet",
    "EphemeralRunner",
    "AutoscalingListener",
    "\x00",
    "é" * 300,
    "x" * 10_000,
)

tricky_text = st.one_of(st.sampled_from(TRICKY_STRINGS), st.text(max_size=40))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(),  # beyond int64 too: JSON does not bound them
    st.sampled_from([0, 1, -1, 2**63, -(2**63) - 1, 10**400]),
    st.floats(allow_nan=False, allow_infinity=False),
    tricky_text,
)
json_values: st.SearchStrategy[Json] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(tricky_text, children, max_size=5),
    ),
    max_leaves=25,
)
json_objects: st.SearchStrategy[dict[str, Json]] = st.dictionaries(
    tricky_text, json_values, max_size=8
)


def load_yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    return data


def fixture(name: str) -> dict[str, Any]:
    return load_yaml(ARC_FIXTURES / name)


def _paths(value: Json, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every path in ``value``: the root, each inner node and each leaf."""
    found = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            found.extend(_paths(child, (*path, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(_paths(child, (*path, index)))
    return found


@st.composite
def mutated(
    draw: st.DrawFn,
    original: dict[str, Any],
    max_mutations: int = 4,
    frozen: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``original`` (deep-copied) with 1..max_mutations changes at random paths: a value
    replaced by any JSON, a key deleted, an unknown key added (or a list grown), a value
    wrapped in a list, turned into its string, or nulled. Top-level keys in ``frozen`` are left
    alone (e.g. ``metadata``, whose types the API server enforces)."""
    obj = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = [p for p in _paths(obj) if p and p[0] not in frozen]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = obj
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        op = draw(st.sampled_from(["replace", "delete", "add", "wrap", "stringify", "nullify"]))
        if op == "replace":
            parent[last] = draw(json_values)
        elif op == "delete":
            del parent[last]
        elif op == "add":
            target = parent[last]
            if isinstance(target, dict):
                target[draw(tricky_text)] = draw(json_values)
            elif isinstance(target, list):
                target.append(draw(json_values))
            else:
                parent[last] = draw(json_values)
        elif op == "wrap":
            parent[last] = [parent[last]]
        elif op == "stringify":
            parent[last] = str(parent[last])
        else:
            parent[last] = None
    return obj
