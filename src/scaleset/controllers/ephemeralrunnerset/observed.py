"""What the EphemeralRunnerSet reconciler sees: frozen views of the set, its runners, and what
this process did that its cache may not show yet. ``plan`` decides on these and nothing else.

A runner's state comes from the one classifier (``scaleset.api.classify_status``, lifecycle.md
L0); the view adds what scale-down and reaping need on top of it: the registration (runner id),
whether a JIT config request may be in flight, whether it finished a job, and whether it was
built from the set's current runner spec.

**JIT request in flight.** The EphemeralRunner controller registers a runner (``generatejitconfig``)
before it records the runner id in status. A runner that is still starting with no runner id
may therefore have a registration being created right now: it is never a scale-down candidate
(L3), and it is never deleted with a look-up by name while the request could still land.
After ``jit_settle_seconds`` with no runner id, the request is taken as failed (the client's
per-call budget is far shorter), and the runner is "unregistered": removable, its registration
looked up by name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from scaleset.api import (
    EphemeralRunnerSetStatus,
    EphemeralRunnerStatus,
    RunnerPhase,
    RunnerState,
    classify_status,
    keys,
    parse_kube_time,
)
from scaleset.controllers.ephemeralrunnerset.proxy_secret import ProxyState
from scaleset.kube.objects import KubeObject

DEFAULT_JIT_SETTLE_SECONDS = 120.0
_LIVE = frozenset((RunnerState.STARTING, RunnerState.IDLE, RunnerState.BUSY))


@dataclass(frozen=True, slots=True)
class RunnerFacts:
    """What one version of an EphemeralRunner says about itself: everything in a ``RunnerView``
    that its resourceVersion determines (so a memo keyed by uid and resourceVersion may keep
    it). Not in here: whether its spec is the set's current one (that depends on the set) and
    whether a JIT request is in flight (that depends on the time)."""

    name: str
    uid: str
    resource_version: str
    created: datetime | None
    state: RunnerState
    phase: str = ""
    reason: str = ""
    runner_id: int = 0
    has_job: bool = False
    job_completed: bool = False
    patch_id: int | None = None
    completion_patch_id: int | None = None
    """The listener's patch id that accounts for this runner's job completion (its record's
    ``patchId``; ``None``: no record, or one without it)."""
    controller_uid: str | None = None
    """The uid of its controller owner (``None``: no controller owner)."""

    @property
    def jit_pending(self) -> bool:
        """Starting with no runner id: a JIT request may be in flight (see ``jit_in_flight``)."""
        return self.state is RunnerState.STARTING and self.runner_id == 0


_FACT_FIELDS = tuple(item.name for item in fields(RunnerFacts))


@dataclass(frozen=True, slots=True)
class RunnerView(RunnerFacts):
    """One child EphemeralRunner, as ``plan`` decides on it: its facts, and the two parts that
    do not come from the runner alone."""

    current_spec: bool = True
    """It was built from the set's current runner spec."""
    jit_in_flight: bool = False
    """A JIT config request for it may still land (``jit_in_flight``)."""

    @property
    def registration_known(self) -> bool:
        """The runner id is recorded: its registration can be removed by id."""
        return self.runner_id != 0

    @property
    def live(self) -> bool:
        """Counts as capacity: starting, idle or busy (not terminal, not being deleted)."""
        return self.state in _LIVE

    @property
    def finished(self) -> bool:
        """It did its job: a job completion is recorded, it Succeeded, or it is being deleted
        after it had a job. Its slot is the listener's to give back (L3: replaced only on a new
        patch)."""
        return (
            self.job_completed
            or self.phase == RunnerPhase.SUCCEEDED
            or (self.state is RunnerState.DELETING and self.has_job)
        )

    @property
    def failure_reason(self) -> str:
        """The reason a terminal runner is recorded under (``Outdated``, ``InvalidPod``, …)."""
        if self.phase == RunnerPhase.OUTDATED:
            return keys.REASON_OUTDATED
        return self.reason or self.phase or "Unknown"


@dataclass(frozen=True)
class RunnerSetView:
    """The EphemeralRunnerSet itself: identity, desired state, and the status it last wrote."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    generation: int = 0
    deleting: bool = False
    finalizers: tuple[str, ...] = (keys.EPHEMERAL_RUNNER_SET_FINALIZER,)
    replicas: int = 0
    replicas_valid: bool = True
    patch_id: int = 0
    patch_id_valid: bool = True
    spec_hash: str = ""
    max_runners: int | None = None
    status: EphemeralRunnerSetStatus = field(default_factory=EphemeralRunnerSetStatus)


@dataclass(frozen=True)
class Observed:
    """Everything one reconcile decides on.

    ``phantoms``: runners this process created that the cache does not show yet (counted as
    starting capacity, never chosen). ``in_flight_deletes``: runners this process removed that
    the cache still shows alive (counted as deleting). ``seen_finished``: names the informer saw
    finish (or vanish after a job) since the last status write — they may be gone from the cache
    already. ``proxy``: the runner proxy Secret, wanted and found (``None``: no proxy).
    ``refused``: why the controller's policy refuses the runner spec's GitHub settings (reason,
    message naming the field; an ``http://`` config URL without ``--allow-http-github-url``).
    ``status_written_at``: when this process last wrote the set's status (``None``: not since
    it started), for pacing writes that only move counts. ``accounted``: runners the informer saw
    finish after a job whose completion record named the listener's patch that accounts for it
    (name → that patch id), until the set's status holds them; a visible runner's is on its view
    too, which is what counts once the ledger has let it go.
    """

    runner_set: RunnerSetView
    runners: tuple[RunnerView, ...] = ()
    phantoms: int = 0
    in_flight_deletes: frozenset[str] = frozenset()
    seen_finished: frozenset[str] = frozenset()
    proxy: ProxyState | None = None
    refused: tuple[str, str] | None = None
    status_written_at: datetime | None = None
    accounted: Mapping[str, int] = field(default_factory=dict)


# ------------------------------------------------------------------------------ from the cache


def spec_hash(runner_spec: Mapping[str, Any]) -> str:
    """A stable digest of a runner spec (canonical JSON), for the Outdated phase memory."""
    encoded = json.dumps(runner_spec, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()[:16]


def runner_set_spec_hash(runner_set: KubeObject) -> str:
    """``spec_hash`` of the set's ``spec.ephemeralRunnerSpec`` (``{}`` when it is not an object)."""
    runner_spec = runner_set.spec.get("ephemeralRunnerSpec")
    return spec_hash(runner_spec if isinstance(runner_spec, dict) else {})


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _time(value: object) -> datetime | None:
    try:
        return parse_kube_time(value) if value is not None else None
    except ValueError:
        return None


