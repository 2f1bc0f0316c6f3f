"""The fidelity ledger: every behaviour of the fake GitHub, tagged with where it comes from.

Sources are the project's notes on GitHub's scale-set protocol (cited as ``§n``), the
public GitHub REST API documentation, public issues (field observations), or ``ASSUMPTION`` —
behaviour the fake had to choose because no source pins it. ``assumptions()`` lists the latter;
``scaleset demo`` prints the ones its run relied on, so nobody mistakes the fake for the service.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class SourceKind(enum.StrEnum):
    SPEC = "protocol spec"
    PUBLIC_API = "public REST API docs"
    PUBLIC_ISSUE = "public issue"
    RUNNER_SOURCE = "actions/runner public source"
    ASSUMPTION = "ASSUMPTION"


@dataclass(frozen=True)
class LedgerEntry:
    key: str
    behaviour: str
    kind: SourceKind
    source: str


def _spec(key: str, behaviour: str, section: str) -> LedgerEntry:
    return LedgerEntry(key, behaviour, SourceKind.SPEC, section)


def _assume(key: str, behaviour: str, why: str) -> LedgerEntry:
    return LedgerEntry(key, behaviour, SourceKind.ASSUMPTION, why)


LEDGER: tuple[LedgerEntry, ...] = (
    # ---------------------------------------------------------------- GitHub side (§1)
    _spec(
        "S-CONFIG-URL",
        "Config URLs are GHES-style: <base>/<org>, <base>/<owner>/<repo>, "
        "<base>/enterprises/<slug>; the GitHub API lives under <base>/api/v3.",
        "§1.1, §6 (test servers use GHES-style URLs)",
    ),
    _spec(
        "S-APP-TOKEN",
        "POST /app/installations/{id}/access_tokens verifies the RS256 App JWT with the App's "
        "public key (iss = app id or client id) and answers 201 {token, expires_at}.",
        "§1.2",
    ),
    LedgerEntry(
        "P-APP-JWT-TIMES",
        "App JWTs are refused when iat is more than 60 s in the future, exp is past, or exp is "
        "more than 10 minutes ahead.",
        SourceKind.PUBLIC_API,
        "GitHub docs: Generating a JSON Web Token (JWT) for a GitHub App",
    ),
    _spec(
        "S-REG-TOKEN",
        "POST {orgs|repos|enterprises}/.../actions/runners/registration-token with a PAT or "
        "installation token (Bearer or token scheme) answers 201 {token, expires_at}.",
        "§1.3",
    ),
    _spec(
        "S-RUNNER-REGISTRATION",
        "POST /actions/runner-registration with RemoteAuth <registration token> and "
        '{"url", "runner_event"} answers 201 {url: <base>/tenant/<n>/, token: RS256 admin JWT '
        "with exp}.",
        "§1.4, §1.5, §8",
    ),
    LedgerEntry(
        "P-TOKEN-LIFETIMES",
        "Registration and installation tokens live one hour.",
        SourceKind.PUBLIC_API,
        "GitHub REST docs (registration token expires after one hour; installation tokens 1 h)",
    ),
    LedgerEntry(
        "P-REST-RUNNERS",
        "GET {orgs|repos|enterprises}/.../actions/runners lists live registrations of exactly "
        "that scope: {total_count, runners: [{id, name, os, status, busy, ephemeral, labels}]}, "
        "per_page (default 30, max 100), page, name filter, RFC 8288 Link header.",
        SourceKind.PUBLIC_API,
        "GitHub REST docs: List self-hosted runners for an organization/repository/enterprise",
    ),
    _assume(
        "A-REST-RUNNER-FIELDS",
        "Scale-set runners appear in the REST list with the scale set's labels (type "
        "read-only), its runner group id, status online while a runner process is connected.",
        "The REST docs do not say how scale-set runners are shown.",
    ),
    LedgerEntry(
        "P-BAD-CREDENTIALS",
        'Unknown or expired GitHub credentials: 401 {"message": "Bad credentials"}; a '
        "credential limited to other scopes: 403.",
        SourceKind.PUBLIC_API,
        "GitHub REST docs (authentication errors)",
    ),
    _assume(
        "A-CREDENTIAL-SCOPES",
        "PATs and App installations are valid for every scope unless registered with scopes; "
        "an organization scope covers its repositories.",
        "The fake does not model GitHub permissions.",
    ),
    _assume(
        "A-TENANT-PER-SCOPE",
        "Each config scope (org, repo, enterprise) has its own Actions tenant with runner "
        "group 1 'Default'; runner names are unique per tenant.",
        "Spec §2.4 gives default group id 1; tenancy layout is not public.",
    ),
    # ------------------------------------------------------ Actions service admin (§2)
    _spec(
        "S-ADMIN-AUTH",
        "Admin endpoints need Bearer <admin JWT> of that tenant; an expired or revoked token "
        "gets 401.",
        "§1.5, §1.6",
    ),
    _spec(
        "S-API-VERSION",
        "Admin endpoints and acquirejobs require api-version=6.0-preview; the message queue "
        "takes none.",
        "§1.6, §2 notes on #14/#15",
    ),
    _assume(
        "A-API-VERSION-ERRORS",
        "A missing api-version is 400 VssVersionNotSpecifiedException, another value 400 "
        "VssVersionNotSupportedException.",
        "Azure DevOps convention; the Actions service's answer is not documented.",
    ),
    _spec(
        "S-ENDPOINT-CODES",
        "Success codes exactly as the endpoint table: create scale set 200, delete scale set "
        "204, runner removal 204, session create/refresh 200, session delete 204, message 200 "
        "or 202, message delete 204, acquirejobs 200.",
        "§2 table, §2.2",
    ),
    _spec(
        "S-ERROR-BODY",
        "Actions errors are JSON {typeName, message} with an ActivityId header; GitHub REST "
        "responses carry X-GitHub-Request-Id.",
        "§2.1",
    ),
    _spec("S-DUPLICATE-SLASHES", "Duplicate slashes in paths are collapsed.", "§2 note on #16"),
    _spec(
        "S-SCALE-SETS",
        "Scale sets per runner group: get by name (count/value, exact name within the group), "
        "get by id, create (labels default to the name with type System), partial PATCH "
        "(name, runnerGroupId, labels, RunnerSetting read case-insensitively), delete.",
        "§2 #1-#5, §2.4, §3",
    ),
    _assume(
        "A-SCALE-SET-ERRORS",
        "Unknown scale set: 404 RunnerScaleSetNotFoundException (GET by id included, not a "
        "null body); duplicate name in a group: 409 RunnerScaleSetExistsException; unknown "
        "runner group: 404 TaskAgentPoolNotFoundException.",
        "Only the session-create 404 is seen in public issues.",
    ),
    _assume(
        "A-SCALE-SET-DELETE",
        "Deleting a scale set ends its session, removes its registrations, cancels its jobs in "
        "flight and returns its waiting jobs to the queue.",
        "Not documented.",
    ),
    _spec(
        "S-RUNNER-GROUPS",
        "GET runnergroups/?groupName= answers {count, value: [{id, name, size, isDefaultGroup}]}.",
        "§2 #6, §2.4",
    ),
    _spec(
        "S-JIT",
        "generatejitconfig registers the runner at once and answers {runner: {id, name, "
        "runnerScaleSetId}, encodedJITConfig}; a live registration with the same name gives "
        "409 AgentExists.",
        "§2 #7, §3",
    ),
    LedgerEntry(
        "R-JIT-FORMAT",
        "encodedJITConfig is base64 of a JSON map from runner config file names (.runner, "
        ".credentials, .credentials_rsaparams) to base64 contents.",
        SourceKind.RUNNER_SOURCE,
        "actions/runner src/Runner.Listener/Runner.cs (jitconfig handling)",
    ),
    _spec(
        "S-RUNNERS",
        "Runner by id / by name (count 0 or 1); remove: 204, busy runner 400 "
        "JobStillRunningException, unknown 404 AgentNotFoundException.",
        "§2 #8-#10, §2.2, §6.1",
    ),
    _assume(
        "A-EXCEPTION-NAMES",
        "Full exception names: GitHub.DistributedTask.WebApi.TaskAgentExistsException, "
        "TaskAgentNotFoundException, JobStillRunningException (clients match substrings).",
        "The spec gives the substrings only.",
    ),
    # -------------------------------------------------------------- sessions and queue (§4)
    _spec(
        "S-SESSION",
        "One active session per scale set (second create: 409 "
        "RunnerScaleSetSessionConflictException); the response carries runnerScaleSet, "
        "messageQueueUrl, messageQueueAccessToken and statistics; PATCH refresh returns the "
        "whole session with a new token; delete of an unknown session: 400 "
        "RunnerScaleSetSessionExpiredException.",
        "§4.1, §2.1 (names from public issues), §6.1",
    ),
    LedgerEntry(
        "I-REFRESH-404",
        "Refreshing a session the service no longer knows answers 404.",
        SourceKind.PUBLIC_ISSUE,
        "actions/scaleset #123 (re-create the session when refresh returns 404)",
    ),
    _assume(
        "A-SESSION-IDLE-EXPIRY",
        "A session with no queue activity and no poll in flight for session_idle_timeout "
        "(default 300 s) is expired by the service; a sessionless scale set drops job events "
        "(the next session learns the state from statistics).",
        "Public issues #3209/#4285 show stale sessions expire; the duration is unknown.",
    ),
    _assume(
        "A-MQ-URL",
        "messageQueueUrl is <base>/mq/<scaleSetId>/messages?sessionId=<id>: it has a query "
        "string, which clients must keep on GET and on DELETE .../<messageId>.",
        "§4.2/§4.3 require preserving the query; the real URL layout is not public.",
    ),
    LedgerEntry(
        "P-MQ-ORIGIN",
        "With FakeGitHub(message_queue_host=...), messageQueueUrl is on its own host name and "
        "port, apart from the tenant (Actions service) URL.",
        SourceKind.PUBLIC_ISSUE,
        "Listener logs in public issues show the queue on a broker host "
        "(broker.actions.githubusercontent.com) while the tenant URL is another host (§0).",
    ),
    _assume(
        "A-MQ-ORIGIN-ONLY",
        "With the queue served apart, queue paths are 404 on the tenant origin and every other "
        "path is 404 on the queue origin.",
        "Not documented; keeps a client from passing only because both live on one server.",
    ),
    _spec(
        "S-MQ-TOKEN",
        "The message-queue token is opaque, expires (default 3000 s, ~50 min per a public "
        "issue) and is then refused with 401 on GET/DELETE message and acquirejobs.",
        "§4.1, §2.2",
    ),
    _assume(
        "A-MQ-TOKEN-ROTATION",
        "A refresh invalidates the previous message-queue token at once; the 401 has no body.",
        "Not documented.",
    ),
    _spec(
        "S-QUEUE",
        "Monotonic message ids; GET returns the oldest undeleted message with id > "
        "lastMessageId (oldest when 0/omitted), else forms one from pending job events; "
        "messages are redelivered until deleted; at most 50 job messages per message; body is "
        "a JSON string holding the array; statistics always present; long poll answers 202 "
        "after the hold.",
        "§4.2, §6.1",
    ),
    _assume(
        "A-STATISTICS-AT-DELIVERY",
        "A message's statistics are computed when it is delivered (a redelivery shows fresh "
        "numbers); its job events are fixed when they happen.",
        "Not documented.",
    ),
    _assume(
        "A-DELETE-MESSAGE-IDEMPOTENT",
        "Deleting a message that is already gone answers 204.",
        "Not documented; keeps retried deletes harmless.",
    ),
    _spec(
        "S-CAPACITY",
        "X-ScaleSetMaxCapacity must be a non-negative integer; the service assigns no more "
        "jobs to a scale set than that capacity.",
        "§4.2 (purpose of the header)",
    ),
    _assume(
        "A-CAPACITY-RULE",
        "Jobs beyond capacity stay queued (unassigned) until the scale set has room; a "
        "negative or non-numeric header is 400 text/plain.",
        "The exact server rule is not public.",
    ),
    _spec(
        "S-ACQUIRE",
        "acquirejobs takes the MQ token and a bare JSON array of runnerRequestIds and answers "
        "{count, value: [ids now assigned to the set]}; in acquire delivery jobs arrive as "
        "JobAvailable and become JobAssigned once acquired.",
        "§2 #16, §4.4",
    ),
    _spec(
        "S-JOB-MESSAGES",
        "Job messages carry the common fields of §4.5; JobStarted/JobCompleted add runnerId "
        "and runnerName, JobCompleted adds result, JobAvailable adds acquireJobUrl; unset "
        "times are Go's zero time.",
        "§4.5",
    ),
    _spec(
        "S-STATISTICS",
        "Statistics are derived from real job and runner state: assigned = assigned, "
        "dispatched or running jobs (>= running); busy + idle = registered.",
        "§2.4, §6.1",
    ),
    _assume(
        "A-STATISTICS-DETAIL",
        "available = JobAvailable not yet acquired; acquired = acquired jobs still in flight; "
        "registered = every live registration, connected or not; a runner is busy from the "
        "moment it is handed a job.",
        "The ARC metrics ADR gives meanings, not edge cases.",
    ),
    _assume(
        "A-JOB-MATCHING",
        "A job goes to a scale set whose labels contain all its runs-on labels "
        "(case-insensitive) in a scope holding its repository: repository scope first, then "
        "organization, then enterprise, then lowest id.",
        "GitHub's routing among several matching scale sets is not documented.",
    ),
    _assume(
        "A-JOB-CANCEL",
        "Cancelling a job that waits completes it as 'canceled' at once (JobCompleted without "
        "runner); a job on a runner is flagged and the runner finishes it as 'canceled'.",
        "§4.5 mentions 'canceled' results; the mechanics are not public.",
    ),
    LedgerEntry(
        "R-EPHEMERAL-REMOVAL",
        "A JIT runner takes one job; when it finishes (any result) the service deletes the "
        "registration.",
        SourceKind.PUBLIC_ISSUE,
        "actions/runner #660 (--ephemeral: the service un-configures the runner after its job) "
        "and ARC #4588 variant A (registration gone after the job)",
    ),
    # ----------------------------------------------------------- runner side (assumed)
    _assume(
        "A-RUNNER-PROTOCOL",
        "Runners talk to /broker/... (session, message, jobs/{id}/start|cancellation|complete) "
        "with a bearer credential from the JIT config; the real broker protocol is out of "
        "scope.",
        "The fake's own protocol; only its observable outcomes follow the sources below.",
    ),
    LedgerEntry(
        "I-RUNNER-ZOMBIES",
        "A runner whose registration still has a live session gets 409 "
        "TaskAgentSessionConflictException and retries; once the registration is deleted it "
        "gets 'Registration <id> was not found' and exits (exit code 0 through run.sh).",
        SourceKind.PUBLIC_ISSUE,
        "ARC #4588, ARC #4155 (runner log), actions/runner run-helper.sh.template",
    ),
    LedgerEntry(
        "I-RUNNER-DEPRECATED",
        "Once runner versions below a minimum are deprecated (FakeControl."
        "deprecate_runner_versions_below), a runner's message poll (which names its version, "
        "runnerVersion=) is answered 403 'Runner version v<x> is deprecated and cannot receive "
        "messages.'; the runner exits (7 through run.sh when "
        "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1, else 0).",
        SourceKind.PUBLIC_ISSUE,
        "ARC #4601 and actions/runner #3366, #3486 (runner logs: GET .../message?...&"
        "runnerVersion=... failed. HTTP Status: Forbidden); ARC #4404 (exit code 7)",
    ),
    _assume(
        "A-RUNNER-LOST",
        "A runner connection not seen for runner_session_timeout (default 300 s) with no poll "
        "in flight is lost; its job completes as 'failed'.",
        "Real lost-runner timeouts are not public.",
    ),
    _assume(
        "A-JOB-REASSIGNED",
        "A job handed to a runner that closes its session before reporting the start goes "
        "back to its scale set's assigned jobs for another runner.",
        "The README says a job no runner picks up is re-assigned (up to 3 times); the real "
        "timeout and cap are not public, so neither is modelled.",
    ),
    _assume(
        "A-RUNNER-CREDENTIAL",
        "The JIT config carries a bearer credential in .credentials_rsaparams where the real "
        "runner keeps an RSA key for an OAuth exchange.",
        "Simplification of the runner's OAuth flow.",
    ),
    # --------------------------------------------------------------------- faults
    _spec(
        "S-FAULTS",
        "Fault injection: 5xx bursts, 429 and 503 with Retry-After, UTF-8 BOM on bodies, "
        "latency, dropped polls, stale statistics.",
        "§6, §6.1, §2.3, §2.6",
    ),
    _spec(
        "S-FAULT-LOST-RESPONSE",
        "Lost response: a matching request (any surface but /_fake) is handled in full — body "
        "read, state changed, answer formed — then the connection is cut with nothing sent. A "
        "client that repeats a non-idempotent call then meets its own first attempt (a second "
        "session: 409 conflict; a second JIT config for the name: AgentExists 409).",
        "§2.6 (POST/PATCH re-sent; a retried POST sessions after a lost response meets a 409), "
        "§4.1, §2 note on #7",
    ),
    _spec(
        "S-FAULT-INJECTED-ANSWER",
        "Injected answer: any status 200-599 with a raw body and content type in place of "
        "handling the request (no state change) — e.g. DeleteMessage answered 200 with a body, "
        "which a client must treat as an error.",
        "§4.3 (expect 204; anything else, even 200, is an error), §7 DeleteMessage checklist",
    ),
)


NOT_MODELLED: tuple[str, ...] = (
    "GET acquirablejobs (spec §2 #17, legacy client only) is not served (404).",
    "A job assigned but never picked up is not re-assigned after a timeout (only a runner that "
    "leaves before starting its job gives it back: A-JOB-REASSIGNED).",
    "JobAssigned always carries the real runnerRequestId (github.com was seen sending 0, §4.5).",
    "Hosted-style API hosts (api.github.com, api.<host>) are not served; only GHES-style URLs.",
    "The real runner broker protocol, runner updates and job logs are not modelled (a runner "
    "version is only compared with the deprecation minimum).",
)
"""Known gaps: behaviours of the real service the fake deliberately does not reproduce."""


def assumptions() -> list[LedgerEntry]:
    """Every behaviour of the fake that no source pins down."""
    return [entry for entry in LEDGER if entry.kind is SourceKind.ASSUMPTION]


def entry(key: str) -> LedgerEntry:
    return next(e for e in LEDGER if e.key == key)


def ledger_json() -> list[dict[str, Any]]:
    return [
        {"key": e.key, "behaviour": e.behaviour, "kind": e.kind.value, "source": e.source}
        for e in LEDGER
    ]
