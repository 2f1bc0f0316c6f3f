"""Autouse guard: fails any test whose logs or raised errors contain a secret used by the fakes.

Register every secret a fake or a test hands out (PATs, private keys, installation,
registration, admin and message-queue tokens, JIT configs):

    from tests.plugins.secret_guard import register_secret, register_secret_source
    register_secret("ghp_...")                      # one value
    register_secret_source(lambda: fake.secrets())  # polled when a test is checked

or use the autouse `secret_guard` fixture, which returns the same registry. Values shorter than
MIN_SECRET_LENGTH are refused: they would match by accident.

What is checked, per test phase (setup, call, teardown):
* every stdlib log record of any logger at any level (the root logger is set to DEBUG for the
  session), including exception tracebacks and `extra` attributes — structlog routed through
  stdlib logging included;
* captured stdout/stderr (structlog's default printer writes there) and pytest's log sections;
* the text (str and repr, notes, cause/context chain, exception-group members) of the exception
  that ended the phase;
* what any embedded API server in the process stored that people read — Event reason, message
  and note, status conditions' reason and message, a pod's status reason and message, container
  termination messages — as each write landed (``subscribe_stored_texts``), so an object
  deleted before the check is seen too. The real API server is not scanned: every API-server
  test runs on both backends, and the product code writes the same texts to both. These texts
  are also checked against every secret of every fake GitHub of the test (alive at the check,
  or stopped during it), registered or not — so the demo's runs are covered; the logs, far
  larger, only against the registered secrets.
Exceptions a test catches itself (pytest.raises) are not seen by pytest: check them with
`secret_guard.assert_clean(error)`.

On a leak the phase is reported failed, and the report text is redacted (each secret replaced by
a mask such as `ghp…(40 chars)`), so the guard never prints what it protects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass

import pytest

MIN_SECRET_LENGTH = 8

SecretSource = Callable[[], Iterable[str]]


@dataclass(frozen=True)
class Leak:
    """One secret found in one place; `masked` never reveals the secret."""

    where: str
    masked: str


def mask(secret: str) -> str:
    return f"{secret[:3]}…({len(secret)} chars)"


class SecretRegistry:
    """The secrets tests must never see in logs or error text."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._sources: list[SecretSource] = []

    def register(self, value: str) -> str:
        """Add `value`; returns it, so `token = registry.register("ghp_...")` reads well."""
        if len(value) < MIN_SECRET_LENGTH:
            raise ValueError(
                f"secrets shorter than {MIN_SECRET_LENGTH} characters cannot be scanned reliably"
            )
        self._values.add(value)
        return value

    def add_source(self, source: SecretSource) -> None:
        """Add a callable returning secrets, asked again at every check (e.g. a fake's tokens)."""
        self._sources.append(source)

    def secrets(self) -> set[str]:
        found = set(self._values)
        for source in self._sources:
            found.update(value for value in source() if len(value) >= MIN_SECRET_LENGTH)
        return found

    def find_leaks(self, texts: Iterable[tuple[str, str]]) -> list[Leak]:
        """Every (place, secret) pair where a registered secret occurs in a (place, text)."""
        entries = list(texts)
        if not entries:
            return []
        # One pass per secret over all text at once; locate the places only on a hit.
        everything = "\n".join(text for _, text in entries)
        leaks: list[Leak] = []
        for secret in self.secrets():
            if secret in everything:
                leaks.extend(Leak(where, mask(secret)) for where, text in entries if secret in text)
        return leaks

    def find_leaks_of(self, extra: Iterable[str], texts: Iterable[tuple[str, str]]) -> list[Leak]:
        """``find_leaks`` with ``extra`` secrets besides the registered ones."""
        scratch = SecretRegistry()
        scratch._values = self.secrets() | {v for v in extra if len(v) >= MIN_SECRET_LENGTH}
        return scratch.find_leaks(texts)

    def redact(self, text: str) -> str:
        for secret in sorted(self.secrets(), key=len, reverse=True):
            text = text.replace(secret, mask(secret))
        return text

    def assert_clean(self, *objects: object) -> None:
        """Fail if a registered secret occurs in the text of `objects` (exceptions: whole chain)."""
        texts: list[tuple[str, str]] = []
        for obj in objects:
            if isinstance(obj, BaseException):
                texts.extend(exception_texts(obj))
            else:
                texts.extend([("value", str(obj)), ("value repr", repr(obj))])
        leaks = self.find_leaks(texts)
        if leaks:
            pytest.fail(describe(leaks), pytrace=False)


REGISTRY = SecretRegistry()


def register_secret(value: str) -> str:
    return REGISTRY.register(value)


def register_secret_source(source: SecretSource) -> None:
    REGISTRY.add_source(source)


