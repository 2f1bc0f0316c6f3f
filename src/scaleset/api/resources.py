"""The four kinds as one union, their REST names, and loading a JSON object by its ``kind``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scaleset.api import keys
from scaleset.api.autoscalinglistener import AutoscalingListener
from scaleset.api.autoscalingrunnerset import AutoscalingRunnerSet
from scaleset.api.ephemeralrunner import EphemeralRunner
from scaleset.api.ephemeralrunnerset import EphemeralRunnerSet

Resource = AutoscalingRunnerSet | EphemeralRunnerSet | EphemeralRunner | AutoscalingListener


@dataclass(frozen=True)
class KindInfo:
    """Names of one kind in the API (all namespaced, group ``actions.github.com``)."""

    kind: str
    plural: str
    model: type[Resource]

    @property
    def singular(self) -> str:
        """Lower-case kind."""
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        """Kind of a list of these."""
        return f"{self.kind}List"

    @property
    def crd_name(self) -> str:
        """``metadata.name`` of the CustomResourceDefinition."""
        return f"{self.plural}.{keys.GROUP}"


KINDS: tuple[KindInfo, ...] = (
    KindInfo("AutoscalingListener", "autoscalinglisteners", AutoscalingListener),
    KindInfo("AutoscalingRunnerSet", "autoscalingrunnersets", AutoscalingRunnerSet),
    KindInfo("EphemeralRunner", "ephemeralrunners", EphemeralRunner),
    KindInfo("EphemeralRunnerSet", "ephemeralrunnersets", EphemeralRunnerSet),
)
BY_KIND: dict[str, KindInfo] = {info.kind: info for info in KINDS}


class UnknownKind(ValueError):
    """The object is not one of our four kinds (or has no ``kind``)."""


def load(data: Mapping[str, Any]) -> Resource:
    """Parse a JSON object of one of the four kinds (leniently: see ``scaleset.api._lenient``).
    Raises ``UnknownKind`` when ``kind``/``apiVersion`` are not ours."""
    kind = data.get("kind")
    info = BY_KIND.get(kind) if isinstance(kind, str) else None
    if info is None:
        raise UnknownKind(f"not an {keys.GROUP} kind: {kind!r}")
    api_version = data.get("apiVersion", keys.API_VERSION)
    if api_version != keys.API_VERSION:
        raise UnknownKind(f"unsupported apiVersion for {info.kind}: {api_version!r}")
    return info.model.model_validate(dict(data))
