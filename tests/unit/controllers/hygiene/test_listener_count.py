"""The registration pass reads the count the listener publishes: the same annotation, and what
``ListenerState`` writes is what ``published_registrations`` reads (the two packages are sibling
layers that may not import each other, so this test ties them)."""

from __future__ import annotations

from scaleset.controllers.hygiene.registration_pass import (
    LISTENER_STATE_ANNOTATION,
    published_registrations,
    session_replaced_at,
)
from scaleset.listener.session_state import STATE_ANNOTATION, ListenerState


def test_the_pass_reads_the_listeners_annotation() -> None:
    assert LISTENER_STATE_ANNOTATION == STATE_ANNOTATION


def test_what_the_listener_publishes_is_what_the_pass_reads() -> None:
    state = ListenerState(session_id="s", patch_seq=4, registered_runners=7, registered_at=1700)
    assert published_registrations(state.to_annotation()) == (7, 1700.0)
    assert ListenerState.from_annotation(state.to_annotation()) == state


def test_no_statistics_yet_publishes_no_count() -> None:
    assert published_registrations(ListenerState(session_id="s").to_annotation()) is None
    for text in (None, "", "[]", "{", '{"registeredRunners": "7", "registeredAt": 1}'):
        assert published_registrations(text) is None
    assert published_registrations('{"registeredRunners": -1, "registeredAt": 1}') is None


def test_the_session_replacement_the_listener_writes_is_what_the_pass_reads() -> None:
    state = ListenerState(session_id="s", registered_runners=2, session_replaced_at=1800)
    assert session_replaced_at(state.to_annotation()) == 1800.0
    assert ListenerState.from_annotation(state.to_annotation()) == state
    assert session_replaced_at(ListenerState(session_id="s").to_annotation()) is None
    for text in (None, "", "[]", '{"sessionReplacedAt": "1"}', '{"sessionReplacedAt": Infinity}'):
        assert session_replaced_at(text) is None
