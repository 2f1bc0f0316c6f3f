"""The listener's state annotation (``scaleset.api.listener_state``): one model, one lenient
parser, read by two processes (the listener after a restart, the registration pass). An old or
garbled annotation must crash neither: any text parses to a state or to "no state", and what
it parses to is written back as it was read; every valid state survives the round trip."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from scaleset.api import keys
from scaleset.api.listener_state import MAX_INTEGER, ListenerState

FIELDS = (
    "sessionId",
    "owner",
    "lastMessageId",
    "patchSeq",
    "lastTarget",
    "registeredRunners",
    "registeredAt",
    "sessionReplacedAt",
    "handedOver",
)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
DOCUMENTS = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=6), JSON, max_size=10)
JSON_SAFE = st.integers(-MAX_INTEGER, MAX_INTEGER)
VALID = st.builds(
    lambda session, owner, last, seq, target, registered, at, replaced, handed: ListenerState(
        session_id=session,
        owner=owner,
        last_message_id=last,
        patch_seq=seq,
        last_target=target,
        registered_runners=registered,
        registered_at=at if registered >= 0 else 0,
        session_replaced_at=replaced,
        handed_over=handed,
    ),
    st.text(),
    st.text(),
    JSON_SAFE,
    JSON_SAFE,
    JSON_SAFE,
    st.integers(-1, MAX_INTEGER),
    st.integers(0, MAX_INTEGER),
    st.integers(0, MAX_INTEGER),
    st.booleans(),
)


def _huge(digits: int) -> str:
    return "1" + "0" * digits


@given(st.none() | st.text())
@example("[" * 100_000 + "]" * 100_000)  # nested too deeply for the JSON decoder
@example('{"patchSeq": ' + _huge(5000) + "}")  # a number too long to decode
@example('{"sessionId": "\\ud800", "owner": 7}')  # a lone surrogate; a wrong type
def test_any_text_is_a_state_or_no_state(text: str | None) -> None:
    state = ListenerState.parse(text)
    assert state is None or ListenerState.parse(state.to_annotation()) == state
    assert ListenerState.from_annotation(text) == (state or ListenerState())


@given(DOCUMENTS)
@example({"registeredRunners": 1, "registeredAt": int(_huge(400))})
@example({"patchSeq": int(_huge(30)), "lastMessageId": -int(_huge(30))})
@example({"sessionReplacedAt": float("inf"), "registeredAt": float("nan")})
@example({"registeredRunners": True, "handedOver": 1, "lastTarget": 2.0})
def test_any_json_object_is_a_state_the_listener_can_write_back(document: dict[str, Any]) -> None:
    state = ListenerState.parse(json.dumps(document))
    assert state is not None
    assert ListenerState.parse(state.to_annotation()) == state
    for number in (
        state.last_message_id,
        state.patch_seq,
        state.last_target,
        state.registered_runners,
        state.registered_at,
        state.session_replaced_at,
    ):
        assert abs(number) <= MAX_INTEGER
    if state.registrations is not None:
        registered, at = state.registrations
        assert registered >= 0
        assert float(at) >= 0  # the registration pass computes the count's age from it
    assert state.replaced_at is None or state.replaced_at > 0


@given(VALID)
def test_a_valid_state_survives_the_round_trip(state: ListenerState) -> None:
    assert ListenerState.parse(state.to_annotation()) == state
    assert ListenerState.of(state.annotation_patch()["metadata"]["annotations"]) == state


def test_an_annotation_of_an_older_listener_reads_with_defaults_for_newer_fields() -> None:
    older = (
        '{"sessionId":"s-1","owner":"arc-listener","lastMessageId":41,"patchSeq":9,"lastTarget":3}'
    )
    assert ListenerState.parse(older) == ListenerState(
        session_id="s-1", owner="arc-listener", last_message_id=41, patch_seq=9, last_target=3
    )


def test_text_that_is_not_a_json_object_is_no_state() -> None:
    for text in (None, "", "{", "[]", "null", "7", '"state"'):
        assert ListenerState.parse(text) is None
        assert ListenerState.from_annotation(text) == ListenerState()
        assert ListenerState.of({keys.LISTENER_STATE_ANNOTATION: text or ""}) == ListenerState()
    assert ListenerState.of({}) == ListenerState()


def test_fields_out_of_range_or_of_the_wrong_type_take_their_defaults() -> None:
    state = ListenerState.parse(
        json.dumps(
            {
                "sessionId": 5,
                "lastMessageId": "41",
                "patchSeq": int(_huge(30)),
                "registeredRunners": -4,
                "registeredAt": 1700,
                "sessionReplacedAt": -3,
                "handedOver": "yes",
            }
        )
    )
    assert state == ListenerState()


def test_times_from_another_writer_are_whole_seconds() -> None:
    state = ListenerState.parse(
        '{"registeredRunners": 2, "registeredAt": 1700.9, "sessionReplacedAt": 1800.5}'
    )
    assert state is not None
    assert (state.registrations, state.replaced_at) == ((2, 1700), 1800)
