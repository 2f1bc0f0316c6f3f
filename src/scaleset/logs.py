"""Structured logging for every scaleset process: structlog, routed through stdlib ``logging``.

Code logs with ``get_logger(__name__).info("event", key=value)``. structlog adds the context
bound for the current task (``controller``, ``kind``, ``namespace``, ``name``, ``reconcile_id`` —
see ``bound_context``), redacts secret-looking values, and hands the event to stdlib logging, so
pytest's ``caplog`` sees every record and third-party loggers share one format. ``configure()``
picks the output: ``text`` (key=value, ARC's default) or ``json`` (one object per line).

Redaction is by key and by pattern, on every leaf of every record. A value whose key looks
like a credential (``token``, ``private_key``, ``jit``/``jitconfig``, ``password``,
``authorization``, ``secret_value``) becomes ``[REDACTED]``, in nested mappings, sequences,
sets, dataclasses and pydantic models too (by field name); every other leaf is checked by its
text: inside strings (and the text of bytes, exceptions and any other object) ``Bearer <token>``
(also ``Basic``, ``RemoteAuth``, ``token``), GitHub tokens (``ghp_…``, ``github_pat_…``), JWTs,
PEM private keys, the user-info of URLs (``http://user:pw@proxy``) and base64-encoded JSON
(a JIT config, alone or as a Secret's data) are masked; a leaf whose text holds none is left
as it was. This runs twice: as a structlog processor (our loggers; again on the rendered
traceback, which exists only after ``format_exc_info``), and as the stdlib log record factory,
so a record of any logger (httpx2, aiohttp, asyncio) is masked in its message, arguments and
traceback before any handler sees it. It is a safety net — code must still
never put a credential in a log line. ``redact_text`` offers the same masking (plus known secret
values) for error texts that quote a server's answer.
"""

from __future__ import annotations

import dataclasses
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
_PEM = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.DOTALL
)
_GITHUB_TOKEN = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
# base64 of a JSON object (``{"`` encodes as ``ey``; base64 of that again as ``ZXl``): a JIT
# config, a Secret's data; 60+ characters, so no ordinary word matches
_BASE64_JSON = re.compile(r"\b(?:ey|ZXl)[A-Za-z0-9+/_-]{60,}={0,2}")
_URL_USER_INFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@?#]+@")
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
    """``value`` with credentials masked: by key name (recursively, field names included) and
    by pattern in the text of every leaf. A leaf with nothing to mask is returned as it was; one
    with something to mask becomes its masked text (``repr``, as the renderers show it)."""
    if is_secret_key(key) and value not in (None, "", 0, False, b""):
        return REDACTED
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: redact_value(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [redact_value(key, item) for item in value]
    fields = _named_fields(value)
    if fields is not None:
        masked = {name: redact_value(name, field) for name, field in fields.items()}
        if all(masked[name] is fields[name] for name in fields):
            return value
        shown = ", ".join(f"{name}={field!r}" for name, field in masked.items())
        return f"{type(value).__name__}({shown})"
    return _redact_leaf(value)


def _named_fields(value: Any) -> dict[str, Any] | None:
    """The fields of a dataclass instance or a pydantic model, by name; None for anything
    else."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.repr}
    model_fields = getattr(type(value), "model_fields", None)
    if isinstance(model_fields, dict):
        return {name: getattr(value, name, None) for name in model_fields}
    return None


def _redact_leaf(value: Any) -> Any:
    """Any other object (an exception, bytes, ...): itself when its text holds no secret, else
    its masked text."""
    if isinstance(value, bytes | bytearray | memoryview):
        texts = [bytes(value).decode("utf-8", errors="replace")]
    else:
        texts = [_safe_text(str, value), _safe_text(repr, value)]
    for text in texts:
        masked = redact_text(text)
        if masked != text:
            return redact_text(_safe_text(repr, value))
    return value


def _safe_text(render: Any, value: Any) -> str:
    try:
        text: str = render(value)
    except Exception as error:  # a broken __str__/__repr__ must not break logging
        return f"<{type(value).__name__}: unrenderable ({type(error).__name__})>"
    return text


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets`` (values of 8+ characters) and every credential-shaped
    substring (``Bearer <token>``, GitHub tokens, JWTs, PEM private keys, URL user-info, base64
    JSON such as a JIT config) masked."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_KNOWN_SECRET_LENGTH:
            text = text.replace(secret, REDACTED)
    # Plain substring tests pick the patterns that can match at all (most text holds none of
    # these markers), so masking costs a few substring searches per leaf.
    if "PRIVATE KEY-----" in text:
        text = _PEM.sub(REDACTED, text)
    if "_" in text and ("gh" in text or "github_pat_" in text):
        text = _GITHUB_TOKEN.sub(REDACTED, text)
    if "eyJ" in text:
        text = _JWT.sub(REDACTED, text)
    if len(text) >= 62 and ("ey" in text or "ZXl" in text):
        text = _BASE64_JSON.sub(REDACTED, text)
    if "@" in text and "://" in text:
        text = _URL_USER_INFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    lowered = text.lower()
    if "token" in lowered or "bearer" in lowered or "basic" in lowered or "remoteauth" in lowered:
        text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return text


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


def redact_record(record: logging.LogRecord) -> logging.LogRecord:
    """Mask ``record`` in place: its message as formatted with its arguments (whatever they
    are: ``%s`` shows their text) and its traceback text. A record with nothing to mask is left
    as it was. (A stdlib record's ``extra`` fields are set after the factory ran; ``configure``'s
    output does not render them.)"""
    if not isinstance(record.msg, dict):  # a dict is structlog's event: masked already
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging reports it itself
            message = None
        if message is not None:
            masked = redact_text(message)
            if masked != message:
                record.msg, record.args = masked, None
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        # formatters use this text when it is set: every handler shows the masked traceback
        record.exc_text = redact_text(_TRACEBACK_FORMATTER.formatException(record.exc_info))
    return record


_TRACEBACK_FORMATTER = logging.Formatter()
_default_record_factory = logging.getLogRecordFactory()


def _masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    return redact_record(_default_record_factory(*args, **kwargs))


logging.setLogRecordFactory(_masked_record)


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
    # httpx2 (the GitHub client, lightkube, scaleset.kube) logs every request at INFO, each
    # long poll included; our own clients log what matters, so those loggers say only warnings.
    for noisy in ("httpx2", "httpcore2"):
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
