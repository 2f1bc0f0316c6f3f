"""The embedded fake GitHub + Actions scale-set service (tests and ``scaleset demo`` only).

Public surface::

    from scaleset.clock import ManualClock            # time is one scaleset.clock.Clock
    from scaleset.embedded.actions import FakeGitHub
    async with FakeGitHub(host="127.0.0.1", port=0, clock=ManualClock(), ssl_context=None,
                          poll_hold_seconds=0.2, settings=FakeSettings(...)) as fake:
        fake.base_url                          # "http://127.0.0.1:PORT" (https with ssl_context)
        fake.api_url                           # base_url + "/api/v3" (GHES-style REST)
        fake.config_url("acme"); fake.config_url("acme", "app")
        fake.enterprise_config_url("ent")
        fake.add_pat("ghp_...", scopes=None)   # scopes: ["acme", "acme/app", "enterprises/e"]
        app = fake.add_github_app(app_id="123", installation_id=456)  # app.private_key_pem
        c = fake.control                       # FakeControl: drive it like GitHub
        c.queue_job(["arc"], duration_seconds=60) -> runnerRequestId; c.cancel_job(id)
        c.create_scale_set(config_url, "arc"); c.generate_jit_config(scale_set_id, "r1")
        c.expire_session(id); c.expire_message_queue_token(id); c.expire_admin_tokens()
        c.delete_runner(id, force=False); c.set_stale_statistics(True); c.sweep()
        c.faults.fail_next / rate_limit / unavailable / add_latency / drop_polls / set_bom
        c.faults.drop_responses(1, method="POST", path_contains="/sessions")  # handled, unanswered
        c.faults.fail_next(1, 200, body="{}", content_type="application/json")  # any answer
        c.faults.send_nulls({"runnerName", "totalAssignedJobs"})  # JSON null, as Go may send
        c.faults.secondary_rate_limit(1, 30); c.faults.delay_answers(2.0, 1, path_contains=...)
        c.snapshot() -> GroundTruth; await c.wait_for(lambda truth: ..., within=10)
        c.requests_to("/acquirejobs", "POST"); c.issued_secrets(); c.assumptions_relied_on()

The same control operations are served over HTTP under ``/_fake`` (see ``http_control``), and
``scaleset fake-github`` serves the fake standalone. The simulated runner that consumes the JIT
configs lives in ``scaleset.embedded.runner``. The product never imports this package.

What the fake does and where each behaviour comes from (protocol spec section, public API docs,
public issue, or ASSUMPTION) is in ``ledger``; ``assumptions()`` lists the behaviours no source
pins down and ``NOT_MODELLED`` the known gaps.
"""

from scaleset.embedded.actions.auth import GitHubApp, generate_rsa_private_key_pem
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
    "RunnerTruth",
    "ScaleSetTruth",
    "SessionTruth",
    "SourceKind",
    "Statistics",
    "Surface",
    "assumptions",
    "decode_jit_config",
    "generate_rsa_private_key_pem",
]
