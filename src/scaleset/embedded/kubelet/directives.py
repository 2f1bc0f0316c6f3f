"""Per-pod fault directives: what the simulated kubelet does to a pod besides running it.

A ``PodScript`` comes from the test API (``SimulatedKubelet.script``) and from annotations on
the pod, so scenarios can be written declaratively into a pod template. Times are seconds on the
kubelet's clock: per container from the moment it starts, per pod from the kubelet's first sync.

Annotations (all optional; ``<c>`` is a container or init container name, ``*`` means all):

===========================================  =================================================
``scaleset.dev/sim-exit: "<c>=<code>[@<s>]"``  the container exits with ``code`` after ``s``
                                               seconds (default 0) instead of running its
                                               image's program; comma-separated list
``scaleset.dev/sim-oom-after: "<c>=<s>"``      the container is OOM-killed ``s`` seconds after
                                               it starts (exit 137, reason OOMKilled)
``scaleset.dev/sim-image-pull-error: "<c>,…"`` pulling the container's image fails
                                               (ErrImagePull, then ImagePullBackOff)
``scaleset.dev/sim-hang: "<c>,…"``             the container never exits by itself and ignores
                                               SIGTERM (only the grace-period SIGKILL ends it)
``scaleset.dev/sim-pull-seconds: "<s>"``       every image pull of the pod takes ``s`` seconds
``scaleset.dev/sim-evict-after: "<s>"``        the kubelet evicts the pod (phase Failed, reason
                                               Evicted)
``scaleset.dev/sim-vanish-after: "<s>"``       the node is lost: processes die, the pod object
                                               is deleted without a status update
``scaleset.dev/sim-freeze-after: "<s>"``       the node stops reporting: no more status writes,
                                               a deletion is never completed
``scaleset.dev/sim-runner-faults: "<f>,…"``    simulated runner faults: ``hang-after-completion``,
                                               ``crash-mid-job``, ``outdated``
===========================================  =================================================

``parse_annotations`` raises ``DirectiveError`` naming the annotation and the expected form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

PREFIX = "scaleset.dev/sim-"
EXIT = PREFIX + "exit"
OOM_AFTER = PREFIX + "oom-after"
IMAGE_PULL_ERROR = PREFIX + "image-pull-error"
HANG = PREFIX + "hang"
PULL_SECONDS = PREFIX + "pull-seconds"
EVICT_AFTER = PREFIX + "evict-after"
VANISH_AFTER = PREFIX + "vanish-after"
FREEZE_AFTER = PREFIX + "freeze-after"
RUNNER_FAULTS = PREFIX + "runner-faults"

RUNNER_FAULT_NAMES = frozenset({"hang-after-completion", "crash-mid-job", "outdated"})
ALL = "*"


class DirectiveError(ValueError):
    """A directive annotation that cannot be parsed."""


@dataclass(frozen=True)
class ExitDirective:
    """Exit with ``code`` after ``after`` seconds instead of running the image's program."""

    code: int
    after: float = 0.0


@dataclass(frozen=True)
class PodScript:
    """Faults for one pod. Container maps are keyed by container name or ``*``."""

    exits: Mapping[str, ExitDirective] = field(default_factory=dict)
    oom_after: Mapping[str, float] = field(default_factory=dict)
    image_pull_errors: frozenset[str] = frozenset()
    hangs: frozenset[str] = frozenset()
    pull_seconds: float = 0.0
    evict_after: float | None = None
    vanish_after: float | None = None
    freeze_after: float | None = None
    runner_faults: frozenset[str] = frozenset()

    def exit_for(self, container: str) -> ExitDirective | None:
        return self.exits.get(container) or self.exits.get(ALL)

    def oom_after_for(self, container: str) -> float | None:
        value = self.oom_after.get(container)
        return value if value is not None else self.oom_after.get(ALL)

    def pull_fails(self, container: str) -> bool:
        return container in self.image_pull_errors or ALL in self.image_pull_errors

    def hangs_for(self, container: str) -> bool:
        return container in self.hangs or ALL in self.hangs

    def merged(self, other: PodScript) -> PodScript:
        """``self`` with ``other``'s directives added (``other`` wins where both set one)."""
        return replace(
            self,
            exits={**self.exits, **other.exits},
            oom_after={**self.oom_after, **other.oom_after},
            image_pull_errors=self.image_pull_errors | other.image_pull_errors,
            hangs=self.hangs | other.hangs,
            pull_seconds=other.pull_seconds or self.pull_seconds,
            evict_after=_first(other.evict_after, self.evict_after),
            vanish_after=_first(other.vanish_after, self.vanish_after),
            freeze_after=_first(other.freeze_after, self.freeze_after),
            runner_faults=self.runner_faults | other.runner_faults,
        )


