"""``plan`` with a JIT Secret and GitHub's answer that the runner's name is taken (L5/L6): the
Secret of the registration that exists is used; one holding another registration is deleted
before anything registers again (never given to a pod, never overwritten)."""

from __future__ import annotations

from tests.unit.controllers.ephemeralrunner.builders import (
    NOW,
    RUNNER_ID,
    SCALE_SET_ID,
    SECRET_UID,
    kinds,
    observed,
    reasons,
    secret,
)

from scaleset.controllers.ephemeralrunner.actions import DeleteSecret
from scaleset.controllers.ephemeralrunner.observed import NameTaken, RegistrationRemoved
from scaleset.controllers.ephemeralrunner.plan import plan

OTHER_ID = RUNNER_ID + 1


def test_the_secret_of_the_taken_registration_is_used_for_the_first_pod() -> None:
    """A process died after registering and writing the Secret, before the write-ahead: no pod
    ever had that JIT config, so the successor uses it instead of registering again."""
    taken = NameTaken(True, RUNNER_ID, SCALE_SET_ID)
    actions = plan(observed(secret=secret(), feedback=(taken,)), NOW)
    assert kinds(actions) == ["WriteStatus", "CreatePod", "Wait"]


def test_a_secret_of_another_registration_is_deleted_before_registering_again() -> None:
    taken = NameTaken(True, OTHER_ID, SCALE_SET_ID)
    actions = plan(observed(secret=secret(), feedback=(taken,)), NOW)
    assert kinds(actions) == ["DeleteSecret"]
    assert actions[0] == DeleteSecret(SECRET_UID, actions[0].note)  # type: ignore[union-attr]
    assert reasons(actions) == ["StaleJitSecret"]
    gone = plan(observed(feedback=(taken,)), NOW)  # then: the taken registration is removed
    assert reasons(gone) == ["StaleRegistration"]


def test_the_secret_of_a_registration_made_after_the_taken_one_was_removed_is_used() -> None:
    taken = NameTaken(True, OTHER_ID, SCALE_SET_ID)
    feedback = (taken, RegistrationRemoved(OTHER_ID))
    actions = plan(observed(secret=secret(), feedback=feedback), NOW)
    assert kinds(actions) == ["WriteStatus", "CreatePod", "Wait"]
