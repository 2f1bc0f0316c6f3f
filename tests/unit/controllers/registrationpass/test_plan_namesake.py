"""Rule 4 of the registration pass for a registration whose name is a runner's that records
another, missing runner id (soak seed 2): nothing uses it, and the runner's deletion (rule 1)
would leave it behind, so it is removed with it."""

from __future__ import annotations

from tests.unit.controllers.registrationpass.test_plan import PREFIX, observed, runner

from scaleset.api import RunnerState
from scaleset.controllers.registrationpass.actions import DeleteMissing, RemoveOrphan
from scaleset.controllers.registrationpass.observed import Registration
from scaleset.controllers.registrationpass.plan import orphan_candidates, plan
from scaleset.controllers.registrationpass.settings import Settings

NAME = f"{PREFIX}stale"


def test_L6_the_live_registration_of_a_runner_recording_a_removed_one_goes_with_it() -> None:
    live = Registration(9, NAME, online=False, busy=False)
    actions = plan(
        observed(
            runner("stale", 7), registrations=(live,), missing=frozenset({7}), scale_set_of={9: 5}
        ),
        Settings(),
    )
    assert [type(a) for a in actions] == [DeleteMissing, RemoveOrphan]
    assert actions[1] == RemoveOrphan(9, NAME, 5, recorded_id=7)


def test_L6_a_namesake_registration_is_kept_while_the_runner_records_a_live_id() -> None:
    live = Registration(9, NAME, online=False, busy=False)
    actions = plan(
        observed(runner("stale", 7), registrations=(live,), scale_set_of={9: 5}), Settings()
    )
    assert actions == []


def test_L6_a_namesake_registration_in_use_or_not_ours_is_kept() -> None:
    for registration, scale_set_of in (
        (Registration(9, NAME, online=True, busy=False), {9: 5}),  # a process holds it
        (Registration(9, NAME, online=False, busy=True), {9: 5}),  # it runs a job
        (Registration(9, NAME, online=False, busy=False), {9: 6}),  # another cluster's
        (Registration(9, NAME, online=False, busy=False), {}),  # not confirmed
    ):
        actions = plan(
            observed(
                runner("stale", 7),
                registrations=(registration,),
                missing=frozenset({7}),
                scale_set_of=scale_set_of,
            ),
            Settings(),
        )
        assert [type(a) for a in actions] == [DeleteMissing], registration


def test_L6_a_runner_being_deleted_or_terminal_lends_its_name_to_no_removal() -> None:
    live = Registration(9, NAME, online=False, busy=False)
    for state in (RunnerState.DELETING, RunnerState.TERMINAL):
        actions = plan(
            observed(
                runner("stale", 7, state=state),
                registrations=(live,),
                missing=frozenset({7}),
                scale_set_of={9: 5},
            ),
            Settings(),
        )
        assert actions == [], state


def test_L6_namesakes_of_runners_recording_missing_ids_are_confirmed_with_the_service() -> None:
    registrations = (
        Registration(9, NAME, online=False, busy=False),
        Registration(7, NAME, online=False, busy=False),
        Registration(3, f"{PREFIX}kept", online=False, busy=False),
        Registration(4, f"{PREFIX}gone", online=False, busy=False),
    )
    known = frozenset({NAME, f"{PREFIX}kept"})
    assert orphan_candidates(registrations, PREFIX, known, {NAME: 7}) == [9, 4]
