"""The access log: every resource request the embedded server received, in RBAC terms.

For each request to a resource URL the server records who asked — the ``User-Agent`` (the
controller manager sends ``scaleset-controller/<version>``, the listener
``scaleset-listener/<version>``) and the ``Impersonate-User`` when a request acts as a
ServiceAccount — and what RBAC would be asked about it: verb, API group, resource, subresource,
namespace (``""`` for a cluster-scoped resource or an all-namespaces list/watch) and object name.
The entry is taken before authorization, admission and fault injection, so it is what the client
attempted, whatever the answer was.

Tests read it (``EmbeddedApiServer.access``, or ``GET /_scaleset/access`` from another process;
``DELETE`` clears it) to compare what each component really does with the RBAC our Helm charts
and the listener Role grant. Discovery, ``/version`` and the control endpoints are not resource
requests and are not logged. Entries are distinct; each carries how many requests it stands for.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class AccessEntry:
    """One distinct kind of request: who, and the RBAC question it raises."""

    agent: str
    user: str
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str

    @property
    def component(self) -> str:
        """The User-Agent's product name: ``scaleset-controller`` of ``scaleset-controller/0.1``."""
        return self.agent.split("/", 1)[0].strip()

    @property
    def rbac_resource(self) -> str:
        """``resource`` or ``resource/subresource``, as a Role rule names it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


class AccessLog:
    """The distinct accesses seen so far, with a count each; safe to read from another thread
    (the server may run on its own thread's loop)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[AccessEntry, int] = {}
        self._refused: dict[AccessEntry, int] = {}

    def record(
        self,
        *,
        agent: str,
        user: str,
        verb: str,
        group: str,
        resource: str,
        subresource: str,
        namespace: str,
        name: str,
    ) -> AccessEntry:
        entry = AccessEntry(agent, user, verb, group, resource, subresource, namespace, name)
        with self._lock:
            self._counts[entry] = self._counts.get(entry, 0) + 1
        return entry

    def refuse(self, entry: AccessEntry) -> None:
        """``entry``'s request (recorded) was answered 409 Conflict: a resourceVersion
        precondition that no longer held, or a name that exists. It changed nothing."""
        with self._lock:
            self._refused[entry] = self._refused.get(entry, 0) + 1

    def refused(self) -> dict[AccessEntry, int]:
        """The recorded requests answered 409, by access (a subset of ``counts()``)."""
        with self._lock:
            return dict(self._refused)

    def entries(self) -> list[AccessEntry]:
        """Every distinct access, sorted."""
        with self._lock:
            return sorted(self._counts)

    def counts(self) -> dict[AccessEntry, int]:
        with self._lock:
            return dict(self._counts)

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()
            self._refused.clear()

    def document(self) -> dict[str, Any]:
        """The JSON answer of ``GET /_scaleset/access``."""
        return {
            "accesses": [
                {**asdict(entry), "count": count} for entry, count in sorted(self.counts().items())
            ]
        }


def entries_from_document(document: dict[str, Any]) -> dict[AccessEntry, int]:
    """The inverse of ``AccessLog.document`` (for a test reading another process's log)."""
    parsed: dict[AccessEntry, int] = {}
    for item in document.get("accesses") or []:
        fields = {key: str(item.get(key, "")) for key in AccessEntry.__dataclass_fields__}
        parsed[AccessEntry(**fields)] = int(item.get("count", 0))
    return parsed