def patch_id_of(runner: KubeObject) -> int | None:
    """The ``actions.github.com/patch-id`` annotation (the set's patch id at creation)."""
    text = runner.annotations.get(keys.PATCH_ID_ANNOTATION)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def runner_status(runner: KubeObject) -> EphemeralRunnerStatus:
    """The runner's status, parsed leniently (a wrong-typed field keeps its default)."""
    raw = runner.raw.get("status")
    return EphemeralRunnerStatus.model_validate(raw if isinstance(raw, dict) else {})


def runner_facts(runner: KubeObject, status: EphemeralRunnerStatus | None = None) -> RunnerFacts:
    """The resourceVersion-determined part of the view (``status``: already parsed)."""
    if status is None:
        status = runner_status(runner)
    owner = runner.controller_owner
    return RunnerFacts(
        name=runner.name,
        uid=runner.uid,
        resource_version=runner.resource_version,
        controller_uid=owner.uid if owner is not None else None,
        created=_time(runner.metadata.get("creationTimestamp")),
        state=classify_status(status, deleting=runner.is_deleting),
        phase=status.phase,
        reason=status.reason,
        runner_id=status.runner_id,
        has_job=status.has_job,
        job_completed=status.job_completion is not None,
        patch_id=patch_id_of(runner),
        completion_patch_id=completion_patch_id(status),
    )


def completion_patch_id(status: EphemeralRunnerStatus) -> int | None:
    """The listener's patch id that accounts for the runner's recorded job completion."""
    completion = status.job_completion
    return completion.patch_id if completion is not None else None


def jit_in_flight(
    facts: RunnerFacts, now: datetime, jit_settle_seconds: float = DEFAULT_JIT_SETTLE_SECONDS
) -> bool:
    """A JIT request may be in flight at ``now``: starting with no runner id, created less than
    ``jit_settle_seconds`` ago (no creation time: taken as created now)."""
    if not facts.jit_pending:
        return False
    created = facts.created
    age = (now - created).total_seconds() if created is not None else 0.0
    return age < jit_settle_seconds


def view_of(facts: RunnerFacts, *, current_spec: bool, in_flight: bool) -> RunnerView:
    """The view from the facts and the two parts that do not come from the runner alone."""
    return RunnerView(
        **{name: getattr(facts, name) for name in _FACT_FIELDS},
        current_spec=current_spec,
        jit_in_flight=in_flight,
    )


def runner_view(
    runner: KubeObject,
    *,
    expected_spec: Mapping[str, Any] | None,
    now: datetime,
    status: EphemeralRunnerStatus | None = None,
    jit_settle_seconds: float = DEFAULT_JIT_SETTLE_SECONDS,
) -> RunnerView:
    """The view of one EphemeralRunner, classified by L0 (``status``: already parsed), built
    afresh (the reconciler's pass goes through ``view_memo.RunnerViewMemo`` instead)."""
    facts = runner_facts(runner, status)
    return view_of(
        facts,
        current_spec=expected_spec is None or runner.spec == expected_spec,
        in_flight=jit_in_flight(facts, now, jit_settle_seconds),
    )


def runner_set_view(
    runner_set: KubeObject,
    *,
    status: EphemeralRunnerSetStatus,
    max_runners: int | None,
    runner_spec_hash: str | None = None,
) -> RunnerSetView:
    """The view of the EphemeralRunnerSet (``status`` parsed by the caller; ``runner_spec_hash``:
    ``spec_hash`` of its ``spec.ephemeralRunnerSpec``, when the caller has it already)."""
    spec = runner_set.spec
    replicas_raw = spec.get("replicas")
    replicas = _int(replicas_raw)
    patch_id = _int(spec.get("patchID", 0))
    return RunnerSetView(
        namespace=runner_set.namespace,
        name=runner_set.name,
        uid=runner_set.uid,
        resource_version=runner_set.resource_version,
        generation=runner_set.generation,
        deleting=runner_set.is_deleting,
        finalizers=tuple(runner_set.finalizers),
        replicas=replicas if replicas is not None else 0,
        replicas_valid=replicas_raw is None or replicas is not None,
        patch_id=patch_id if patch_id is not None else 0,
        patch_id_valid=patch_id is not None,
        spec_hash=runner_spec_hash
        if runner_spec_hash is not None
        else runner_set_spec_hash(runner_set),
        max_runners=max_runners,
        status=status,
    )
