"""EphemeralRunner: one single-use runner (one JIT config, one pod), owned by an
EphemeralRunnerSet.

ARC's fields plus the status that lifecycle.md needs:
``jobCompletion`` (L4), ``jobCompletionDeadline`` (L4), ``runnerStartedAt`` (L5) and
``conditions``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field

from scaleset.api import keys
from scaleset.api._lenient import ApiModel, CrdHint, KubeTime, PodTemplate
from scaleset.api.meta import Condition, ObjectMeta
from scaleset.api.shared import ProxyConfig, ResourceMeta, TLSConfig, VaultConfig

INT64 = CrdHint(format="int64")


class RunnerPhase(StrEnum):
    """Values of ``EphemeralRunner.status.phase``. Under L1 our controller writes only
    ``Pending`` and the terminal phases; only the listener writes ``Running`` (job started)."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    OUTDATED = "Outdated"


TERMINAL_PHASES: frozenset[str] = frozenset(
    {RunnerPhase.SUCCEEDED, RunnerPhase.FAILED, RunnerPhase.OUTDATED}
)
"""Phases a runner never leaves (L2: no resurrection)."""


class EphemeralRunnerSpec(ApiModel):
    """What the runner is: where it registers, with which credentials, and its pod template.

    ``metadata`` and ``spec`` are the inlined ``PodTemplateSpec`` (Go embeds it), kept raw.
    """

    github_config_url: Annotated[str, CrdHint(required=True)] = ""
    github_config_secret: Annotated[str, CrdHint(required=True)] = ""
    github_server_tls: TLSConfig | None = Field(None, alias="githubServerTLS")
    runner_scale_set_id: Annotated[int, CrdHint(required=True)] = Field(
        0, description="GitHub scale set id the JIT config is minted for."
    )
    proxy: ProxyConfig | None = None
    proxy_secret_ref: str = Field(
        "", description="Secret with http_proxy/https_proxy/no_proxy for the runner pod."
    )
    vault_config: VaultConfig | None = None
    ephemeral_runner_config_secret_metadata: ResourceMeta | None = None
    metadata: PodTemplate = Field(
        default_factory=dict, description="Runner pod metadata (from the PodTemplateSpec)."
    )
    spec: PodTemplate = Field(
        default_factory=dict, description="Runner pod spec (from the PodTemplateSpec)."
    )


class JobCompletion(ApiModel):
    """A JobCompleted message recorded by the listener on the runner it names (L4).

    The controller acts on it only when the identities match the runner's own status
    (runner id + name, and job id + workflow run id when the runner has job fields).
    ``finishTime`` is GitHub's and informational only (it can be zero, old or skewed).
    ``patchId`` lets the EphemeralRunnerSet controller tell a finished runner whose end the
    listener's current count already accounts for (its slot is free at once) from one the
    listener has not counted yet (its slot is held until that patch, ARC #4642).
    """

    result: str = Field("", description="GitHub's job result, e.g. succeeded, failed, canceled.")
    runner_id: int = Field(0, description="Runner id named by the message.")
    runner_name: str = Field("", description="Runner name named by the message.")
    job_id: str = Field("", description="Job id named by the message.")
    workflow_run_id: Annotated[int, INT64] = Field(
        0, description="Workflow run id named by the message."
    )
    finish_time: KubeTime | None = Field(None, description="GitHub's finish time (informational).")
    patch_id: int | None = Field(
        None,
        ge=1,
        description=(
            "The patchID of the listener's EphemeralRunnerSet patch that follows this record: "
            "the first count that accounts for this job's end (absent: unknown)."
        ),
    )


class EphemeralRunnerStatus(ApiModel):
    """Observed state of the runner.

    ARC's fields keep ARC's meaning, except that under L1 ``phase: Running`` means "the listener
    saw a job start", not "the pod runs". Our additions:

    - ``jobCompletion`` (L4): written by the listener on JobCompleted.
    - ``jobCompletionDeadline`` (L4): written by the controller the first time it observes a
      matching ``jobCompletion``: that moment (controller clock) plus the grace period. Stored so
      a controller restart neither resets nor skips the grace period. When it has passed and the
      runner pod still lives, the runner is ended.
    - ``runnerStartedAt`` (L5): written by the controller the first time it observes the runner
      container started, i.e. the pod's status for the container named ``runner`` shows
      ``state.running`` or ``state.terminated`` (or any ``lastState``), never only ``waiting``.
      It is the positive evidence that the runner used its JIT config: once set, the JIT config
      is never given to another pod (the JIT Secret is deleted; a lost or failed pod means the
      runner is replaced, not restarted). Unset means "never seen started", which allows a
      retry with the same JIT config only under the conditions of L5.
    - ``conditions``: e.g. the pod template was rejected.
    """

    ready: bool = Field(False, description="The runner pod's Ready condition.")
    phase: str = Field(
        "", description="Pending, Running (a job started), Succeeded, Failed or Outdated."
    )
    reason: str = ""
    message: str = ""
    runner_id: int = Field(0, description="GitHub runner id (from the JIT config).")
    runner_name: str = Field("", description="GitHub runner name (the object's name).")
    failures: dict[str, KubeTime] = Field(
        default_factory=dict, description="Pod failures that allowed a retry: pod UID to time."
    )
    job_request_id: Annotated[int, INT64] = 0
    job_id: str = ""
    job_repository_name: str = Field("", description="owner/repo of the job.")
    job_workflow_ref: str = ""
    workflow_run_id: Annotated[int, INT64] = 0
    job_display_name: str = ""
    job_completion: JobCompletion | None = Field(
        None, description="JobCompleted recorded by the listener (scaleset)."
    )
    job_completion_deadline: KubeTime | None = Field(
        None,
        description=(
            "When the controller ends the runner if it is still alive after its job completed "
            "(scaleset; controller clock)."
        ),
    )
    runner_started_at: KubeTime | None = Field(
        None,
        description=(
            "When the controller first saw the runner container started; once set the JIT "
            "config is never reused (scaleset)."
        ),
    )
    conditions: list[Condition] = Field(default_factory=list)

    @property
    def has_job(self) -> bool:
        """Whether the runner "has a job" as lifecycle.md defines it: ``jobId`` or
        ``jobRequestId`` is set (the listener recorded a JobStarted). A recorded
        ``jobCompletion`` alone does not count here; ``runner_state.classify`` still counts such
        a runner as busy."""
        return bool(self.job_id) or self.job_request_id != 0

    @property
    def is_terminal(self) -> bool:
        """Phase is Failed, Succeeded or Outdated."""
        return self.phase in TERMINAL_PHASES


class EphemeralRunner(ApiModel):
    """One runner (``actions.github.com/v1alpha1``, kind EphemeralRunner)."""

    api_version: str = keys.API_VERSION
    kind: Literal["EphemeralRunner"] = "EphemeralRunner"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: EphemeralRunnerSpec = Field(default_factory=EphemeralRunnerSpec)
    status: EphemeralRunnerStatus = Field(default_factory=EphemeralRunnerStatus)
