"""pyproject's [project] dependencies are exactly the third-party packages the product imports,
and its demo extra exactly what only the development packages (the image leaves them out) import
beyond those, with floors that hold what the code uses (a clean install of command 1 must import
and behave)."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


DEVELOPMENT_PACKAGES = ("embedded", "demo", "simulate", "devtools")
"""What the image leaves out (tests/unit/test_image_boundary.py holds the list to .dockerignore)."""


def declared(extra: str | None = None) -> dict[str, Requirement]:
    """The [project] dependencies, or with ``extra`` that optional extra's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    requirements = (Requirement(line) for line in lines)
    return {canonicalize_name(req.name): req for req in requirements}


def is_development(path: str) -> bool:
    return any(path.startswith(f"src/scaleset/{package}/") for package in DEVELOPMENT_PACKAGES)


def src_imports() -> Iterator[tuple[str, str]]:
    """(src file, imported module) for every absolute import in src, module-level or inside
    functions; `from a import b` gives `a.b`."""
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for module in modules:
                yield str(path.relative_to(ROOT)), module


def imported() -> dict[str, set[str]]:
    """Distribution name -> the src modules importing it."""
    owners = packages_distributions()
    found: dict[str, set[str]] = {}
    for path, module in src_imports():
        top = module.partition(".")[0]
        if top in sys.stdlib_module_names or top in ("scaleset", "__future__"):
            continue
        assert top in owners, f"{path} imports {top}: not installed"
        # a namespace shared by several distributions (lightkube, lightkube-models)
        # counts for the first one, the one named like the module
        names = sorted(owners[top], key=lambda name: canonicalize_name(name) != top)
        found.setdefault(canonicalize_name(names[0]), set()).add(path)
    return found


def test_every_imported_package_is_declared_and_every_declared_one_imported() -> None:
    uses = imported()
    product = {name for name, paths in uses.items() if not all(map(is_development, paths))}
    wanted, demo = declared(), declared("demo")
    assert sorted(product - set(wanted)) == [], "the product imports it: a dependency"
    assert sorted(set(uses) - set(wanted) - set(demo)) == [], "imported but not declared"
    assert sorted(set(wanted) - product) == [], "a dependency the product never imports"
    assert sorted(set(demo) - (set(uses) - product)) == [], "in the demo extra for nothing"


def test_the_demo_extra_is_the_embedded_servers_and_the_dev_extra_holds_it_too() -> None:
    """The image installs no extra: aiohttp and jsonpatch, which only the embedded servers
    import, stay out of it. scripts/test installs the dev extra, whose tests run them."""
    demo, dev = declared("demo"), declared("dev")
    assert sorted(demo) == ["aiohttp", "jsonpatch"]
    assert not set(demo) & set(declared())
    assert {name: str(dev[name]) for name in demo} == {name: str(demo[name]) for name in demo}


def test_the_installed_versions_satisfy_the_declared_floors() -> None:
    from importlib.metadata import version

    for name, requirement in (declared() | declared("demo")).items():
        assert requirement.specifier.contains(Version(version(name))), name


def test_pydantic_floor_has_validate_by_name() -> None:
    """The wire models use validate_by_name / validate_by_alias / serialize_by_alias (2.11);
    under 2.10 `RunnerScaleSet(runner_group_id=5)` silently became 0."""
    pydantic = declared()["pydantic"].specifier
    assert not pydantic.contains(Version("2.10.6"))
    assert pydantic.contains(Version("2.11.0"))


def test_lightkube_floor_is_on_httpx2() -> None:
    """scaleset.kube hands lightkube httpx2 clients: lightkube < 1.0 is built on httpx."""
    lightkube = declared()["lightkube"].specifier
    assert not lightkube.contains(Version("0.22.0"))
    assert lightkube.contains(Version("1.0.0"))


def _imports_of(top: str) -> dict[str, set[str]]:
    """src file -> the modules it imports under the top-level package `top`."""
    found: dict[str, set[str]] = {}
    for path, module in src_imports():
        if module.partition(".")[0] == top:
            found.setdefault(path, set()).add(module)
    return found


def test_one_http_client_library() -> None:
    """The GitHub client, lightkube and scaleset.kube share httpx2: no module imports httpx,
    the library httpx2 was forked from (one stack to load, to configure for TLS, proxies and
    timeouts, and to keep patched)."""
    assert _imports_of("httpx") == {}
    assert "httpx" not in declared()


def test_aiohttp_is_imported_only_by_the_embedded_servers() -> None:
    """aiohttp serves the embedded API server, fake GitHub and simulated kubelet (the demo's),
    never a client, and nothing of the product: the probe server is the standard library's."""
    importers = _imports_of("aiohttp")
    assert importers
    for path, names in importers.items():
        assert names == {"aiohttp.web"}, path
        assert path.startswith("src/scaleset/embedded/"), path


@pytest.mark.parametrize(
    "entry", ["scaleset.controllers.manager_process", "scaleset.listener.main"]
)
def test_the_controller_and_the_listener_load_one_http_client(entry: str) -> None:
    """What the processes import, not only what src names: a dependency pulling httpx back
    in would load two HTTP stacks again."""
    script = f"import sys, {entry}; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = set(result.stdout.split())
    assert "httpx2" in loaded
    assert {"httpx", "httpcore"} & loaded == set()
    assert "aiohttp" not in loaded  # an HTTP server framework for three probe paths
