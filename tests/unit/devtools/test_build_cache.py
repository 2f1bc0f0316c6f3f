"""A cached kube-apiserver is reused only when its marker (written last) matches the binary."""

from __future__ import annotations

import json
from pathlib import Path

from scaleset.devtools.build import (
    DEBIAN_GO_BIN,
    KUBE_VERSION,
    BuildCache,
    build_environment,
    cached_binary,
    sha256_of,
)


def make_cache(tmp_path: Path, content: bytes = b"binary") -> BuildCache:
    cache = BuildCache(tmp_path / "cache")
    cache.root.mkdir()
    cache.binary.write_bytes(content)
    return cache


def write_marker(cache: BuildCache, version: str, sha256: str) -> None:
    cache.marker.write_text(json.dumps({"version": version, "sha256": sha256}))


def test_binary_with_matching_marker_is_reused(tmp_path: Path) -> None:
    cache = make_cache(tmp_path)
    write_marker(cache, KUBE_VERSION, sha256_of(cache.binary))

    assert cached_binary(cache) == cache.binary


def test_binary_without_marker_is_a_half_finished_build(tmp_path: Path) -> None:
    cache = make_cache(tmp_path)

    assert cached_binary(cache) is None


def test_binary_changed_after_the_marker_is_not_reused(tmp_path: Path) -> None:
    cache = make_cache(tmp_path)
    write_marker(cache, KUBE_VERSION, sha256_of(cache.binary))
    cache.binary.write_bytes(b"truncated")

    assert cached_binary(cache) is None


def test_marker_of_another_version_is_not_reused(tmp_path: Path) -> None:
    cache = make_cache(tmp_path)
    write_marker(cache, "v1.19.0", sha256_of(cache.binary))

    assert cached_binary(cache) is None


def test_garbled_marker_is_not_reused(tmp_path: Path) -> None:
    cache = make_cache(tmp_path)
    cache.marker.write_text("{not json")

    assert cached_binary(cache) is None


def test_the_build_runs_debians_go_whatever_go_comes_first_on_path(tmp_path: Path) -> None:
    machine = {
        "PATH": "/usr/local/go/bin:/root/go/bin:/usr/bin:/bin",
        "GOROOT": "/usr/local/go",
        "GOTOOLCHAIN": "auto",
        "GOPROXY": "https://proxy.invalid",
        "GOENV": "/root/.config/go/env",
        "http_proxy": "http://proxy:3128",
    }

    env = build_environment(machine, tmp_path)

    assert env["PATH"].split(":")[0] == str(DEBIAN_GO_BIN)
    assert "GOROOT" not in env
    assert env["GOTOOLCHAIN"] == "local"
    assert env["GOPROXY"] == "off"
    assert env["GOENV"] == "off"
    assert env["http_proxy"] == "http://proxy:3128"  # the machine's own settings pass through
