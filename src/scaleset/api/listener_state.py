"""The listener's state on its EphemeralRunnerSet: a wire contract between two processes.

The listener writes it (annotation ``keys.LISTENER_STATE_ANNOTATION``, a small JSON object) and
reads it back after a restart (L7); the controller's registration pass reads the count of
registrations it publishes and when it last replaced its session (L6). Both read it with the one
parser here, ``ListenerState.parse``.

What it holds: the message session id and its owner (the pod name), the last message id
acknowledged, and the patch sequence with the last target. The listener writes it in the same
merge patch as ``spec.replicas``/``spec.patchID``, so the stored sequence is always the one the
EphemeralRunnerSet last saw; and once right after a session is created, so a restarted listener
can resume (or delete) its own session by id instead of waiting minutes for GitHub to expire it
(ARC #3209, #4285).

It also publishes GitHub's ``totalRegisteredRunners`` from the latest statistics and when they
arrived (``registeredRunners``, ``registeredAt``: unix seconds; absent until statistics came), so
the registration pass can run early when that count disagrees with the set's runners (L6). They
ride on the writes above: publishing them costs no API call of its own.

A listener that stops gracefully while its EphemeralRunnerSet still exists (a rollout, a config
change, a node drain) keeps its session and marks it handed over (``handedOver``): the next
listener resumes it whatever its pod name, so the job events queued in it are not lost (L7).

When the listener had to create a new session although it had one before (``sessionReplacedAt``,
unix seconds, rounded up; absent until the first replacement), the job events queued in the old
one may be lost — a runner whose JobCompleted was among them never hears of its job's end — so
the registration pass runs at once (L6). It is written in the same write as the new session id.

Reading is lenient, because an old or garbled annotation must crash neither process: text that
is not a JSON object is "no state" (``None``), a field of the wrong type or out of range (a
number beyond ``MAX_INTEGER``: a time that large cannot even be subtracted from the clock's)
takes its default, unknown fields are ignored.
Whatever ``parse`` returns is written back as it was read
(``parse(state.to_annotation()) == state``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scaleset.api import keys

MAX_INTEGER = 2**53 - 1
"""The largest magnitude a number field holds (JSON's safe integers, which every JSON reader
takes exactly): a larger one is garbled and takes the field's default."""


@dataclass(frozen=True)
class ListenerState:
    """The listener's durable state (camelCase keys in the annotation)."""

    session_id: str = ""
    owner: str = ""
    last_message_id: int = 0
    patch_seq: int = -1
    last_target: int = -1
    registered_runners: int = -1
    """GitHub's ``totalRegisteredRunners`` in the latest statistics (-1: none yet)."""
    registered_at: int = 0
    """When those statistics arrived, unix seconds (0: none yet)."""
    session_replaced_at: int = 0
    """When a new session replaced one that could not be resumed, unix seconds (0: never)."""
    handed_over: bool = False
    """The owner stopped gracefully and left the session to the next listener, whatever its
    name (without it only a listener of the same name, i.e. its own pod again, resumes it)."""

    # ----------------------------------------------------------------------- writing

    def to_annotation(self) -> str:
        """The annotation's value: compact JSON, optional fields only when set."""
        document: dict[str, Any] = {
            "sessionId": self.session_id,
            "owner": self.owner,
            "lastMessageId": self.last_message_id,
            "patchSeq": self.patch_seq,
            "lastTarget": self.last_target,
        }
        if self.registered_runners >= 0:
            document["registeredRunners"] = self.registered_runners
            document["registeredAt"] = self.registered_at
        if self.session_replaced_at > 0:
            document["sessionReplacedAt"] = self.session_replaced_at
        if self.handed_over:
            document["handedOver"] = True
        return json.dumps(document, separators=(",", ":"))

    def annotation_patch(self) -> dict[str, Any]:
        """The merge patch that stores this state on the EphemeralRunnerSet."""
        return {"metadata": {"annotations": {keys.LISTENER_STATE_ANNOTATION: self.to_annotation()}}}

    # ----------------------------------------------------------------------- reading

    @classmethod
    def parse(cls, text: str | None) -> ListenerState | None:
        """The state ``text`` holds, or ``None`` ("no state") when it is missing or not a JSON
        object. Never raises: fields of the wrong type take their defaults."""
        if not text:
            return None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, a number too long, nested too deeply
            return None
        if not isinstance(data, dict):
            return None
        registered = max(_integer(data.get("registeredRunners"), -1), -1)
        return cls(
            session_id=_text(data.get("sessionId")),
            owner=_text(data.get("owner")),
            last_message_id=_integer(data.get("lastMessageId"), 0),
            patch_seq=_integer(data.get("patchSeq"), -1),
            last_target=_integer(data.get("lastTarget"), -1),
            registered_runners=registered,
            registered_at=_unix_seconds(data.get("registeredAt")) if registered >= 0 else 0,
            session_replaced_at=_unix_seconds(data.get("sessionReplacedAt")),
            handed_over=data.get("handedOver") is True,
        )

    @classmethod
    def from_annotation(cls, text: str | None) -> ListenerState:
        """The state ``text`` holds; the empty state when it holds none."""
        state = cls.parse(text)
        return cls() if state is None else state

    @classmethod
    def of(cls, annotations: Mapping[str, str]) -> ListenerState:
        """The state in an EphemeralRunnerSet's annotations; the empty state when none."""
        return cls.from_annotation(annotations.get(keys.LISTENER_STATE_ANNOTATION))

    # ------------------------------------------------------------ what the pass reads

    @property
    def registrations(self) -> tuple[int, int] | None:
        """GitHub's ``totalRegisteredRunners`` and when the listener heard it (unix seconds);
        ``None`` before any statistics came."""
        if self.registered_runners < 0:
            return None
        return self.registered_runners, self.registered_at

    @property
    def replaced_at(self) -> int | None:
        """When the listener last replaced its message session (unix seconds), ``None`` when
        it never did."""
        return self.session_replaced_at if self.session_replaced_at > 0 else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _integer(value: object, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_INTEGER:
        return value
    return default


def _unix_seconds(value: object) -> int:
    """A time in unix seconds (whole; a fraction from another writer is dropped), 0 if none."""
    if isinstance(value, float) and math.isfinite(value):
        value = int(value)
    return max(_integer(value, 0), 0)