def describe(leaks: list[Leak]) -> str:
    lines = sorted({f"  secret {leak.masked} in {leak.where}" for leak in leaks})
    return "secret guard: a registered secret leaked\n" + "\n".join(lines)


def exception_texts(error: BaseException) -> list[tuple[str, str]]:
    """str/repr/notes of `error`, its cause/context chain and exception-group members."""
    texts: list[tuple[str, str]] = []
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        name = type(current).__name__
        texts.append((f"exception {name}", str(current)))
        texts.append((f"exception {name} repr", repr(current)))
        for note in getattr(current, "__notes__", ()):
            texts.append((f"exception {name} note", str(note)))
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
    return texts


# --- log capture ------------------------------------------------------------------------

_STANDARD_RECORD_ATTRIBUTES = frozenset(
    logging.LogRecord("", 0, "", 0, "", None, None).__dict__
) | {"message", "asctime", "taskName"}


class _RecordingHandler(logging.Handler):
    """Keeps the full text of every record emitted during the current test."""

    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.texts: list[tuple[str, str]] = []
        self._formatter = logging.Formatter("%(levelname)s %(name)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self._formatter.format(record)
        except Exception as error:  # a broken record must not break the test run
            text = f"{record.msg!r} {record.args!r} (unformattable: {type(error).__name__})"
        extras = {
            key: value
            for key, value in record.__dict__.items()
            if key not in _STANDARD_RECORD_ATTRIBUTES
        }
        if extras:
            text += " " + repr(extras)
        self.texts.append((f"log record of {record.name!r}", text))

    def take(self) -> list[tuple[str, str]]:
        texts, self.texts = self.texts, []
        return texts


class _StoredTexts:
    """Keeps each distinct text an embedded API server stored during the current test (offered
    from the server's thread: appends only, swapped out whole)."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, str]] = []

    def __call__(self, where: str, text: str) -> None:
        self.texts.append((where, text))

    def take(self) -> list[tuple[str, str]]:
        texts, self.texts = self.texts, []
        return list(dict.fromkeys(texts))


class _FakeSecrets:
    """The secrets of the fake GitHub services of the current test: those alive (asked at the
    check) and those stopped during it (handed over as they stop)."""

    def __init__(self) -> None:
        self.stopped: set[str] = set()

    def __call__(self, issued: list[str]) -> None:
        self.stopped.update(issued)

    def take(self) -> set[str]:
        from scaleset.embedded.actions.server import secrets_of_live_fakes

        found, self.stopped = self.stopped, set()
        return found | set(secrets_of_live_fakes())


_handler = _RecordingHandler()
_stored = _StoredTexts()
_fake_secrets = _FakeSecrets()
_unsubscribe: list[Callable[[], None]] = []
_saved_root_level: int | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _saved_root_level
    root = logging.getLogger()
    _saved_root_level = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(_handler)
    from scaleset.embedded.actions.server import subscribe_stopped_fake_secrets
    from scaleset.embedded.apiserver import subscribe_stored_texts

    _unsubscribe.append(subscribe_stored_texts(_stored))
    _unsubscribe.append(subscribe_stopped_fake_secrets(_fake_secrets))


def pytest_unconfigure(config: pytest.Config) -> None:
    root = logging.getLogger()
    root.removeHandler(_handler)
    if _saved_root_level is not None:
        root.setLevel(_saved_root_level)
    for unsubscribe in _unsubscribe:
        unsubscribe()


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _handler.take()  # records from between tests belong to no test
    _stored.take()
    _fake_secrets.stopped.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    texts = _handler.take()
    stored = _stored.take()
    if call.excinfo is not None and not isinstance(call.excinfo.value, pytest.skip.Exception):
        texts.extend(exception_texts(call.excinfo.value))
    # Captured stdout/stderr/log. The traceback itself is not scanned: its source lines may
    # quote a test's literal secret, which is not a leak.
    # Sections accumulate over the phases; only this phase's are new.
    texts.extend(
        (f"report section {title!r}", content)
        for title, content in report.sections
        if title.endswith(f" {report.when}")
    )
    leaks = REGISTRY.find_leaks((f"{report.when}: {where}", text) for where, text in texts)
    if stored:
        leaks += REGISTRY.find_leaks_of(
            _fake_secrets.take(), ((f"{report.when}: {where}", text) for where, text in stored)
        )
    if leaks:
        original = REGISTRY.redact(report.longreprtext) if report.longrepr is not None else ""
        report.outcome = "failed"
        report.longrepr = describe(leaks) + (f"\n\n{original}" if original else "")
        report.sections = [(title, REGISTRY.redact(content)) for title, content in report.sections]
    return report


@pytest.fixture(autouse=True)
def secret_guard() -> SecretRegistry:
    """The registry of secrets; the checks themselves run in the report hook above."""
    return REGISTRY
