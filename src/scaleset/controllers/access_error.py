"""What makes an object's GitHub access unusable, and the Secret reads that can find it.

``GitHubAccessError`` names the field the user must fix (L8) and a stable reason; its text never
holds a value read from a Secret. ``GitHubProblem`` holds the same three facts as a value, which
the AutoscalingRunnerSet's and the EphemeralRunner's plans read. ``secret_data`` decodes a
Secret's ``data`` (bad base64: that error, naming the field that points at the Secret).
``github_access`` (the GitHub clients) and ``proxy_credentials`` (a proxy's
``credentialSecretRef``) both raise them; ``github_access`` re-exports both names.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from scaleset.kube.objects import KubeObject


@dataclass(frozen=True)
class GitHubProblem:
    """Why GitHub cannot be used: a stable CamelCase ``reason`` (condition and Event), the
    ``field`` the user must fix and a one-line ``message`` (never a credential)."""

    reason: str
    field: str
    message: str


class GitHubAccessError(Exception):
    """The object's GitHub settings cannot give a client; the user must fix ``field``.

    ``reason`` is a stable CamelCase word for the condition and the Event; the message names
    the field and the object it points at, never a value read from a Secret.
    """

    def __init__(self, reason: str, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.reason = reason
        self.field = field
        self.message = message

    @property
    def problem(self) -> GitHubProblem:
        """The same facts as a value for a plan."""
        return GitHubProblem(self.reason, self.field, self.message)


def secret_data(secret: KubeObject, field_: str) -> dict[str, str]:
    """A Secret's ``data`` decoded (``stringData`` never comes back from the server);
    ``GitHubAccessError`` naming ``field_`` for bad base64."""
    raw = secret.raw.get("data")
    decoded: dict[str, str] = {}
    if not isinstance(raw, dict):
        return decoded
    for key, value in raw.items():
        if not isinstance(value, str):
            continue
        try:
            decoded[str(key)] = base64.b64decode(value, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):  # ValueError: a non-ASCII str
            raise GitHubAccessError(
                "InvalidGitHubSecret", field_, f"key {key!r} of Secret {secret.key} is not base64"
            ) from None
    return decoded
