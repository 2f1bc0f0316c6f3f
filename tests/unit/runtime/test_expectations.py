"""Expectations keep an owner from acting on a cache that has not seen its own writes."""

from __future__ import annotations

from scaleset.clock import ManualClock
from scaleset.kube.objects import KubeObject, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER
from scaleset.runtime.expectations import Expectations, observe_owned
from scaleset.runtime.store import InformerEvent

OWNER = "ers-uid-1"


def runner(name: str, *, owner: str = OWNER, deleting: bool = False, uid: str = "") -> KubeObject:
    metadata: dict[str, object] = {
        "name": name,
        "namespace": "ns",
        "uid": uid or f"uid-{name}",
        "resourceVersion": "1",
        "ownerReferences": [
            {
                "apiVersion": "actions.github.com/v1alpha1",
                "kind": "EphemeralRunnerSet",
                "name": "set",
                "uid": owner,
                "controller": True,
            }
        ],
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return KubeObject(EPHEMERAL_RUNNER, {"metadata": metadata})


def test_creations_are_satisfied_only_when_each_is_observed() -> None:
    expectations: Expectations[str] = Expectations(clock=ManualClock())
    assert expectations.satisfied(OWNER)
    expectations.expect_creations(OWNER, 3)
    assert not expectations.satisfied(OWNER)
    observe_owned(expectations, InformerEvent("ADDED", runner("r1"), None))
    observe_owned(expectations, InformerEvent("ADDED", runner("r1"), None))  # same name again
    observe_owned(expectations, InformerEvent("ADDED", runner("r2"), None))
    assert expectations.pending(OWNER)[0] == 1
    assert not expectations.satisfied(OWNER)
    observe_owned(expectations, InformerEvent("ADDED", runner("r3"), None))
    assert expectations.satisfied(OWNER)


def test_other_owners_objects_do_not_count() -> None:
    expectations: Expectations[str] = Expectations(clock=ManualClock())
    expectations.expect_creations(OWNER, 1)
    observe_owned(expectations, InformerEvent("ADDED", runner("x", owner="other"), None))
    assert not expectations.satisfied(OWNER)


def test_deletions_are_tracked_by_key_and_terminating_counts_as_deleted() -> None:
    expectations: Expectations[str] = Expectations(clock=ManualClock())
    expectations.expect_deletions(OWNER, [ObjectKey("ns", "r1"), ObjectKey("ns", "r2")])
    old = runner("r1")
    observe_owned(expectations, InformerEvent("MODIFIED", runner("r1", deleting=True), old))
    assert expectations.pending(OWNER)[1] == frozenset({ObjectKey("ns", "r2")})
    # A second terminating update of r1 and an unrelated delete change nothing.
    observe_owned(
        expectations,
        InformerEvent("MODIFIED", runner("r1", deleting=True), runner("r1", deleting=True)),
    )
    observe_owned(expectations, InformerEvent("DELETED", runner("r9"), None))
    assert not expectations.satisfied(OWNER)
    observe_owned(expectations, InformerEvent("DELETED", runner("r2"), runner("r2")))
    assert expectations.satisfied(OWNER)


def test_failed_calls_lower_the_expectation() -> None:
    expectations: Expectations[str] = Expectations(clock=ManualClock())
    expectations.expect_creations(OWNER, 2)
    expectations.expect_deletions(OWNER, [ObjectKey("ns", "r1")])
    expectations.creation_failed(OWNER)
    expectations.creation_failed(OWNER)
    expectations.deletion_failed(OWNER, ObjectKey("ns", "r1"))
    assert expectations.satisfied(OWNER)


def test_expectations_expire_so_a_lost_event_cannot_block_forever() -> None:
    clock = ManualClock()
    expectations: Expectations[str] = Expectations(clock=clock, ttl=300.0)
    expectations.expect_creations(OWNER, 1)
    clock.advance(299.0)
    assert not expectations.satisfied(OWNER)
    clock.advance(1.0)
    assert expectations.satisfied(OWNER)


def test_forget_drops_the_record() -> None:
    expectations: Expectations[str] = Expectations(clock=ManualClock())
    expectations.expect_creations(OWNER, 5)
    expectations.forget(OWNER)
    assert expectations.satisfied(OWNER)
    assert expectations.pending(OWNER) == (0, frozenset())


def test_an_expired_record_is_reset_not_added_to() -> None:
    # One lost ADDED (created and deleted inside a watch gap) must cost one TTL, not every
    # later round: the next expectation after expiry starts from zero (ReplicaSet controller).
    clock = ManualClock()
    expectations: Expectations[str] = Expectations(clock=clock, ttl=300.0)
    expectations.expect_creations(OWNER, 1)
    expectations.expect_deletions(OWNER, [ObjectKey("ns", "gone-long-ago")])
    clock.advance(300.0)
    assert expectations.satisfied(OWNER)  # expired
    expectations.expect_creations(OWNER, 2)
    assert expectations.pending(OWNER) == (2, frozenset())
    observe_owned(expectations, InformerEvent("ADDED", runner("r1"), None))
    observe_owned(expectations, InformerEvent("ADDED", runner("r2"), None))
    assert expectations.satisfied(OWNER)


def test_a_live_record_is_added_to() -> None:
    clock = ManualClock()
    expectations: Expectations[str] = Expectations(clock=clock, ttl=300.0)
    expectations.expect_creations(OWNER, 1)
    clock.advance(299.0)
    expectations.expect_creations(OWNER, 2)
    assert expectations.pending(OWNER)[0] == 3


def test_a_same_name_recreation_seen_in_a_relist_counts_as_delete_and_create() -> None:
    # The owner deleted r1 and created a replacement with the same name; the watch was down, so
    # the relist shows the new r1 as a MODIFIED of the old one. UIDs tell them apart.
    expectations: Expectations[str] = Expectations(clock=ManualClock())
    expectations.expect_deletions(OWNER, [ObjectKey("ns", "r1")])
    expectations.expect_creations(OWNER, 1)
    old, new = runner("r1", uid="uid-old"), runner("r1", uid="uid-new")
    observe_owned(expectations, InformerEvent("MODIFIED", new, old))
    assert expectations.pending(OWNER) == (0, frozenset())
    assert expectations.satisfied(OWNER)


def test_a_plain_update_is_neither_a_creation_nor_a_deletion() -> None:
    expectations: Expectations[str] = Expectations(clock=ManualClock())
    expectations.expect_creations(OWNER, 1)
    expectations.expect_deletions(OWNER, [ObjectKey("ns", "r1")])
    observe_owned(expectations, InformerEvent("MODIFIED", runner("r1"), runner("r1")))
    assert expectations.pending(OWNER) == (1, frozenset({ObjectKey("ns", "r1")}))


def test_a_same_name_recreation_counts_even_after_the_name_was_seen() -> None:
    expectations: Expectations[str] = Expectations(clock=ManualClock())
    expectations.expect_creations(OWNER, 2)
    observe_owned(expectations, InformerEvent("ADDED", runner("r1", uid="uid-a"), None))
    observe_owned(
        expectations,
        InformerEvent("MODIFIED", runner("r1", uid="uid-b"), runner("r1", uid="uid-a")),
    )
    assert expectations.satisfied(OWNER)
