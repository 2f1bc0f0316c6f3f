"""Records every (verb, resource, namespace, subresource) a component uses against the API server.

Every request the ``KubeClient`` sends is recorded here in RBAC terms (verbs ``get``, ``list``,
``watch``, ``create``, ``update``, ``patch``, ``delete``, ``deletecollection``), so a test can run
a component and then assert that the RBAC we ship grants exactly what it used — no more, no less.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple


class Access(NamedTuple):
    """One kind of request, in RBAC terms. ``namespace`` is ``""`` for all-namespaces or
    cluster-scoped requests; ``subresource`` is ``""`` for the main resource."""

    verb: str
    group: str
    resource: str
    namespace: str
    subresource: str = ""

    @property
    def rbac_resource(self) -> str:
        """``resource`` or ``resource/subresource``, as written in a Role rule."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


class AccessRecorder:
    """Collects ``Access`` records; cheap enough to stay on in production."""

    def __init__(self) -> None:
        self._seen: set[Access] = set()

    def record(self, access: Access) -> None:
        self._seen.add(access)

    def accesses(self) -> frozenset[Access]:
        return frozenset(self._seen)

    def verbs_by_resource(self) -> dict[tuple[str, str, str], frozenset[str]]:
        """``(namespace, group, resource[/subresource]) -> verbs`` — the shape of Role rules."""
        grouped: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        for access in self._seen:
            grouped[(access.namespace, access.group, access.rbac_resource)].add(access.verb)
        return {key: frozenset(verbs) for key, verbs in grouped.items()}

    def clear(self) -> None:
        self._seen.clear()
