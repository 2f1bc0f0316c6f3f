"""Build kube-apiserver v1.20.2 from Debian's ``kubernetes`` source package, once, and cache it.

The binary is cached outside the repository (``$XDG_CACHE_HOME/scaleset/kube-apiserver-v1.20.2``)
and reused across runs and sessions. A marker file written last (version + sha256 of the binary)
is what makes a cached binary valid, so a half-finished build is never reused. A file lock
serialises concurrent builds. Build output goes to ``build.log`` in the cache directory; the
terminal gets progress lines with the elapsed time.

The build uses Debian's Go (``golang-go``, ``/usr/lib/go/bin/go``), the toolchain the source
package is built with, whatever other Go comes first on ``PATH`` (a machine may carry a much
newer one): ``build_environment`` puts Debian's first, drops ``GOROOT`` and forbids toolchain
downloads, and a finished build is refused unless the binary says it was built by that Go
(``built_with_go``, recorded in the marker).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from scaleset.devtools.apt import Report, ensure_packages, fetch_source_package

KUBE_VERSION = "v1.20.2"
SOURCE_PACKAGE = "kubernetes"
BUILD_PACKAGES = (
    "golang-go",
    "golang-github-modern-go-reflect2-dev",
    "dpkg-dev",
    "make",
    "rsync",
)
# kube-apiserver 1.20 vendors reflect2 v1.0.1, which crashes at run time on Go >= 1.18;
# Debian's v1.0.2 of the same library replaces it.
DEBIAN_REFLECT2 = Path("/usr/share/gocode/src/github.com/modern-go/reflect2")
# Debian's Go (golang-go); the build must use it, not a newer Go first on PATH.
DEBIAN_GO_BIN = Path("/usr/lib/go/bin")
VENDORED_REFLECT2 = Path("vendor/github.com/modern-go/reflect2")
PROGRESS_EVERY_S = 30.0


class BuildError(RuntimeError):
    """kube-apiserver could not be built; the message points at the log file."""


@dataclass(frozen=True)
class BuildCache:
    """Where the built binary, its marker and the build log live."""

    root: Path

    @property
    def binary(self) -> Path:
        return self.root / "kube-apiserver"

    @property
    def marker(self) -> Path:
        return self.root / "BUILD_OK.json"

    @property
    def log(self) -> Path:
        return self.root / "build.log"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"


def default_cache() -> BuildCache:
    """``${XDG_CACHE_HOME:-~/.cache}/scaleset/kube-apiserver-v1.20.2``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return BuildCache(Path(base) / "scaleset" / f"kube-apiserver-{KUBE_VERSION}")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cached_binary(cache: BuildCache) -> Path | None:
    """The cached binary if its marker says it is complete and it matches; else ``None``."""
    try:
        marker = json.loads(cache.marker.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("version") != KUBE_VERSION:
        return None
    if not cache.binary.is_file() or marker.get("sha256") != sha256_of(cache.binary):
        return None
    return cache.binary


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_built(report: Report, cache: BuildCache | None = None) -> Path:
    """Return the cached kube-apiserver binary, building it first if there is none."""
    cache = cache or default_cache()
    found = cached_binary(cache)
    if found:
        return found
    with _exclusive(cache.lock):
        found = cached_binary(cache)  # another process may have built it while we waited
        if found:
            return found
        _build(cache, report)
        built = cached_binary(cache)
        if built is None:  # pragma: no cover - _build writes the marker last
            raise BuildError(f"build finished without a valid binary; see {cache.log}")
        return built


def _build(cache: BuildCache, report: Report) -> None:
    started = time.monotonic()
    report(f"building kube-apiserver {KUBE_VERSION} (one time, several minutes); log: {cache.log}")
    cache.marker.unlink(missing_ok=True)
    cache.binary.unlink(missing_ok=True)
    shutil.rmtree(cache.work, ignore_errors=True)  # a previous, unfinished build
    cache.root.mkdir(parents=True, exist_ok=True)
    cache.log.write_text(f"building kube-apiserver {KUBE_VERSION} at {time.ctime()}\n")
    ensure_packages(BUILD_PACKAGES, report)
    tree = fetch_source_package(
        SOURCE_PACKAGE, cache.work / "src", cache.work / "apt", cache.log, report
    )
    _replace_reflect2(tree)
    _make(tree, cache, report, started)
    output = tree / "_output" / "bin" / "kube-apiserver"
    if not output.is_file():
        raise BuildError(f"make succeeded but {output} is missing; see {cache.log}")
    staged = cache.root / "kube-apiserver.partial"
    shutil.copy2(output, staged)
    version = _binary_version(staged)
    if KUBE_VERSION not in version.split():
        raise BuildError(f"built binary reports {version!r}, expected {KUBE_VERSION}")
    debian_go, used_go = debian_go_version(), built_with_go(staged)
    if used_go != debian_go:
        raise BuildError(
            f"built binary was compiled by {used_go}, not by Debian's {debian_go} "
            f"({DEBIAN_GO_BIN}); see {cache.log}"
        )
    staged.replace(cache.binary)
    marker = {
        "version": KUBE_VERSION,
        "sha256": sha256_of(cache.binary),
        "go": used_go,
        "built": time.ctime(),
    }
    staged_marker = cache.root / "BUILD_OK.json.partial"
    staged_marker.write_text(json.dumps(marker))
    staged_marker.replace(cache.marker)
    shutil.rmtree(cache.work, ignore_errors=True)
    report(f"built kube-apiserver {KUBE_VERSION} in {time.monotonic() - started:.0f}s")


def _replace_reflect2(tree: Path) -> None:
    if not (DEBIAN_REFLECT2 / "reflect2.go").is_file():
        raise BuildError(f"{DEBIAN_REFLECT2} missing (golang-github-modern-go-reflect2-dev)")
    vendored = tree / VENDORED_REFLECT2
    license_text = (vendored / "LICENSE").read_bytes() if (vendored / "LICENSE").is_file() else None
    shutil.rmtree(vendored)
    shutil.copytree(DEBIAN_REFLECT2, vendored)
    if license_text is not None:
        (vendored / "LICENSE").write_bytes(license_text)


def build_environment(base: dict[str, str], home: Path) -> dict[str, str]:
    """The environment of ``make``: Debian's Go first on ``PATH`` and nothing that points the
    build at another Go (``GOROOT``, ``GOTOOLCHAIN``, a module proxy); the rest of ``base``
    (the machine's apt/proxy settings) passes through."""
    env = {key: value for key, value in base.items() if key not in ("GOROOT", "GOBIN", "GOENV")}
    env.update(
        {
            "HOME": str(home),
            "CGO_ENABLED": "0",
            "GO111MODULE": "off",
            "GOFLAGS": "",
            "GOPROXY": "off",
            "GOTOOLCHAIN": "local",
            "GOENV": "off",
            "PATH": f"{DEBIAN_GO_BIN}:{base.get('PATH', '/usr/bin:/bin')}",
        }
    )
    return env


def debian_go_version() -> str:
    """``go1.19.8``: what Debian's Go says of itself."""
    result = _go_version()
    words = result.stdout.split()
    if result.returncode != 0 or len(words) < 3:
        raise BuildError(f"{DEBIAN_GO_BIN}/go version failed: {result.stderr.strip()[:300]}")
    return words[2]


def built_with_go(binary: Path) -> str:
    """The Go release that compiled ``binary`` (``go1.19.8``), read from its build info by
    Debian's Go (``go version FILE``)."""
    result = _go_version(str(binary))
    words = result.stdout.split()
    if result.returncode != 0 or len(words) < 2:
        raise BuildError(f"cannot read the Go version of {binary}: {result.stderr.strip()[:300]}")
    return words[1]


def _go_version(*args: str) -> subprocess.CompletedProcess[str]:
    """``go version ARGS`` run by Debian's Go, in a clean environment."""
    return subprocess.run(
        [str(DEBIAN_GO_BIN / "go"), "version", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "GOTOOLCHAIN": "local", "GOENV": "off"},
    )


def _make(tree: Path, cache: BuildCache, report: Report, started: float) -> None:
    home = cache.work / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = build_environment(dict(os.environ), home)
    with cache.log.open("a") as log:
        log.write("$ make WHAT=cmd/kube-apiserver\n")
        log.flush()
        process = subprocess.Popen(
            ["make", "WHAT=cmd/kube-apiserver"],
            cwd=tree,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            while True:
                try:
                    code = process.wait(timeout=PROGRESS_EVERY_S)
                    break
                except subprocess.TimeoutExpired:
                    elapsed = time.monotonic() - started
                    report(f"still building kube-apiserver ({_mmss(elapsed)} elapsed)")
        except BaseException:
            process.kill()
            process.wait()
            raise
    if code != 0:
        raise BuildError(f"make WHAT=cmd/kube-apiserver failed (exit {code}); see {cache.log}")


def _binary_version(binary: Path) -> str:
    result = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    if result.returncode != 0:
        raise BuildError(f"{binary} --version failed: {result.stderr.strip()[:500]}")
    return result.stdout.strip()


def _mmss(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"
