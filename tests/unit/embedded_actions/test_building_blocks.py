"""The fake's small parts: config-URL scopes, JIT configs, fault rules and the fidelity ledger."""

from __future__ import annotations

import base64
import json

import pytest

from scaleset.embedded.actions import LEDGER, SourceKind, Surface, assumptions
from scaleset.embedded.actions.faults import FaultInjector, with_nulls
from scaleset.embedded.actions.jitconfig import (
    JitConfigError,
    JitRunnerConfig,
    decode_jit_config,
    encode_jit_config,
)
from scaleset.embedded.actions.model import Scope, ScopeKind, parse_config_url

CONFIG = JitRunnerConfig(
    runner_id=7,
    runner_name="arc-runner-x",
    scale_set_id=3,
    runner_group_id=1,
    runner_group_name="Default",
    server_url="http://127.0.0.1:1/tenant/1/",
    broker_url="http://127.0.0.1:1/broker/",
    github_url="http://127.0.0.1:1/acme",
    work_folder="/work",
    credential="rcred_supersecretvalue",
)


@pytest.mark.parametrize(
    ("url", "scope"),
    [
        ("https://ghes.example/acme", Scope(ScopeKind.ORGANIZATION, "acme")),
        ("https://ghes.example/acme/", Scope(ScopeKind.ORGANIZATION, "acme")),
        ("https://ghes.example/acme/app", Scope(ScopeKind.REPOSITORY, "acme", "app")),
        ("https://ghes.example/Enterprises/ent", Scope(ScopeKind.ENTERPRISE, "ent")),
    ],
)
def test_config_url_scopes(url: str, scope: Scope) -> None:
    assert parse_config_url(url) == scope


@pytest.mark.parametrize("url", ["https://ghes.example", "https://ghes.example/a/b/c", ""])
def test_invalid_config_urls(url: str) -> None:
    with pytest.raises(ValueError, match="config URL"):
        parse_config_url(url)


def test_an_org_scope_covers_its_repositories_only() -> None:
    org = Scope(ScopeKind.ORGANIZATION, "Acme")
    assert org.covers(Scope(ScopeKind.REPOSITORY, "acme", "app"))
    assert org.covers(Scope(ScopeKind.ORGANIZATION, "ACME"))
    assert not org.covers(Scope(ScopeKind.REPOSITORY, "other", "app"))
    assert not Scope(ScopeKind.REPOSITORY, "acme", "app").covers(org)


def test_jit_config_round_trip_and_real_shape() -> None:
    encoded = encode_jit_config(CONFIG)
    assert decode_jit_config(encoded) == CONFIG
    files = json.loads(base64.b64decode(encoded))
    assert set(files) == {".runner", ".credentials", ".credentials_rsaparams"}
    runner = json.loads(base64.b64decode(files[".runner"]))
    assert runner["AgentId"] == 7
    assert runner["AgentName"] == "arc-runner-x"
    assert "supersecret" not in repr(CONFIG)


@pytest.mark.parametrize(
    "encoded",
    [
        "",
        "not base64!",
        base64.b64encode(b"[1]").decode(),
        base64.b64encode(json.dumps({".runner": "eA=="}).encode()).decode(),
    ],
)
def test_bad_jit_configs_fail_without_quoting_them(encoded: str) -> None:
    with pytest.raises(JitConfigError) as caught:
        decode_jit_config(encoded)
    if encoded:
        assert encoded not in str(caught.value)


def test_fault_rules_match_fire_and_expire() -> None:
    faults = FaultInjector()
    rule_id = faults.fail_next(2, 503, surface=Surface.ACTIONS, path_contains="/agents")
    assert faults.take_status(Surface.GITHUB, "GET", "/x/agents") is None
    assert faults.take_status(Surface.ACTIONS, "GET", "/x/other") is None
    assert faults.take_status(Surface.CONTROL, "GET", "/x/agents") is None
    hits = [faults.take_status(Surface.ACTIONS, "DELETE", "/t/agents/1") for _ in range(3)]
    assert [h.status if h else None for h in hits] == [503, 503, None]
    forever = faults.add_latency(0.5)
    assert [faults.take_latency(Surface.MESSAGE_QUEUE, "GET", "/mq") for _ in range(3)] == [0.5] * 3
    faults.remove(forever)
    assert faults.take_latency(Surface.MESSAGE_QUEUE, "GET", "/mq") == 0.0
    assert rule_id == 1
    with pytest.raises(ValueError, match="from 200 to 599"):
        faults.fail_next(1, 101)
    with pytest.raises(ValueError, match="from 200 to 599"):
        faults.fail_next(1, 600)
    with pytest.raises(ValueError, match="at least once"):
        faults.fail_next(0)


def test_ledger_is_well_formed_and_lists_its_assumptions() -> None:
    keys = [entry.key for entry in LEDGER]
    assert len(keys) == len(set(keys))
    assert all(entry.behaviour and entry.source for entry in LEDGER)
    listed = assumptions()
    assert listed
    assert all(entry.kind is SourceKind.ASSUMPTION for entry in listed)
    assert {e.key for e in listed} == {e.key for e in LEDGER if e.key.startswith("A-")}
    spec_entries = [e for e in LEDGER if e.kind is SourceKind.SPEC]
    assert all("§" in e.source for e in spec_entries)


def test_every_assumption_the_code_relies_on_is_in_the_ledger() -> None:
    import re
    from pathlib import Path

    import scaleset.embedded.actions as package

    keys = {entry.key for entry in LEDGER}
    source = "".join(p.read_text() for p in Path(package.__file__).parent.glob("*.py"))
    used = set(re.findall(r'"(A-[A-Z-]+)"', source))
    assert used
    assert used <= keys


def test_with_nulls_rewrites_named_members_at_any_depth() -> None:
    fields = frozenset({"runnerName", "totalIdleRunners"})
    body = {
        "runnerName": "r1",
        "statistics": {"totalIdleRunners": 2, "totalBusyRunners": 1},
        "value": [{"runnerName": "r2", "id": 3}],
        "body": json.dumps([{"messageType": "JobCompleted", "runnerName": "r3"}]),
    }
    nulled = with_nulls(body, fields)
    assert nulled["runnerName"] is None
    assert nulled["statistics"] == {"totalIdleRunners": None, "totalBusyRunners": 1}
    assert nulled["value"] == [{"runnerName": None, "id": 3}]
    assert json.loads(nulled["body"]) == [{"messageType": "JobCompleted", "runnerName": None}]
    assert with_nulls({"body": "not json"}, fields) == {"body": "not json"}
    assert body["runnerName"] == "r1"  # the original is not changed
    with pytest.raises(ValueError, match="at least one field"):
        FaultInjector().send_nulls([])
