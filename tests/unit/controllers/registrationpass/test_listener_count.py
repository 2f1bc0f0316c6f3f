"""The registration pass reads the count the listener publishes: the same annotation, read with
the one model both processes share (``scaleset.api.listener_state``), so what the listener
writes is what the pass reads — and no annotation, however old or garbled, makes the pass's
reading raise."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from scaleset.api import keys
from scaleset.api.listener_state import ListenerState
from scaleset.controllers.registrationpass.schedule import Counts, EarlySettings, Watch, decide


def test_the_pass_reads_the_listeners_annotation() -> None:
    state = ListenerState(session_id="s", registered_runners=3, registered_at=1700)
    stored = state.annotation_patch()["metadata"]["annotations"]
    assert list(stored) == [keys.LISTENER_STATE_ANNOTATION]
    assert ListenerState.of(stored) == state


def test_what_the_listener_publishes_is_what_the_pass_reads() -> None:
    state = ListenerState(session_id="s", patch_seq=4, registered_runners=7, registered_at=1700)
    assert ListenerState.from_annotation(state.to_annotation()).registrations == (7, 1700)
    assert ListenerState.from_annotation(state.to_annotation()) == state


def test_no_statistics_yet_publishes_no_count() -> None:
    assert ListenerState(session_id="s").registrations is None
    for text in (None, "", "[]", "{", '{"registeredRunners": "7", "registeredAt": 1}'):
        assert ListenerState.from_annotation(text).registrations is None
    assert (
        ListenerState.from_annotation('{"registeredRunners": -1, "registeredAt": 1}').registrations
        is None
    )


def test_the_session_replacement_the_listener_writes_is_what_the_pass_reads() -> None:
    state = ListenerState(session_id="s", registered_runners=2, session_replaced_at=1800)
    assert ListenerState.from_annotation(state.to_annotation()).replaced_at == 1800
    assert ListenerState.from_annotation(state.to_annotation()) == state
    assert ListenerState(session_id="s").replaced_at is None
    for text in (None, "", "[]", '{"sessionReplacedAt": "1"}', '{"sessionReplacedAt": Infinity}'):
        assert ListenerState.from_annotation(text).replaced_at is None


JSON_VALUE = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
ANNOTATION = st.one_of(
    st.text(),
    st.dictionaries(
        st.sampled_from(["registeredRunners", "registeredAt", "sessionReplacedAt", "x"]),
        JSON_VALUE,
    ).map(json.dumps),
)


@given(ANNOTATION, ANNOTATION)
@example('{"registeredRunners": 1, "registeredAt": 1' + "0" * 400 + "}", "")  # OverflowError before
def test_any_annotation_is_a_decision_never_an_error(first: str, second: str) -> None:
    """What ``RegistrationPass`` does with the annotation on each observation: the published
    count and replacement go into ``decide``; nothing raises, whatever the text."""
    watch = Watch()
    for now, text in ((1000.0, first), (1100.0, second)):
        state = ListenerState.of({keys.LISTENER_STATE_ANNOTATION: text})
        published, replaced = state.registrations, state.replaced_at
        assert published is None or (published[0] >= 0 and published[1] >= 0)
        assert replaced is None or replaced > 0
        counts = None
        if published is not None:
            registered, at = published
            counts = Counts(registered=registered, age=max(now - at, 0.0), holding=1, runners=1)
        watch, _ = decide(watch, counts, now, 600.0, EarlySettings(), replaced)
