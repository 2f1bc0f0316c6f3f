"""Every label, annotation, finalizer and Secret key string, in one place.

The strings are ARC's, verbatim; a drop-in replacement must keep
them so existing objects are recognised. Grouped by what carries them. scaleset's own keys (under
``scaleset.dev/``) are here too, and only here: each is a contract between two of our processes,
or between our chart and our controller.
"""

from __future__ import annotations

from typing import Final

# --- API group ---------------------------------------------------------------------------------
GROUP: Final = "actions.github.com"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

# --- Finalizers --------------------------------------------------------------------------------
AUTOSCALING_RUNNER_SET_FINALIZER: Final = "autoscalingrunnerset.actions.github.com/finalizer"
EPHEMERAL_RUNNER_SET_FINALIZER: Final = "ephemeralrunnerset.actions.github.com/finalizer"
EPHEMERAL_RUNNER_FINALIZER: Final = "ephemeralrunner.actions.github.com/finalizer"
"""On EphemeralRunners: resource cleanup (pod, JIT Secret). ARC 0.14.2 also put this string on
EphemeralRunnerSets; see ``LEGACY_EPHEMERAL_RUNNER_SET_FINALIZER``."""
LEGACY_EPHEMERAL_RUNNER_SET_FINALIZER: Final = EPHEMERAL_RUNNER_FINALIZER
"""The finalizer ARC 0.14.2 put on EphemeralRunnerSets (HEAD renamed it without migration)."""
EPHEMERAL_RUNNER_REGISTRATION_FINALIZER: Final = (
    "ephemeralrunner.actions.github.com/runner-registration-finalizer"
)
AUTOSCALING_LISTENER_FINALIZER: Final = "autoscalinglistener.actions.github.com/finalizer"
CLEANUP_PROTECTION_FINALIZER: Final = "actions.github.com/cleanup-protection"
"""Set by the chart on its objects; removed by the controller at the end of ARS deletion."""

# --- Annotations -------------------------------------------------------------------------------
RUNNER_SCALE_SET_ID_ANNOTATION: Final = "runner-scale-set-id"
"""GitHub scale set id on the AutoscalingRunnerSet. Note: no prefix."""
RUNNER_SCALE_SET_NAME_ANNOTATION: Final = "actions.github.com/runner-scale-set-name"
RUNNER_GROUP_NAME_ANNOTATION: Final = "actions.github.com/runner-group-name"
INTEGRITY_HASH_ANNOTATION: Final = "actions.github.com/integrity-hash"
PATCH_ID_ANNOTATION: Final = "actions.github.com/patch-id"
"""On EphemeralRunners: the EphemeralRunnerSet ``spec.patchID`` they were created for."""
VALUES_HASH_ANNOTATION: Final = "actions.github.com/values-hash"
"""Set by the chart on the AutoscalingRunnerSet (sha256 of the values, 63 chars)."""
LEGACY_CHANGE_HASH_ANNOTATION: Final = "actions.github.com/change-hash"
"""ARC 0.14.2's AutoscalingRunnerSet hash."""
LEGACY_RUNNER_SPEC_HASH_ANNOTATION: Final = "actions.github.com/runner-spec-hash"
"""ARC 0.14.2's EphemeralRunnerSet / listener hash."""

CLEANUP_GITHUB_SECRET_NAME_ANNOTATION: Final = "actions.github.com/cleanup-github-secret-name"  # noqa: S105
CLEANUP_MANAGER_ROLE_BINDING_ANNOTATION: Final = "actions.github.com/cleanup-manager-role-binding"
CLEANUP_MANAGER_ROLE_NAME_ANNOTATION: Final = "actions.github.com/cleanup-manager-role-name"
CLEANUP_KUBERNETES_MODE_ROLE_BINDING_NAME_ANNOTATION: Final = (
    "actions.github.com/cleanup-kubernetes-mode-role-binding-name"
)
CLEANUP_KUBERNETES_MODE_ROLE_NAME_ANNOTATION: Final = (
    "actions.github.com/cleanup-kubernetes-mode-role-name"
)
CLEANUP_KUBERNETES_MODE_SERVICE_ACCOUNT_NAME_ANNOTATION: Final = (
    "actions.github.com/cleanup-kubernetes-mode-service-account-name"
)
CLEANUP_NO_PERMISSION_SERVICE_ACCOUNT_NAME_ANNOTATION: Final = (
    "actions.github.com/cleanup-no-permission-service-account-name"
)
CLEANUP_ANNOTATIONS_IN_ORDER: Final = (
    CLEANUP_KUBERNETES_MODE_ROLE_BINDING_NAME_ANNOTATION,
    CLEANUP_KUBERNETES_MODE_ROLE_NAME_ANNOTATION,
    CLEANUP_KUBERNETES_MODE_SERVICE_ACCOUNT_NAME_ANNOTATION,
    CLEANUP_NO_PERMISSION_SERVICE_ACCOUNT_NAME_ANNOTATION,
    CLEANUP_GITHUB_SECRET_NAME_ANNOTATION,
    CLEANUP_MANAGER_ROLE_BINDING_ANNOTATION,
    CLEANUP_MANAGER_ROLE_NAME_ANNOTATION,
)
"""The order in which ARC removes ``cleanup-protection`` from the chart's objects."""

