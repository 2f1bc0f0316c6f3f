"""Structural-schema count bounds: maxItems/minItems on arrays and maxProperties/minProperties on
objects report the count as the bad value, in kube-apiserver's wording."""

from __future__ import annotations

from scaleset.embedded.apiserver._errors import FieldError
from scaleset.embedded.apiserver._schema import validate

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "few": {"type": "array", "items": {"type": "string"}, "maxItems": 1},
                "some": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                "small": {"type": "object", "maxProperties": 1},
                "full": {"type": "object", "minProperties": 2},
            },
        }
    },
}


def test_counts_within_bounds_pass() -> None:
    obj = {"spec": {"few": ["a"], "some": ["a", "b"], "small": {"a": 1}, "full": {"a": 1, "b": 2}}}

    assert validate(obj, SCHEMA) == []


def test_counts_outside_bounds_name_the_bound_and_the_count() -> None:
    obj = {"spec": {"few": ["a", "b"], "some": ["a"], "small": {"a": 1, "b": 2}, "full": {}}}

    assert validate(obj, SCHEMA) == [
        FieldError("Invalid", "spec.few", 2, "spec.few in body should have at most 1 items"),
        FieldError("Invalid", "spec.some", 1, "spec.some in body should have at least 2 items"),
        FieldError(
            "Invalid", "spec.small", 2, "spec.small in body should have at most 1 properties"
        ),
        FieldError(
            "Invalid", "spec.full", 0, "spec.full in body should have at least 2 properties"
        ),
    ]
