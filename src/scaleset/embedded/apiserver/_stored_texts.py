"""The texts a person reads from what the server stored, offered to subscribers as each write
lands: a test hook, for the test suite's secret guard.

``kubectl describe``, dashboards and ``kubectl get events`` show Events (reason, message, note),
status conditions (reason, message) and container termination messages (and a pod's
status reason/message). A secret in any of them is as public as one in a log line. Every
embedded server offers these texts of every object it stores (created, updated, patched; the
version a delete removes was offered when it was written) to every subscriber in the process;
with no subscriber nothing is computed. A subscriber is called on the server's event loop
thread and must be quick and thread-safe (appending to a list is).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from scaleset.embedded.apiserver._store import BucketId, StoredEvent

StoredTextSink = Callable[[str, str], None]
"""Called with (where, text), e.g. ("stored Event ns/name message", "...")."""

_sinks: list[StoredTextSink] = []

_EVENT_FIELDS = ("reason", "message", "note", "action")


def subscribe_stored_texts(sink: StoredTextSink) -> Callable[[], None]:
    """Offer every stored text to ``sink`` from now on; returns the unsubscribe call."""
    _sinks.append(sink)

    def unsubscribe() -> None:
        if sink in _sinks:
            _sinks.remove(sink)

    return unsubscribe


def offer(_bucket: BucketId, event: StoredEvent) -> None:
    """A ``Store`` listener: hand the texts of a written object to the subscribers."""
    if not _sinks or event.type == "DELETED":
        return
    texts = list(texts_of(event.obj))
    for sink in list(_sinks):
        for where, text in texts:
            sink(where, text)


def texts_of(obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, text) for each person-read text of ``obj``."""
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace") or ""
    name = f"{namespace}/{metadata.get('name')}" if namespace else str(metadata.get("name"))
    place = f"stored {obj.get('kind') or 'object'} {name}"
    if obj.get("kind") == "Event":
        for field in _EVENT_FIELDS:
            yield from _text(f"{place} {field}", obj.get(field))
    status = obj.get("status")
    if not isinstance(status, dict):
        return
    for field in ("reason", "message"):
        yield from _text(f"{place} status.{field}", status.get(field))
    for condition in _dicts(status.get("conditions")):
        label = f"{place} status.conditions[{condition.get('type')}]"
        for field in ("reason", "message"):
            yield from _text(f"{label}.{field}", condition.get(field))
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for container in _dicts(status.get(key)):
            label = f"{place} status.{key}[{container.get('name')}]"
            for state_key in ("state", "lastState"):
                state = container.get(state_key)
                if not isinstance(state, dict):
                    continue
                for phase, detail in state.items():
                    if isinstance(detail, dict):
                        for field in ("reason", "message"):
                            where = f"{label}.{state_key}.{phase}.{field}"
                            yield from _text(where, detail.get(field))


def _dicts(value: object) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, dict))


def _text(where: str, value: object) -> Iterator[tuple[str, str]]:
    if isinstance(value, str) and value:
        yield where, value