# --- scaleset's own keys ------------------------------------------------------------------------
OWN_KEY_PREFIX: Final = "scaleset.dev/"
"""The prefix of every key below. Such annotations describe the object that carries them (a
digest of what we wrote, a process's state), so they are never copied onto the objects made
from it (an EphemeralRunnerSet's are not copied onto its runners)."""

SPEC_HASH_ANNOTATION: Final = "scaleset.dev/spec-hash"
"""On the EphemeralRunnerSet and the AutoscalingListener: a digest of what the
AutoscalingRunnerSet controller last wrote into them (spec parts, labels, annotations). It is
scaleset's own key: ARC's ``actions.github.com/integrity-hash`` (a Go-specific digest) is neither
read nor written, so neither a takeover from ARC nor a rollback to it forces a spec change."""

IGNORED_VALUES_ANNOTATION: Final = "scaleset.dev/ignored-values"
"""On the AutoscalingRunnerSet, set by the runner-set chart: the values it ignored, as JSON
(``[{"key": ..., "why": ...}]``; absent when none). Helm shows them only in its install notes,
which Argo CD and Flux never show; the AutoscalingRunnerSet controller reports them in the
``ValuesIgnored`` condition and a Warning Event."""

LISTENER_STATE_ANNOTATION: Final = "scaleset.dev/listener-state"
"""On the EphemeralRunnerSet: the listener's state (``scaleset.api.listener_state``, JSON), written
by the listener and read by it after a restart and by the registration pass (L6, L7)."""

LISTENER_POD_HASH_ANNOTATION: Final = "scaleset.dev/listener-pod-hash"
"""On the listener pod: a digest of its spec and of the contents of the Secrets it mounts; the
AutoscalingListener controller replaces the pod when it changes."""

OFFLINE_SINCE_ANNOTATION: Final = "scaleset.dev/offline-since"
"""On an EphemeralRunner: when a registration pass first saw it offline (RFC 3339), so a
controller restart neither resets nor skips the offline bound (L6)."""

JOB_REPOSITORY_ANNOTATION: Final = "scaleset.dev/job-repository"
"""On runner pods, from the runner's ``status.jobRepositoryName`` (``owner/repo``)."""
JOB_WORKFLOW_REF_ANNOTATION: Final = "scaleset.dev/job-workflow-ref"
"""On runner pods, from ``status.jobWorkflowRef``."""
JOB_DISPLAY_NAME_ANNOTATION: Final = "scaleset.dev/job-display-name"
"""On runner pods, from ``status.jobDisplayName``."""
WORKFLOW_RUN_ID_ANNOTATION: Final = "scaleset.dev/workflow-run-id"
"""On runner pods, from ``status.workflowRunId``."""
JOB_ID_ANNOTATION: Final = "scaleset.dev/job-id"
"""On runner pods, from ``status.jobId``."""
JOB_REQUEST_ID_ANNOTATION: Final = "scaleset.dev/job-request-id"
"""On runner pods, from ``status.jobRequestId``."""
JOB_ANNOTATIONS: Final = (
    JOB_REPOSITORY_ANNOTATION,
    JOB_WORKFLOW_REF_ANNOTATION,
    JOB_DISPLAY_NAME_ANNOTATION,
    WORKFLOW_RUN_ID_ANNOTATION,
    JOB_ID_ANNOTATION,
    JOB_REQUEST_ID_ANNOTATION,
)
"""The job a runner pod runs: copied once by the EphemeralRunner controller from the job fields
the listener records on the runner at JobStarted (ARC keeps them on the EphemeralRunner only),
so that the pod itself — ``kubectl describe pod``, log shippers and cost tools reading pod
metadata — names the repository, workflow, job and run. Only the fields the runner has are
written. scaleset's own domain: ``actions.github.com/`` is ARC's and GitHub's, where a later ARC
could give one of these names another meaning; nothing of ARC reads them."""

# --- Labels ------------------------------------------------------------------------------------
PART_OF_LABEL: Final = "app.kubernetes.io/part-of"
COMPONENT_LABEL: Final = "app.kubernetes.io/component"
VERSION_LABEL: Final = "app.kubernetes.io/version"
"""On the AutoscalingRunnerSet: the chart's app version (ARC's version gate reads it)."""
NAME_LABEL: Final = "app.kubernetes.io/name"
INSTANCE_LABEL: Final = "app.kubernetes.io/instance"
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
OS_LABEL: Final = "kubernetes.io/os"

