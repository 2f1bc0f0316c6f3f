"""Structured logging for every scaleset process: structlog, routed through stdlib ``logging``.

Code logs with ``get_logger(__name__).info("event", key=value)``. structlog adds the context
bound for the current task (``controller``, ``kind``, ``namespace``, ``name``, ``reconcile_id`` —
see ``bound_context``), redacts secret-looking values, and hands the event to stdlib logging, so
pytest's ``caplog`` sees every record and third-party loggers share one format. ``configure()``
picks the output: ``text`` (key=value, ARC's default) or ``json`` (one object per line).

Redaction is by key and by pattern: a value whose key looks like a credential (``token``,
``private_key``, ``jit``/``jitconfig``, ``password``, ``authorization``, ``secret_value``)
becomes ``[REDACTED]``, in nested mappings too, and inside any string ``Bearer <token>`` (also
``Basic``, ``RemoteAuth``, ``token``), GitHub tokens (``ghp_…``, ``github_pat_…``), JWTs and PEM
private keys are masked. The same masking runs again on the rendered traceback of a logged
exception (``exc_info``), which exists only after structlog's ``format_exc_info``. It is a
safety net — code must still never put a credential in a log line. ``redact_text`` offers the
same masking (plus known secret values) for error texts that quote a server's answer.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any, Literal

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

LogFormat = Literal["text", "json"]

REDACTED = "[REDACTED]"

_SECRET_KEY = re.compile(
    r"token|private[_-]?key|jit(?!ter)|password|passwd|authorization|secret[_-]?value|credential",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(Bearer|Basic|RemoteAuth|token)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
_SECRET_SHAPES = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"
    r"|\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
    re.DOTALL,
)
MIN_KNOWN_SECRET_LENGTH = 8
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def is_secret_key(key: str) -> bool:
    """True when a field named ``key`` must never be logged in clear."""
    return bool(_SECRET_KEY.search(key))


def redact_value(key: str, value: Any) -> Any:
    """``value`` with credentials masked (by key name, recursively, and by pattern)."""
    if is_secret_key(key) and value not in (None, "", 0, False):
        return REDACTED
    if isinstance(value, Mapping):
        return {k: redact_value(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(key, item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets`` (values of 8+ characters) and every credential-shaped
    substring (``Bearer <token>``, GitHub tokens, JWTs, PEM private keys) masked."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_KNOWN_SECRET_LENGTH:
            text = text.replace(secret, REDACTED)
    text = _SECRET_SHAPES.sub(REDACTED, text)
    return _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)


def redact(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """structlog processor: mask credentials in every field of the event."""
    for key in list(event_dict):
        if key.startswith("_"):
            continue
        event_dict[key] = redact_value(key, event_dict[key])
    return event_dict


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        redact,
    ]


def _install_structlog() -> None:
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


_install_structlog()


def parse_level(level: str) -> int:
    """``debug``/``info``/``warn``/``error`` (ARC's spellings) to a stdlib level."""
    try:
        return _LEVELS[level.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown log level {level!r} (debug, info, warn, error)") from None


def configure(level: str = "info", fmt: LogFormat = "text", *, stream: Any = None) -> None:
    """Route all logging to ``stream`` (stderr) in ``fmt``, at ``level``."""
    renderer: Processor
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer(sort_keys=True)
    elif fmt == "text":
        renderer = structlog.processors.KeyValueRenderer(
            key_order=["timestamp", "level", "logger", "event"], drop_missing=True
        )
    else:
        raise ValueError(f"unknown log format {fmt!r} (text, json)")
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(),
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact,  # again: the traceback text exists only now
            renderer,
        ],
    )
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter)
    handler.set_name("scaleset")
    root = logging.getLogger()
    for existing in list(root.handlers):
        if existing.get_name() == "scaleset":
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(parse_level(level))
    # httpx (the GitHub client) and httpx2 (lightkube) log every request at INFO, each long
    # poll included; our own clients log what matters, so those loggers say only warnings.
    for noisy in ("httpx", "httpcore", "httpx2", "httpcore2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    logging.getLogger("asyncio").setLevel(logging.INFO)
    _install_structlog()


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """The logger for a module (``get_logger(__name__)``)."""
    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger(name)
    return logger


@contextmanager
def bound_context(**fields: Any) -> Iterator[None]:
    """Bind ``fields`` to every log line of the current task (and tasks it starts) inside."""
    with structlog.contextvars.bound_contextvars(**fields):
        yield


def event_fields(record: logging.LogRecord) -> MutableMapping[str, Any]:
    """The structured fields of a record logged through ``get_logger`` (for tests)."""
    if isinstance(record.msg, dict):
        return record.msg
    return {"event": record.getMessage()}
