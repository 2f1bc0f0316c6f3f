"""The listener reads its state from its EphemeralRunnerSet after a restart: whatever the
annotation holds (an older listener's, a garbled one), it starts — from that state or afresh —
and its first desired count is one the API server takes."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from scaleset.api import keys
from scaleset.api.listener_state import ListenerState
from scaleset.kube import KubeObject
from scaleset.kube.resources import EPHEMERAL_RUNNER_SET
from scaleset.listener.scaler import Scaler, ers_patch
from scaleset.listener.session import state_of

INT64 = 2**63 - 1


def runner_set(annotation: str | None) -> KubeObject:
    annotations = {} if annotation is None else {keys.LISTENER_STATE_ANNOTATION: annotation}
    return KubeObject(
        EPHEMERAL_RUNNER_SET,
        {"metadata": {"name": "arc-runners", "namespace": "arc", "annotations": annotations}},
    )


NUMBERS = st.integers() | st.floats() | st.booleans() | st.none() | st.text(max_size=3)
DOCUMENTS = st.fixed_dictionaries(
    {},
    optional={
        "sessionId": st.text(max_size=8) | NUMBERS,
        "lastMessageId": NUMBERS,
        "patchSeq": NUMBERS,
        "lastTarget": NUMBERS,
        "handedOver": NUMBERS,
    },
).map(json.dumps)


@given(st.none() | st.text() | DOCUMENTS, st.integers(0, 10_000))
@example('{"patchSeq": 2147483647, "lastTarget": 3}', 2)
@example('{"patchSeq": ' + "9" * 40 + "}", 0)
@example("[" * 50_000 + "]" * 50_000, 1)
def test_any_annotation_starts_the_listener_with_a_count_the_api_server_takes(
    annotation: str | None, assigned: int
) -> None:
    state = state_of(runner_set(annotation))
    assert state == ListenerState.from_annotation(annotation)
    scaler = Scaler(0, 20, patch_seq=state.patch_seq, last_target=state.last_target)
    patch = ers_patch(scaler.desired(assigned))
    assert 0 <= patch["spec"]["patchID"] <= INT64
    assert patch["spec"]["replicas"] in (None, *range(1, 21))