SCALE_SET_NAME_LABEL: Final = "actions.github.com/scale-set-name"
SCALE_SET_NAMESPACE_LABEL: Final = "actions.github.com/scale-set-namespace"
ENTERPRISE_LABEL: Final = "actions.github.com/enterprise"
ORGANIZATION_LABEL: Final = "actions.github.com/organization"
REPOSITORY_LABEL: Final = "actions.github.com/repository"
GITHUB_URL_LABELS: Final = (ENTERPRISE_LABEL, ORGANIZATION_LABEL, REPOSITORY_LABEL)

LISTENER_NAME_LABEL: Final = "auto-scaling-listener-name"
LISTENER_NAMESPACE_LABEL: Final = "auto-scaling-listener-namespace"
EPHEMERAL_RUNNER_LABEL: Final = "actions-ephemeral-runner"
"""On runner pods, value ``"True"``; watch runner pods with this selector."""
EPHEMERAL_RUNNER_LABEL_VALUE: Final = "True"
RUNNER_POD_SELECTOR: Final = f"{EPHEMERAL_RUNNER_LABEL}={EPHEMERAL_RUNNER_LABEL_VALUE}"
"""The label selector of runner pods: the controllers that watch them share one cache by it."""
RUNNER_POD_LABEL: Final = "runner-pod"
"""Kubernetes container mode: job pods and secrets created for runner ``<value>``."""
POD_TEMPLATE_HASH_LABEL: Final = "pod-template-hash"
RUNNER_TEMPLATE_HASH_LABEL: Final = "runner-template-hash"

PART_OF_VALUE: Final = "gha-runner-scale-set"
"""``app.kubernetes.io/part-of`` on objects the controller creates."""
CHART_PART_OF_VALUE: Final = "gha-rs"
"""``app.kubernetes.io/part-of`` the scale-set chart puts on the AutoscalingRunnerSet."""
CONTROLLER_PART_OF_VALUE: Final = "gha-rs-controller"
"""``app.kubernetes.io/part-of`` on the controller Deployment (the chart looks it up)."""
COMPONENT_AUTOSCALING_RUNNER_SET: Final = "autoscaling-runner-set"
COMPONENT_RUNNER_SET: Final = "runner-set"
COMPONENT_RUNNER: Final = "runner"
COMPONENT_LISTENER: Final = "runner-scale-set-listener"
COMPONENT_CONTROLLER_MANAGER: Final = "controller-manager"

CONTROLLER_SERVICE_ACCOUNT_NAME_LABEL: Final = "actions.github.com/controller-service-account-name"
CONTROLLER_SERVICE_ACCOUNT_NAMESPACE_LABEL: Final = (
    "actions.github.com/controller-service-account-namespace"
)
CONTROLLER_WATCH_SINGLE_NAMESPACE_LABEL: Final = (
    "actions.github.com/controller-watch-single-namespace"
)

# --- Containers, Secrets, environment -----------------------------------------------------------
RUNNER_CONTAINER: Final = "runner"
"""The container in the runner pod template that gets the JIT config."""
LISTENER_CONTAINER: Final = "listener"

JIT_TOKEN_KEY: Final = "jitToken"  # noqa: S105 (a key name, not a secret)
JIT_RUNNER_NAME_KEY: Final = "runnerName"
JIT_RUNNER_ID_KEY: Final = "runnerId"
JIT_SCALE_SET_ID_KEY: Final = "scaleSetId"
LISTENER_CONFIG_KEY: Final = "config.json"
PROXY_HTTP_KEY: Final = "http_proxy"
PROXY_HTTPS_KEY: Final = "https_proxy"
PROXY_NO_PROXY_KEY: Final = "no_proxy"
PROXY_CREDENTIAL_USERNAME_KEY: Final = "username"
PROXY_CREDENTIAL_PASSWORD_KEY: Final = "password"  # noqa: S105 (a key name)

RUNNER_JIT_CONFIG_ENV: Final = "ACTIONS_RUNNER_INPUT_JITCONFIG"
RUNNER_EXTRA_USER_AGENT_ENV: Final = "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT"
RUNNER_DEPRECATED_EXIT_CODE_ENV: Final = "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE"
RUNNER_CONTAINER_HOOKS_ENV: Final = "ACTIONS_RUNNER_CONTAINER_HOOKS"
RUNNER_DEPRECATED_EXIT_CODE: Final = 7
"""The runner's exit code for "runner version deprecated" (ER phase Outdated)."""

# --- Status reasons ARC writes -----------------------------------------------------------------
REASON_INVALID_POD: Final = "InvalidPod"
REASON_OUTDATED: Final = "Outdated"
REASON_TOO_MANY_POD_FAILURES: Final = "TooManyPodFailures"
