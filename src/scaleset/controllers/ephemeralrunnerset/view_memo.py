"""A memo of the EphemeralRunnerSet reconciler's parsing, so a pass costs O(changed runners)
in parsing instead of O(runners).

Every runner event requeues its set, and each pass used to parse and classify every runner of
the set again: O(N²) over a scale-up of N runners (bench/results/scaleup.md). The memo keeps,
per set:

- each runner's ``RunnerFacts`` (status parsed, L0 classification, creation time, controller
  owner, patch id), keyed by ``(uid, resourceVersion)``: a runner whose resourceVersion did not
  move is not parsed again;
- whether its spec equals the set's current runner spec, kept while that spec is unchanged
  (compared once per pass, against the spec of the previous pass);
- the view built from both, per value of ``jit_in_flight`` — the one part that depends on the
  time, computed every pass from the facts and ``now`` (an age check, only for runners starting
  with no runner id);
- the set's parsed status and runner-spec digest, keyed by the set's resourceVersion.

It only memoizes parsing; state lives in the API server and the informer cache. A view from
the memo equals the view ``observed.runner_view`` builds afresh from the same object at the same
``now`` (tests/unit/controllers/ephemeralrunnerset/test_view_memo.py checks that over random
sequences of updates and times), so no decision changes. It is bounded: each pass keeps only the
entries of the objects the informer returned for the set in that pass, and ``forget`` drops a
set that is gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from scaleset.api import EphemeralRunnerSetStatus
from scaleset.controllers.ephemeralrunnerset.observed import (
    DEFAULT_JIT_SETTLE_SECONDS,
    RunnerFacts,
    RunnerView,
    jit_in_flight,
    runner_facts,
    runner_set_spec_hash,
    view_of,
)
from scaleset.kube.objects import KubeObject

RunnerKey = tuple[str, str]
"""``(uid, resourceVersion)``: one version of one runner."""


class _Entry:
    """One version of one runner: its facts, and the views built from them."""

    __slots__ = (
        "controller_uid",
        "current_spec",
        "facts",
        "fixed",
        "jit_pending",
        "name",
        "spec_epoch",
        "views",
    )

    def __init__(self, facts: RunnerFacts) -> None:
        self.facts = facts
        self.name = facts.name
        self.controller_uid = facts.controller_uid
        self.jit_pending = facts.jit_pending
        self.spec_epoch: object = None
        self.current_spec = True
        self.views: list[RunnerView | None] = [None, None]
        self.fixed: RunnerView | None = None
        """The view while the spec epoch holds, when it does not depend on the time (not
        ``jit_pending``): served without a call."""

    def view(
        self,
        runner: KubeObject,
        expected: Mapping[str, Any],
        epoch: object,
        now: datetime,
        jit_settle_seconds: float,
    ) -> RunnerView:
        if self.spec_epoch is not epoch:
            self.current_spec = runner.spec == expected
            self.spec_epoch = epoch
            self.views = [None, None]
            self.fixed = None
        in_flight = self.jit_pending and jit_in_flight(self.facts, now, jit_settle_seconds)
        view = self.views[in_flight]
        if view is None:
            view = view_of(self.facts, current_spec=self.current_spec, in_flight=in_flight)
            self.views[in_flight] = view
            if not self.jit_pending:
                self.fixed = view
        return view


class _SetMemo:
    """What is kept for one EphemeralRunnerSet."""

    __slots__ = ("entries", "expected", "resource_version", "spec_digest", "spec_epoch", "status")

    def __init__(self) -> None:
        self.entries: dict[RunnerKey, _Entry] = {}
        self.expected: Mapping[str, Any] | None = None
        self.spec_epoch: object = object()
        self.resource_version: str | None = None
        self.status = EphemeralRunnerSetStatus()
        self.spec_digest = ""


class RunnerViewMemo:
    """The reconciler's memo of runner views, per set (one instance per reconciler)."""

    def __init__(self, jit_settle_seconds: float = DEFAULT_JIT_SETTLE_SECONDS) -> None:
        self.jit_settle_seconds = jit_settle_seconds
        self._sets: dict[str, _SetMemo] = {}
        self.parsed = 0
        """Runner versions parsed so far (a runner served from the memo is not counted)."""

    def _memo(self, set_uid: str) -> _SetMemo:
        memo = self._sets.get(set_uid)
        if memo is None:
            memo = self._sets[set_uid] = _SetMemo()
        return memo

    def runner_set(self, runner_set: KubeObject) -> tuple[EphemeralRunnerSetStatus, str]:
        """The set's parsed status and ``spec_hash`` of its runner spec (shared between passes
        while its resourceVersion stays: callers must not mutate the status)."""
        memo = self._memo(runner_set.uid)
        if memo.resource_version != runner_set.resource_version:
            memo.status = EphemeralRunnerSetStatus.model_validate(dict(runner_set.status))
            memo.spec_digest = runner_set_spec_hash(runner_set)
            memo.resource_version = runner_set.resource_version
        return memo.status, memo.spec_digest

    def runners(
        self,
        set_uid: str,
        objects: Iterable[KubeObject],
        *,
        expected_spec: Mapping[str, Any],
        now: datetime,
    ) -> tuple[dict[str, KubeObject], tuple[RunnerView, ...]]:
        """The runners among ``objects`` that ``set_uid`` controls, by name, and their views at
        ``now`` (one per name, the last object of a name winning, in the order of ``objects``).
        Entries of objects not in ``objects`` are dropped."""
        memo = self._memo(set_uid)
        if memo.expected is None or memo.expected != expected_spec:
            memo.spec_epoch = object()
        memo.expected = expected_spec
        epoch = memo.spec_epoch
        previous = memo.entries
        kept: dict[RunnerKey, _Entry] = {}
        children: dict[str, KubeObject] = {}
        entries: dict[str, _Entry] = {}
        for obj in objects:
            meta = obj.metadata  # one lookup for both halves of the key (this loop is per pass)
            key = (meta.get("uid", ""), meta.get("resourceVersion", ""))
            entry = kept.get(key) or previous.get(key)
            if entry is None:
                entry = _Entry(runner_facts(obj))
                self.parsed += 1
            kept[key] = entry
            if entry.controller_uid == set_uid:
                name = entry.name
                children[name] = obj
                entries[name] = entry
        memo.entries = kept
        settle = self.jit_settle_seconds
        views = tuple(
            fixed
            if entry.spec_epoch is epoch and (fixed := entry.fixed) is not None
            else entry.view(children[name], expected_spec, epoch, now, settle)
            for name, entry in entries.items()
        )
        return children, views

    def forget(self, set_uid: str) -> None:
        """Drop everything kept for a set that is gone."""
        self._sets.pop(set_uid, None)

    def __contains__(self, set_uid: object) -> bool:
        """Whether anything is kept for the set with this uid."""
        return set_uid in self._sets

    def __len__(self) -> int:
        """Runner versions kept, over all sets."""
        return sum(len(memo.entries) for memo in self._sets.values())
