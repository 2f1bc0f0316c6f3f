"""Metadata of the objects our controllers create: the controller owner reference, and the
label and annotation maps as Kubernetes takes them.

``controller_reference`` is the one owner reference every created object carries: the object
that made it, with ``controller: true`` (the owner's controller manages it; caches index by it)
and ``blockOwnerDeletion: true`` (foreground deletion of the owner waits for it).

``string_map`` reads a labels or annotations map out of a user's spec. Kubernetes takes only
strings there (it refuses an object with a number, a boolean, a null or an object as a label
or annotation value), but a spec field kept as it came (a pod template's ``metadata`` is one)
can hold any JSON. Values that are not strings are left out, not turned into text: a string
invented from them (``True``, ``None``, ``{'a': 1}``) is a value nobody wrote, and one that is
not a valid label value would make every creation of the object fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scaleset.api import keys


def controller_reference(kind: str, name: str, uid: str) -> dict[str, Any]:
    """The owner reference to the ``actions.github.com`` object of ``kind`` that controls the
    object carrying it."""
    return {
        "apiVersion": keys.API_VERSION,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def string_map(value: object) -> dict[str, str]:
    """The string entries of a JSON object (labels, annotations); ``{}`` for anything else."""
    if not isinstance(value, Mapping):
        return {}
    return {str(key): item for key, item in value.items() if isinstance(item, str)}