def _first(a: float | None, b: float | None) -> float | None:
    return a if a is not None else b


def _seconds(annotation: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise DirectiveError(f"{annotation}: {text!r} is not a number of seconds >= 0")
    return value


def _names(annotation: str, text: str) -> frozenset[str]:
    names = frozenset(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise DirectiveError(f"{annotation}: expected <container>[,<container>...] or *")
    return names


def _pairs(annotation: str, text: str, form: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep or not name.strip() or not value.strip():
            raise DirectiveError(f"{annotation}: {part.strip()!r} is not {form}")
        pairs.append((name.strip(), value.strip()))
    return pairs


def _exits(text: str) -> dict[str, ExitDirective]:
    form = "<container>=<code>[@<seconds>]"
    exits: dict[str, ExitDirective] = {}
    for name, value in _pairs(EXIT, text, form):
        code_text, _, after_text = value.partition("@")
        try:
            code = int(code_text)
        except ValueError:
            raise DirectiveError(f"{EXIT}: {name}={value!r} is not {form}") from None
        if not 0 <= code <= 255:
            raise DirectiveError(f"{EXIT}: exit code {code} is outside 0..255")
        after = _seconds(EXIT, after_text) if after_text else 0.0
        exits[name] = ExitDirective(code, after)
    return exits


def parse_annotations(annotations: Mapping[str, str]) -> PodScript:
    """The ``PodScript`` written in a pod's annotations (``DirectiveError`` if malformed)."""
    script = PodScript()
    unknown = [
        key
        for key in annotations
        if key.startswith(PREFIX)
        and key
        not in (
            EXIT,
            OOM_AFTER,
            IMAGE_PULL_ERROR,
            HANG,
            PULL_SECONDS,
            EVICT_AFTER,
            VANISH_AFTER,
            FREEZE_AFTER,
            RUNNER_FAULTS,
        )
    ]
    if unknown:
        raise DirectiveError(f"unknown directive annotation {sorted(unknown)[0]}")
    if EXIT in annotations:
        script = replace(script, exits=_exits(annotations[EXIT]))
    if OOM_AFTER in annotations:
        pairs = _pairs(OOM_AFTER, annotations[OOM_AFTER], "<container>=<seconds>")
        script = replace(script, oom_after={n: _seconds(OOM_AFTER, v) for n, v in pairs})
    if IMAGE_PULL_ERROR in annotations:
        script = replace(
            script, image_pull_errors=_names(IMAGE_PULL_ERROR, annotations[IMAGE_PULL_ERROR])
        )
    if HANG in annotations:
        script = replace(script, hangs=_names(HANG, annotations[HANG]))
    if PULL_SECONDS in annotations:
        script = replace(script, pull_seconds=_seconds(PULL_SECONDS, annotations[PULL_SECONDS]))
    if EVICT_AFTER in annotations:
        script = replace(script, evict_after=_seconds(EVICT_AFTER, annotations[EVICT_AFTER]))
    if VANISH_AFTER in annotations:
        script = replace(script, vanish_after=_seconds(VANISH_AFTER, annotations[VANISH_AFTER]))
    if FREEZE_AFTER in annotations:
        script = replace(script, freeze_after=_seconds(FREEZE_AFTER, annotations[FREEZE_AFTER]))
    if RUNNER_FAULTS in annotations:
        faults = _names(RUNNER_FAULTS, annotations[RUNNER_FAULTS])
        bad = sorted(faults - RUNNER_FAULT_NAMES)
        if bad:
            raise DirectiveError(
                f"{RUNNER_FAULTS}: unknown fault {bad[0]!r} "
                f"(known: {', '.join(sorted(RUNNER_FAULT_NAMES))})"
            )
        script = replace(script, runner_faults=faults)
    return script
