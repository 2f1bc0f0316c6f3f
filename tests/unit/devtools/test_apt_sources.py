"""deb-src entries are derived from the machine's own deb entries, in both source formats."""

from __future__ import annotations

from pathlib import Path

from scaleset.devtools.apt import (
    deb_src_lines,
    deb_src_stanzas,
    parse_deb822,
    render_deb822,
    write_private_apt_config,
)

SOURCES = """\
Types: deb
# a comment inside a stanza
URIs: http://archive.example/debian
Suites: stable stable-updates
Components: main
Signed-By: /usr/share/keyrings/example.gpg

Types: deb deb-src
URIs: http://security.example/debian
Suites: stable-security
Components: main contrib
Architectures: amd64
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 abc
 -----END PGP PUBLIC KEY BLOCK-----

Types: deb
Enabled: no
URIs: http://disabled.example/debian
Suites: stable
Components: main

Types: deb-src
URIs: http://only-src.example/debian
Suites: stable
Components: main
"""


def test_parse_joins_continuation_lines_and_drops_comments() -> None:
    stanzas = parse_deb822(SOURCES)

    assert len(stanzas) == 4
    assert stanzas[0].get("uris") == "http://archive.example/debian"
    assert stanzas[1].get("Signed-By") == (
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\nabc\n-----END PGP PUBLIC KEY BLOCK-----"
    )


def test_every_enabled_deb_stanza_gets_a_deb_src_twin() -> None:
    twins = deb_src_stanzas(parse_deb822(SOURCES))

    assert [t.get("URIs") for t in twins] == [
        "http://archive.example/debian",
        "http://security.example/debian",
    ]
    assert all(t.get("Types") == "deb-src" for t in twins)
    assert twins[0].get("Suites") == "stable stable-updates"
    assert twins[0].get("Signed-By") == "/usr/share/keyrings/example.gpg"
    assert twins[1].get("Architectures") is None


def test_rendered_stanzas_parse_back_to_the_same_fields() -> None:
    twins = deb_src_stanzas(parse_deb822(SOURCES))

    assert parse_deb822(render_deb822(twins)) == twins


def test_one_line_sources_get_deb_src_twins() -> None:
    text = (
        "deb [signed-by=/k.gpg] http://archive.example/debian stable main\n"
        "# deb http://commented.example/debian stable main\n"
        "deb-src http://archive.example/debian stable main\n"
        "deb http://other.example/debian stable main # trailing comment\n"
    )

    assert deb_src_lines(text) == [
        "deb-src [signed-by=/k.gpg] http://archive.example/debian stable main",
        "deb-src http://other.example/debian stable main",
    ]


def test_private_apt_config_reads_only_files_apt_reads(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list").write_text("deb http://one-line.example/debian stable main\n")
    (etc / "sources.list.d" / "main.sources").write_text(SOURCES)
    (etc / "sources.list.d" / "extra.list").write_text("deb http://extra.example/d stable main\n")
    (etc / "sources.list.d" / "off.sources.disabled").write_text(
        "Types: deb\nURIs: http://ignored.example/d\nSuites: s\nComponents: main\n"
    )

    options = write_private_apt_config(tmp_path / "apt", etc_apt=etc)

    derived = (tmp_path / "apt" / "sources.list.d" / "derived.sources").read_text()
    one_line = (tmp_path / "apt" / "sources.list").read_text()
    assert "http://archive.example/debian" in derived
    assert "ignored.example" not in derived + one_line
    assert one_line.splitlines() == [
        "deb-src http://one-line.example/debian stable main",
        "deb-src http://extra.example/d stable main",
    ]
    assert f"Dir::State::Lists={tmp_path / 'apt' / 'lists'}" in options
    assert (tmp_path / "apt" / "lists" / "partial").is_dir()
