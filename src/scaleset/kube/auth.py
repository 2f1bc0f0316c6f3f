"""Bearer-token auth that follows a token file as the kubelet rotates it.

Bound service-account tokens expire (one hour by default) and the kubelet rewrites the projected
token file before that. Reading the file once at start — or only after a 401 — leaves a window of
failed requests; like client-go, this re-reads the file at most every ``refresh_seconds`` and once
more on a 401 before giving up. The token never appears in a repr, log line or exception.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import httpx2

from scaleset.clock import Clock, SystemClock
from scaleset.kube.errors import KubeConfigError

DEFAULT_REFRESH_SECONDS = 60.0
"""Seconds a token read from its file is used before the file is read again (client-go's)."""


class TokenFileAuth(httpx2.Auth):
    """``Authorization: Bearer <token from file>``, re-read periodically and after a 401."""

    def __init__(
        self,
        token_file: str | os.PathLike[str],
        *,
        refresh_seconds: float = DEFAULT_REFRESH_SECONDS,
        clock: Clock | None = None,
    ) -> None:
        self._path = Path(token_file)
        self._refresh = refresh_seconds
        self._clock = clock or SystemClock()
        self._header: str | None = None
        self._read_at = 0.0

    def __repr__(self) -> str:
        return f"TokenFileAuth(file={str(self._path)!r})"

    def _load(self) -> str:
        try:
            token = self._path.read_text(encoding="utf-8").strip()
        except OSError as error:
            raise KubeConfigError(
                f"cannot read the service-account token file {self._path}: {error.strerror}"
            ) from None
        if not token:
            raise KubeConfigError(f"the service-account token file {self._path} is empty")
        self._read_at = self._clock.monotonic()
        return f"Bearer {token}"

    def _current(self) -> str:
        if self._header is None or self._clock.monotonic() - self._read_at >= self._refresh:
            self._header = self._load()
        return self._header

    def auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        sent = self._current()
        request.headers["Authorization"] = sent
        response = yield request
        if response.status_code != 401:
            return
        fresh = self._load()
        self._header = fresh
        if fresh == sent:
            return
        request.headers["Authorization"] = fresh
        yield request
