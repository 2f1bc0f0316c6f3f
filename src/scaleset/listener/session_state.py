"""What the listener must remember across restarts, kept on its own EphemeralRunnerSet (L7).

One annotation, ``scaleset.dev/listener-state``, holds a small JSON object: the message session
id and its owner (the pod name), the last message id acknowledged, and the patch sequence with
the last target. It is written in the same merge patch as ``spec.replicas``/``spec.patchID``, so
the stored sequence is always the one the EphemeralRunnerSet last saw; and once right after a
session is created, so a restarted listener can delete its own stale session by id instead of
waiting minutes for GitHub to expire it (ARC #3209, #4285).

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

Reading is lenient: a missing or malformed annotation is an empty state (logged), never a crash.
The listener's Role needs ``get`` and ``patch`` on its one EphemeralRunnerSet.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from scaleset.kube import KubeClient, KubeObject, ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER_SET
from scaleset.logs import get_logger

log = get_logger(__name__)

STATE_ANNOTATION = "scaleset.dev/listener-state"


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

    def to_annotation(self) -> str:
        data = asdict(self)
        document = {
            "sessionId": data["session_id"],
            "owner": data["owner"],
            "lastMessageId": data["last_message_id"],
            "patchSeq": data["patch_seq"],
            "lastTarget": data["last_target"],
        }
        if self.registered_runners >= 0:
            document["registeredRunners"] = self.registered_runners
            document["registeredAt"] = self.registered_at
        if self.session_replaced_at > 0:
            document["sessionReplacedAt"] = self.session_replaced_at
        if self.handed_over:
            document["handedOver"] = True
        return json.dumps(document, separators=(",", ":"))

    @classmethod
    def from_annotation(cls, text: str | None) -> ListenerState:
        if not text:
            return cls()
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError("not an object")
            return cls(
                session_id=_text(data.get("sessionId")),
                owner=_text(data.get("owner")),
                last_message_id=_number(data.get("lastMessageId"), 0),
                patch_seq=_number(data.get("patchSeq"), -1),
                last_target=_number(data.get("lastTarget"), -1),
                registered_runners=max(_number(data.get("registeredRunners"), -1), -1),
                registered_at=_number(data.get("registeredAt"), 0),
                session_replaced_at=max(_number(data.get("sessionReplacedAt"), 0), 0),
                handed_over=data.get("handedOver") is True,
            )
        except (ValueError, RecursionError) as error:  # RecursionError: nested too deeply
            log.warning("listener state annotation unreadable; starting afresh", error=str(error))
            return cls()

    @classmethod
    def of(cls, runner_set: KubeObject) -> ListenerState:
        return cls.from_annotation(runner_set.annotations.get(STATE_ANNOTATION))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _number(value: Any, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


def state_patch(state: ListenerState) -> dict[str, Any]:
    """The merge patch that stores ``state`` on the EphemeralRunnerSet."""
    return {"metadata": {"annotations": {STATE_ANNOTATION: state.to_annotation()}}}


class StateStore:
    """Reads and writes the state annotation of one EphemeralRunnerSet."""

    def __init__(self, kube: KubeClient, key: ObjectKey) -> None:
        self.kube = kube
        self.key = key

    async def load(self) -> tuple[ListenerState, KubeObject]:
        runner_set = await self.kube.get(EPHEMERAL_RUNNER_SET, self.key)
        return ListenerState.of(runner_set), runner_set

    async def save(
        self, state: ListenerState, spec_patch: dict[str, Any] | None = None
    ) -> KubeObject:
        """Store ``state``, together with ``spec_patch`` (the desired count) when given."""
        body = state_patch(state)
        if spec_patch:
            body.update(spec_patch)
        return await self.kube.patch_merge(EPHEMERAL_RUNNER_SET, self.key, body)
