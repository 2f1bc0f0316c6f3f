"""What a controller pod says about itself, read from its spec (pure): which namespaces it
serves and which leader-election Lease it takes.

Both ARC's controller chart and scaleset's label the controller pods
``app.kubernetes.io/part-of=gha-rs-controller`` and pass ARC's flags: ``--watch-single-namespace``
(scaleset also ``--watch-namespace``, repeatable) limits what it serves, and
``--enable-leader-election`` with ``--leader-election-id`` (default ``actions-runner-controller``)
names a Lease in the pod's own namespace. ARC elects a leader only with more than one replica;
scaleset always does.
"""

from __future__ import annotations

from collections.abc import Iterator

from scaleset.api import keys
from scaleset.doctor import fields
from scaleset.doctor.inventory import JsonObject

CONTROLLER_POD_SELECTOR = f"{keys.PART_OF_LABEL}={keys.CONTROLLER_PART_OF_VALUE}"
DEFAULT_LEASE = "actions-runner-controller"
WATCH_FLAGS = ("--watch-single-namespace", "--watch-namespace")


def _arguments(pod: JsonObject) -> list[str]:
    words: list[str] = []
    for container in fields.dicts(fields.spec(pod).get("containers")):
        for part in ("command", "args"):
            value = container.get(part)
            if isinstance(value, list):
                words.extend(str(word) for word in value)
    return words


def _flag_values(words: list[str], flag: str) -> Iterator[str]:
    for index, word in enumerate(words):
        if word.startswith(flag + "="):
            yield word.split("=", 1)[1]
        elif word == flag and index + 1 < len(words):
            yield words[index + 1]


def _flag_set(words: list[str], flag: str) -> bool:
    for word in words:
        if word == flag:
            return True
        if word.startswith(flag + "="):
            return word.split("=", 1)[1].lower() not in ("false", "0")
    return False


def watched_namespaces(pod: JsonObject) -> frozenset[str] | None:
    """The namespaces the controller serves; ``None`` for every namespace."""
    words = _arguments(pod)
    named = {value for flag in WATCH_FLAGS for value in _flag_values(words, flag) if value}
    return frozenset(named) if named else None


def serves(pod: JsonObject, namespace: str) -> bool:
    watched = watched_namespaces(pod)
    return watched is None or namespace in watched


def lease_key(pod: JsonObject) -> tuple[str, str] | None:
    """(namespace, name) of the Lease the controller elects its leader on, ``None`` when it
    does not elect one."""
    words = _arguments(pod)
    if not _flag_set(words, "--enable-leader-election"):
        return None
    names = [value for value in _flag_values(words, "--leader-election-id") if value]
    return fields.namespace_of(pod), (names[-1] if names else DEFAULT_LEASE)


def live(pod: JsonObject) -> bool:
    """Not being deleted and not finished."""
    return not fields.deleting(pod) and fields.status(pod).get("phase") not in (
        "Succeeded",
        "Failed",
    )
