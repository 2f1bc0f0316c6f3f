"""Debian packages for the harness: install binary packages, fetch a source package.

Everything comes from the package repositories this machine is already configured with. A source
package needs ``deb-src`` entries; they are derived from the machine's own ``deb`` entries
(same addresses, suites, components and keys) and written to a private apt configuration, so
the machine's ``/etc/apt`` is never modified and no repository address lives in the project.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

Report = Callable[[str], None]

APT_ETC = Path("/etc/apt")


class AptError(RuntimeError):
    """A package could not be installed or fetched; the message says what to do."""


# --- functional core: sources -> deb-src sources -------------------------------------------


@dataclass(frozen=True)
class Deb822Stanza:
    """One stanza of a deb822 ``.sources`` file: field name -> value (continuations joined)."""

    fields: tuple[tuple[str, str], ...]

    def get(self, name: str) -> str | None:
        for key, value in self.fields:
            if key.lower() == name.lower():
                return value
        return None


def parse_deb822(text: str) -> list[Deb822Stanza]:
    """Parse a deb822 ``.sources`` file into stanzas (comments dropped, continuations joined)."""
    stanzas: list[Deb822Stanza] = []
    current: list[tuple[str, str]] = []
    for raw in [*text.splitlines(), ""]:
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if current:
                stanzas.append(Deb822Stanza(tuple(current)))
                current = []
            continue
        if raw[0] in " \t" and current:
            key, value = current[-1]
            continuation = raw.strip()
            if continuation != ".":
                current[-1] = (key, f"{value}\n{continuation}" if value else continuation)
            continue
        key, sep, value = raw.partition(":")
        if not sep:
            raise AptError(f"malformed deb822 line: {raw!r}")
        current.append((key.strip(), value.strip()))
    return stanzas


def deb_src_stanzas(stanzas: Iterable[Deb822Stanza]) -> list[Deb822Stanza]:
    """The ``deb-src`` twin of every enabled stanza that has type ``deb``."""
    result: list[Deb822Stanza] = []
    for stanza in stanzas:
        types = (stanza.get("Types") or "").split()
        enabled = (stanza.get("Enabled") or "yes").lower() not in ("no", "false", "0")
        if "deb" not in types or not enabled:
            continue
        fields = tuple(
            ("Types", "deb-src") if key.lower() == "types" else (key, value)
            for key, value in stanza.fields
            if key.lower() not in ("architectures", "enabled")
        )
        result.append(Deb822Stanza(fields))
    return result


def render_deb822(stanzas: Iterable[Deb822Stanza]) -> str:
    """Write stanzas back in deb822 form (multi-line values indented one space)."""
    blocks = []
    for stanza in stanzas:
        lines = []
        for key, value in stanza.fields:
            first, *rest = value.split("\n")
            lines.append(f"{key}: {first}")
            lines.extend(f" {line}" for line in rest)
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def deb_src_lines(one_line_text: str) -> list[str]:
    """The ``deb-src`` twin of every ``deb`` line of a one-line-style ``sources.list``."""
    result = []
    for raw in one_line_text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("deb ") or line.startswith("deb\t"):
            result.append("deb-src" + line[3:])
    return result


# --- imperative shell -------------------------------------------------------------------------


def _run(cmd: Sequence[str], *, log_file: Path | None = None, cwd: Path | None = None) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if log_file is None:
        result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
            raise AptError(f"{' '.join(cmd)} failed ({result.returncode}): " + " | ".join(tail))
        return
    with log_file.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        code = subprocess.run(
            cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, check=False
        ).returncode
    if code != 0:
        raise AptError(f"{' '.join(cmd)} failed ({code}); see {log_file}")


def missing_packages(names: Iterable[str]) -> list[str]:
    """The Debian packages among ``names`` that are not installed."""
    missing = []
    for name in names:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True, check=False
        )
        if result.returncode != 0 or not result.stdout.endswith(" installed"):
            missing.append(name)
    return missing


def ensure_packages(names: Sequence[str], report: Report) -> None:
    """Install the Debian packages that are missing (``apt-get update`` first); else do nothing."""
    if shutil.which("dpkg-query") is None:
        raise AptError("this harness needs a Debian system (dpkg-query not found)")
    missing = missing_packages(names)
    if not missing:
        return
    if os.geteuid() != 0:
        raise AptError(
            f"missing Debian packages {' '.join(missing)}; run as root or "
            f"`apt-get install {' '.join(missing)}`"
        )
    report(f"installing Debian packages: {' '.join(missing)} (apt-get update first)")
    _run(["apt-get", "update"])
    _run(["apt-get", "install", "-y", "--no-install-recommends", *missing])
    still = missing_packages(missing)
    if still:
        raise AptError(f"apt-get install did not install: {' '.join(still)}")


def write_private_apt_config(apt_dir: Path, etc_apt: Path = APT_ETC) -> list[str]:
    """Lay out a private apt config under ``apt_dir`` with ``deb-src`` twins of the machine's
    enabled sources; return the ``-o`` options that make apt use it."""
    parts = apt_dir / "sources.list.d"
    parts.mkdir(parents=True, exist_ok=True)
    for sub in ("lists/partial", "cache/archives/partial"):
        (apt_dir / sub).mkdir(parents=True, exist_ok=True)
    stanzas: list[Deb822Stanza] = []
    lines: list[str] = []
    main_list = etc_apt / "sources.list"
    if main_list.is_file():
        lines.extend(deb_src_lines(main_list.read_text()))
    source_parts = etc_apt / "sources.list.d"
    if source_parts.is_dir():
        for path in sorted(source_parts.iterdir()):
            if path.suffix == ".sources":
                stanzas.extend(deb_src_stanzas(parse_deb822(path.read_text())))
            elif path.suffix == ".list":
                lines.extend(deb_src_lines(path.read_text()))
    if not stanzas and not lines:
        raise AptError(f"no enabled `deb` sources found under {etc_apt} to derive deb-src from")
    (parts / "derived.sources").write_text(render_deb822(stanzas))
    (apt_dir / "sources.list").write_text("".join(f"{line}\n" for line in lines))
    return [
        "-o",
        f"Dir::Etc::SourceList={apt_dir / 'sources.list'}",
        "-o",
        f"Dir::Etc::SourceParts={parts}",
        "-o",
        f"Dir::State::Lists={apt_dir / 'lists'}",
        "-o",
        f"Dir::Cache={apt_dir / 'cache'}",
        "-o",
        "APT::Sandbox::User=root",
    ]


def fetch_source_package(
    package: str, dest: Path, apt_dir: Path, log_file: Path, report: Report
) -> Path:
    """Download and unpack Debian source package ``package`` into ``dest``; return its tree."""
    options = write_private_apt_config(apt_dir)
    report(f"fetching the Debian source package {package!r} (deb-src derived from /etc/apt)")
    try:
        _run(["apt-get", *options, "update"], log_file=log_file)
    except AptError:
        # A third-party source without deb-src fails its own index; the fetch below is the test.
        report(f"apt-get update reported errors for some deb-src entries (see {log_file})")
    dest.mkdir(parents=True, exist_ok=True)
    _run(["apt-get", *options, "source", package], log_file=log_file, cwd=dest)
    trees = [p for p in dest.iterdir() if p.is_dir() and p.name.startswith(f"{package}-")]
    if len(trees) != 1:
        raise AptError(f"expected one unpacked {package} tree in {dest}, found {trees}")
    return trees[0]
