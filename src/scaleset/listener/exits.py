"""How the listener process ends: its exit codes, and ``ListenerExit``, raised wherever only a
restart (after someone fixes the reason) can help.

The codes are the listener's contract with the AutoscalingListener controller, which reads a
terminated listener container's exit code and names it in a condition and an Event.
"""

from __future__ import annotations

EXIT_OK = 0
"""Stopped by SIGTERM/SIGINT."""
EXIT_CONFIG = 1
"""The config is missing, unreadable or invalid."""
EXIT_GITHUB_REFUSED = 3
"""GitHub refuses: the scale set does not exist, or the credentials are rejected."""
EXIT_RUNNER_SET_GONE = 4
"""The EphemeralRunnerSet does not exist (any more)."""
EXIT_KUBE_REFUSED = 5
"""Kubernetes refuses: no usable credentials, or the EphemeralRunnerSet is forbidden."""
EXIT_INTERNAL = 70
"""An internal error: a bug (the traceback is logged)."""


class ListenerExit(Exception):
    """Stop the process with ``code``: only a restart (after someone fixes ``reason``) helps."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
