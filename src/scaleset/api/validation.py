"""``validate(obj)``: what is wrong with an object, as (field path, message) pairs (L8).

Parsing is lenient (a wrong type is set aside, not fatal); this is where it is reported, with
the semantic checks no schema expresses: min > max, warm windows (times, zones, overlaps), a
config URL that names no org/repo/enterprise, a missing credentials Secret, a runner pod
template whose ``restartPolicy`` is not ``Never`` (L5), an unsupported vault type. An empty list
means "valid".

Field paths use the JSON names: ``spec.maxRunners``, ``spec.runnerScaleSetLabels[2]``,
``spec.listenerMetrics.histograms[gha_job_startup_duration_seconds].buckets``. Messages never
contain credential values; they quote only small, non-secret values (numbers, a restart policy).

``refusals(obj, policy)``: what a valid AutoscalingRunnerSet or AutoscalingListener may still not
do in this cluster, by the controller's ``Policy`` (its flags): a ``githubConfigUrl`` over plain
http (the GitHub credentials would cross the network in clear text, to any host the URL names),
and listener template fields beyond ``scaleset.api.listener_template``'s allow-list. Each is a
``Refusal``: a ``Problem`` with its own condition and Event reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from scaleset.api import keys, listener_template, pods, warm_windows
from scaleset.api._lenient import ApiModel
from scaleset.api.autoscalinglistener import AutoscalingListener
from scaleset.api.autoscalingrunnerset import AutoscalingRunnerSet, WarmWindowSpec
from scaleset.api.config_url import InvalidConfigUrl, parse_config_url
from scaleset.api.ephemeralrunner import EphemeralRunner, EphemeralRunnerSpec
from scaleset.api.ephemeralrunnerset import EphemeralRunnerSet
from scaleset.api.resources import Resource
from scaleset.api.shared import MetricsConfig, ProxyConfig, TLSConfig, VaultConfig

SUPPORTED_VAULT_TYPES = frozenset({"azure_key_vault"})
MAX_SCALE_SET_NAME = 45
"""ARS name limit (the chart's): the listener name ``<name>-<8>-listener`` goes into a label
value, which holds at most 63 characters."""
MAX_SCALE_SET_LABEL = 255


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an object: where (JSON field path) and what."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


INVALID_SPEC = "InvalidSpec"
INSECURE_URL = "InsecureGitHubUrl"
LISTENER_TEMPLATE_REFUSED = "ListenerTemplateRefused"


@dataclass(frozen=True)
class Refusal(Problem):
    """A field this controller's ``Policy`` does not accept; ``reason`` is the condition's and
    the Event's."""

    reason: str


@dataclass(frozen=True)
class Policy:
    """What the cluster admin allows beyond a valid object (the controller's flags)."""

    allow_http_github_url: bool = False
    """``--allow-http-github-url``: accept ``http://`` config URLs (a test or a demo serving a
    fake GitHub; never the real one)."""
    allow_full_listener_template: bool = False
    """``--allow-full-listener-template``: merge every field of a listener template (ARC)."""


def refusals(obj: AutoscalingRunnerSet | AutoscalingListener, policy: Policy) -> list[Refusal]:
    """What ``policy`` refuses in ``obj`` (its URL, its listener template), in field order."""
    url = obj.spec.github_config_url
    if isinstance(obj, AutoscalingRunnerSet):
        template, template_path = obj.spec.listener_template, "spec.listenerTemplate"
    else:
        template, template_path = obj.spec.template, "spec.template"
    found: list[Refusal] = []
    if not policy.allow_http_github_url and _plain_http(url):
        found.append(
            Refusal(
                "spec.githubConfigUrl",
                "uses http://: the GitHub credentials of this namespace would cross the network "
                "in clear text, to whatever host the URL names; use https:// (a cluster admin may "
                "allow http for a test GitHub: the controller's --allow-http-github-url)",
                INSECURE_URL,
            )
        )
    if not policy.allow_full_listener_template:
        found.extend(
            Refusal(item.field, item.message, LISTENER_TEMPLATE_REFUSED)
            for item in listener_template.screen(template, template_path)
        )
    return found


def validate_under(
    obj: AutoscalingRunnerSet | AutoscalingListener, policy: Policy | None = None
) -> list[Problem]:
    """What ``validate`` finds, then what ``policy`` (default: nothing beyond the defaults
    allowed) refuses in fields not already reported."""
    problems = validate(obj)
    reported = {problem.field for problem in problems}
    problems += [
        refusal for refusal in refusals(obj, policy or Policy()) if refusal.field not in reported
    ]
    return problems


def condition_reason(problems: Sequence[Problem]) -> str:
    """The condition (and Event) reason for ``problems``: ``InvalidSpec`` when the spec itself
    is wrong; when it is valid but refused by the policy, the first refusal's own reason."""
    refused = [problem for problem in problems if isinstance(problem, Refusal)]
    if not refused or len(refused) < len(problems):
        return INVALID_SPEC
    return refused[0].reason


def _plain_http(url: str) -> bool:
    try:
        return parse_config_url(url).insecure
    except InvalidConfigUrl:
        return False  # ``validate`` reports it


def validate(obj: Resource) -> list[Problem]:
    """Every problem of ``obj``: wrong types first (in field order), then semantic checks. A
    field with the wrong type is reported once (not again as, say, "is required")."""
    problems = list(type_problems(obj))
    if isinstance(obj, AutoscalingRunnerSet):
        semantic = _autoscaling_runner_set(obj)
    elif isinstance(obj, EphemeralRunnerSet):
        semantic = _ephemeral_runner_set(obj)
    elif isinstance(obj, EphemeralRunner):
        semantic = _runner_spec(obj.spec, "spec")
    else:
        semantic = _autoscaling_listener(obj)
    reported = {problem.field for problem in problems}
    problems.extend(problem for problem in semantic if problem.field not in reported)
    return problems


def type_problems(model: ApiModel, path: str = "") -> Iterator[Problem]:
    """Fields anywhere in ``model`` whose value had the wrong type and was set aside."""
    for key, invalid in model.invalid_fields().items():
        where = "".join(f"[{part}]" for part in invalid.location)
        detail = f" (at {where})" if where else ""
        yield Problem(_join(path, key), f"wrong type: {invalid.problem}{detail}")
    for name, info in type(model).model_fields.items():
        child_path = _join(path, info.alias or name)
        yield from _nested_type_problems(getattr(model, name), child_path)


def _nested_type_problems(value: object, path: str) -> Iterator[Problem]:
    if isinstance(value, ApiModel):
        yield from type_problems(value, path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, ApiModel):
                yield from type_problems(item, f"{path}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, ApiModel):
                yield from type_problems(item, f"{path}[{key}]")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# --- per kind ----------------------------------------------------------------------------------


def _autoscaling_runner_set(ars: AutoscalingRunnerSet) -> Iterator[Problem]:
    spec = ars.spec
    if len(ars.metadata.name) > MAX_SCALE_SET_NAME:
        yield Problem(
            "metadata.name",
            f"longer than {MAX_SCALE_SET_NAME} characters: the listener name derived from it "
            "would not fit a label value",
        )
    yield from _config_url(spec.github_config_url, "spec.githubConfigUrl")
    yield from _config_secret(spec.github_config_secret, "spec.githubConfigSecret")
    yield from _min_max(spec.min_runners, spec.max_runners, "spec")
    yield from _warm_windows(spec.warm_windows, spec.max_runners, "spec.warmWindows")
    for index, label in enumerate(spec.runner_scale_set_labels):
        if not label or len(label) > MAX_SCALE_SET_LABEL:
            yield Problem(
                f"spec.runnerScaleSetLabels[{index}]",
                f"must be a non-empty string of at most {MAX_SCALE_SET_LABEL} characters",
            )
    yield from _proxy(spec.proxy, "spec.proxy")
    yield from _tls(spec.github_server_tls, "spec.githubServerTLS")
    yield from _vault(spec.vault_config, "spec.vaultConfig")
    yield from _metrics(spec.listener_metrics, "spec.listenerMetrics")
    yield from _runner_pod_template(spec.template, "spec.template")


def _ephemeral_runner_set(ers: EphemeralRunnerSet) -> Iterator[Problem]:
    if ers.spec.replicas is not None and ers.spec.replicas < 0:
        yield Problem("spec.replicas", f"must be 0 or more, got {ers.spec.replicas}")
    if ers.spec.patch_id < 0:
        yield Problem("spec.patchID", f"must be 0 or more, got {ers.spec.patch_id}")
    yield from _runner_spec(ers.spec.ephemeral_runner_spec, "spec.ephemeralRunnerSpec")


def _runner_spec(spec: EphemeralRunnerSpec, path: str) -> Iterator[Problem]:
    yield from _config_url(spec.github_config_url, f"{path}.githubConfigUrl")
    yield from _config_secret(spec.github_config_secret, f"{path}.githubConfigSecret")
    if spec.runner_scale_set_id <= 0:
        yield Problem(f"{path}.runnerScaleSetId", "must be a GitHub scale set id (1 or more)")
    yield from _proxy(spec.proxy, f"{path}.proxy")
    yield from _tls(spec.github_server_tls, f"{path}.githubServerTLS")
    yield from _vault(spec.vault_config, f"{path}.vaultConfig")
    yield from _runner_pod_template({"spec": spec.spec}, path)


def _autoscaling_listener(listener: AutoscalingListener) -> Iterator[Problem]:
    spec = listener.spec
    yield from _config_url(spec.github_config_url, "spec.githubConfigUrl")
    yield from _config_secret(spec.github_config_secret, "spec.githubConfigSecret")
    if spec.runner_scale_set_id <= 0:
        yield Problem("spec.runnerScaleSetId", "must be a GitHub scale set id (1 or more)")
    for field, value in (
        ("autoscalingRunnerSetNamespace", spec.autoscaling_runner_set_namespace),
        ("autoscalingRunnerSetName", spec.autoscaling_runner_set_name),
        ("ephemeralRunnerSetName", spec.ephemeral_runner_set_name),
        ("image", spec.image),
    ):
        if not value:
            yield Problem(f"spec.{field}", "is required")
    yield from _min_max(spec.min_runners, spec.max_runners, "spec")
    yield from _warm_windows(spec.warm_windows, spec.max_runners, "spec.warmWindows")
    yield from _proxy(spec.proxy, "spec.proxy")
    yield from _tls(spec.github_server_tls, "spec.githubServerTLS")
    yield from _vault(spec.vault_config, "spec.vaultConfig")
    yield from _metrics(spec.metrics, "spec.metrics")


# --- shared checks -----------------------------------------------------------------------------


def _config_url(url: str, path: str) -> Iterator[Problem]:
    if not url:
        yield Problem(path, "is required")
        return
    try:
        parse_config_url(url)
    except InvalidConfigUrl as error:
        yield Problem(path, f"invalid GitHub config URL: {error.reason}")


def _config_secret(name: str, path: str) -> Iterator[Problem]:
    if not name:
        yield Problem(path, "is required (the Secret with the GitHub credentials)")


def _min_max(minimum: int | None, maximum: int | None, path: str) -> Iterator[Problem]:
    if minimum is not None and minimum < 0:
        yield Problem(f"{path}.minRunners", f"must be 0 or more, got {minimum}")
    if maximum is not None and maximum < 0:
        yield Problem(f"{path}.maxRunners", f"must be 0 or more, got {maximum}")
    if minimum is not None and maximum is not None and 0 <= maximum < minimum:
        yield Problem(
            f"{path}.minRunners",
            f"must not be greater than {path}.maxRunners ({minimum} > {maximum})",
        )


def _warm_windows(
    specs: list[WarmWindowSpec] | None, max_runners: int | None, path: str
) -> Iterator[Problem]:
    """Each window's fields, then overlaps between the valid ones (scheduled warm capacity)."""
    if specs is None:
        return
    windows, problems = warm_windows.parse(specs, path, max_runners=max_runners)
    overlap = warm_windows.overlap_problem(windows, path)
    for problem in [*problems, *([overlap] if overlap is not None else [])]:
        yield Problem(problem.field, problem.message)


def _proxy(proxy: ProxyConfig | None, path: str) -> Iterator[Problem]:
    if proxy is None:
        return
    for name, server in (("http", proxy.http), ("https", proxy.https)):
        if server is not None and not server.url:
            yield Problem(f"{path}.{name}.url", "is required when the proxy is set")


def _tls(tls: TLSConfig | None, path: str) -> Iterator[Problem]:
    if tls is None:
        return
    source = tls.certificate_from
    if source is None:
        yield Problem(f"{path}.certificateFrom", "is required")
        return
    ref = source.config_map_key_ref
    if ref is None:
        yield Problem(f"{path}.certificateFrom.configMapKeyRef", "is required")
        return
    for field, value in (("name", ref.name), ("key", ref.key)):
        if not value:
            yield Problem(f"{path}.certificateFrom.configMapKeyRef.{field}", "is required")


def _vault(vault: VaultConfig | None, path: str) -> Iterator[Problem]:
    if vault is None:
        return
    if vault.type not in SUPPORTED_VAULT_TYPES:
        supported = ", ".join(sorted(SUPPORTED_VAULT_TYPES))
        yield Problem(f"{path}.type", f"unsupported vault type (supported: {supported})")
        return
    azure = vault.azure_key_vault
    if azure is None:
        yield Problem(f"{path}.azureKeyVault", "is required for type azure_key_vault")
        return
    for field, value in (
        ("url", azure.url),
        ("tenantId", azure.tenant_id),
        ("clientId", azure.client_id),
        ("certificatePath", azure.certificate_path),
    ):
        if not value:
            yield Problem(f"{path}.azureKeyVault.{field}", "is required")
    yield from _proxy(vault.proxy, f"{path}.proxy")


def _metrics(metrics: MetricsConfig | None, path: str) -> Iterator[Problem]:
    if metrics is None:
        return
    for name, histogram in metrics.histograms.items():
        if any(later <= earlier for earlier, later in pairwise(histogram.buckets)):
            yield Problem(f"{path}.histograms[{name}].buckets", "must be strictly increasing")


def _runner_pod_template(template: Mapping[str, Any], path: str) -> Iterator[Problem]:
    """The runner pod template at ``path`` (its pod spec is ``path.spec``)."""
    spec = pods.pod_spec(template)
    if spec is None:
        yield Problem(f"{path}.spec", "the runner pod template needs a pod spec")
        return
    if pods.find_container(spec, keys.RUNNER_CONTAINER) is None:
        yield Problem(
            f"{path}.spec.containers",
            f'needs a container named "{keys.RUNNER_CONTAINER}" (it gets the JIT config)',
        )
    policy = pods.restart_policy(spec)
    if policy is not None and policy != "Never":
        shown = repr(policy) if isinstance(policy, str) and len(policy) <= 32 else "another value"
        yield Problem(
            f"{path}.spec.restartPolicy",
            f"must be Never (or unset), got {shown}: a restarted runner would reuse its "
            "single-use JIT config",
        )
