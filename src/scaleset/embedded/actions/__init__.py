"""The embedded fake GitHub + Actions scale-set service (tests and ``scaleset demo`` only).

Public surface::

    from scaleset.embedded.actions import FakeGitHub
    async with FakeGitHub(host="127.0.0.1", port=0, clock=None, ssl_context=None,
                          poll_hold_seconds=0.2) as fake:
        fake.base_url                          # "http://127.0.0.1:PORT"
        fake.config_url("acme"); fake.config_url("acme", "app")
        fake.enterprise_config_url("ent")
        fake.add_pat("ghp_...")
        app = fake.add_github_app(app_id="123", installation_id=456)  # app.private_key_pem
        fake.control.queue_job(["arc"]); fake.control.snapshot(); fake.control.faults...

The product never imports this package. What the fake does and where each behaviour comes from
(protocol spec section, public API docs, public issue, or ASSUMPTION) is in ``ledger``;
``assumptions()`` lists the behaviours no source pins down.
"""

from scaleset.embedded.actions.auth import GitHubApp, generate_rsa_private_key_pem
from scaleset.embedded.actions.clock import Clock, ManualClock, Sleeper, system_clock, system_sleep
from scaleset.embedded.actions.control import (
    FakeControl,
    GroundTruth,
    JitRunner,
    JobTruth,
    RunnerTruth,
    ScaleSetTruth,
    SessionTruth,
)
from scaleset.embedded.actions.faults import DropMode, FaultInjector, Surface
from scaleset.embedded.actions.jitconfig import JitConfigError, JitRunnerConfig, decode_jit_config
from scaleset.embedded.actions.ledger import (
    LEDGER,
    NOT_MODELLED,
    LedgerEntry,
    SourceKind,
    assumptions,
)
from scaleset.embedded.actions.model import JobState
from scaleset.embedded.actions.rules import Statistics
from scaleset.embedded.actions.server import FakeGitHub, FakeSettings
from scaleset.embedded.actions.service import JobDelivery

__all__ = [
    "LEDGER",
    "NOT_MODELLED",
    "Clock",
    "DropMode",
    "FakeControl",
    "FakeGitHub",
    "FakeSettings",
    "FaultInjector",
    "GitHubApp",
    "GroundTruth",
    "JitConfigError",
    "JitRunner",
    "JitRunnerConfig",
    "JobDelivery",
    "JobState",
    "JobTruth",
    "LedgerEntry",
    "ManualClock",
    "RunnerTruth",
    "ScaleSetTruth",
    "SessionTruth",
    "Sleeper",
    "SourceKind",
    "Statistics",
    "Surface",
    "assumptions",
    "decode_jit_config",
    "generate_rsa_private_key_pem",
    "system_clock",
    "system_sleep",
]
