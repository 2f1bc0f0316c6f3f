"""The four CustomResourceDefinitions, generated from the models: one source of truth.

Each CRD is ``apiextensions.k8s.io/v1``, group ``actions.github.com``, version ``v1alpha1``
(served, storage), namespaced, with the status subresource and no short names. The
``openAPIV3Schema`` is derived from the pydantic models field by field, so a field added to a
model is declared in the CRD (the API server prunes undeclared fields, which would silently drop
our status additions) — regenerate ``deploy/crds`` with ``scaleset crds --output-dir deploy/crds``;
a test fails while the checked-in files differ.

Schema choices:

- Superset of ARC's schemas: same names, types, ``minimum``, ``required`` lists and defaults for
  every ARC field, so any object ARC's CRDs accept, ours accept.
- Pod templates (ARS ``template`` and ``listenerTemplate``, AL ``template``, the ER spec's inlined
  pod ``metadata`` and ``spec``) are ``type: object`` with ``x-kubernetes-preserve-unknown-fields:
  true``. That node is structural (it has a type), accepts every PodTemplateSpec of every
  Kubernetes version — including native sidecars (init containers with ``restartPolicy: Always``)
  and fields newer than the API server — and keeps every field instead of pruning the ones a
  snapshot of the core types did not know. ARC instead inlines a frozen copy of the core types
  (≈16k lines per CRD, near the size limit of ``kubectl apply``'s annotation). The cost: the API
  server does not type-check pod templates inside our objects; the pod create call does, and the
  controllers report a rejected template (``InvalidPod``) on the object.
- No CEL (``x-kubernetes-validations``) and nothing newer than kube-apiserver 1.20 accepts.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml

from scaleset.api import keys
from scaleset.api._lenient import ApiModel, CrdHint
from scaleset.api.resources import BY_KIND, KINDS, KindInfo
from scaleset.api.structural import declared_leaf_paths, is_declared

CRD_API_VERSION = "apiextensions.k8s.io/v1"

_API_VERSION_DESCRIPTION = (
    "APIVersion defines the versioned schema of this representation of an object."
)
_KIND_DESCRIPTION = "Kind is a string value representing the REST resource this object represents."


def _column(
    name: str, json_path: str, column_type: str, priority: int = 0, description: str = ""
) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "jsonPath": json_path, "type": column_type}
    if priority:
        column["priority"] = priority
    if description:
        column["description"] = description
    return column


def _runner_count_columns() -> list[dict[str, Any]]:
    """The runners-by-state columns the EphemeralRunnerSet prints: the L0 states by default;
    ARC's Pending/Running at priority 1 (``-o wide``), since Running means busy (L1) and Pending
    holds starting and idle runners alike."""
    return [
        _column("Starting", ".status.startingEphemeralRunners", "integer"),
        _column("Idle", ".status.idleEphemeralRunners", "integer"),
        _column("Busy", ".status.busyEphemeralRunners", "integer"),
        _column("Terminal", ".status.terminalEphemeralRunners", "integer"),
        _column("Deleting", ".status.deletingEphemeralRunners", "integer"),
        _column("Pending Runners", ".status.pendingEphemeralRunners", "integer", priority=1),
        _column("Running Runners", ".status.runningEphemeralRunners", "integer", priority=1),
    ]


PRINTER_COLUMNS: dict[str, list[dict[str, Any]]] = {
    # no runner counts: they are the EphemeralRunnerSet's (``kubectl get ephemeralrunnersets``);
    # the scale set's status no longer copies them (two writes per job)
    "AutoscalingRunnerSet": [
        _column("Minimum Runners", ".spec.minRunners", "integer"),
        _column("Maximum Runners", ".spec.maxRunners", "integer"),
        _column("Phase", ".status.phase", "string"),
    ],
    "EphemeralRunnerSet": [
        _column("DesiredReplicas", ".spec.replicas", "integer"),
        _column("CurrentReplicas", ".status.currentReplicas", "integer"),
        *_runner_count_columns(),
        _column("Phase", ".status.phase", "string"),
    ],
    "EphemeralRunner": [
        _column("GitHub Config URL", ".spec.githubConfigUrl", "string"),
        _column("RunnerId", ".status.runnerId", "number"),
        _column("Phase", ".status.phase", "string"),
        _column(
            "Started",
            ".status.runnerStartedAt",
            "date",
            description="When the runner container started: blank while the runner is starting",
        ),
        _column("JobRepository", ".status.jobRepositoryName", "string"),
        _column("JobWorkflowRef", ".status.jobWorkflowRef", "string"),
        _column("WorkflowRunId", ".status.workflowRunId", "number"),
        _column("JobDisplayName", ".status.jobDisplayName", "string"),
        _column("JobId", ".status.jobId", "string"),
        _column("Message", ".status.message", "string"),
        _column("JobResult", ".status.jobCompletion.result", "string", priority=1),
        _column("Age", ".metadata.creationTimestamp", "date"),
    ],
    "AutoscalingListener": [
        _column("GitHub Configure URL", ".spec.githubConfigUrl", "string"),
        _column("AutoscalingRunnerSet Namespace", ".spec.autoscalingRunnerSetNamespace", "string"),
        _column("AutoscalingRunnerSet Name", ".spec.autoscalingRunnerSetName", "string"),
    ],
}
"""ARC's printer columns (its ``Phase`` column, which ARC 0.15 renamed from ``State``), minus
the one that points at a field ARC never had (``finishedEphemeralRunners``); the runner sets
show the L0 states first, ARC's Pending/Running at priority 1; an EphemeralRunner shows when
its runner started, and its job result at priority 1."""


# --- schema from models ------------------------------------------------------------------------


def _summary(model: type[ApiModel]) -> str:
    doc = inspect.getdoc(model) or ""
    first = doc.split("\n\n", 1)[0]
    return " ".join(first.replace("``", "").split())


def _apply_hints(node: dict[str, Any], hints: list[CrdHint]) -> dict[str, Any]:
    for hint in hints:
        if hint.preserve_unknown:
            node = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        if hint.minimum is not None:
            node["minimum"] = hint.minimum
        if hint.format is not None:
            node["format"] = hint.format
        node.update(dict(hint.extra))
    return node


def schema_for_type(annotation: Any) -> dict[str, Any]:
    """The OpenAPI schema node for one Python field type (see the module docstring)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *metadata = get_args(annotation)
        hints = [item for item in metadata if isinstance(item, CrdHint)]
        if any(hint.preserve_unknown for hint in hints):
            return _apply_hints({}, hints)
        return _apply_hints(schema_for_type(base), hints)
    if origin in (Union, types.UnionType):
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        if set(members) == {int, float}:
            return {"type": "number"}
        if len(members) == 1:
            return schema_for_type(members[0])
        raise TypeError(f"no schema for union {annotation!r}")
    if origin is Literal:
        return {"type": "string"}
    if origin is list:
        (item,) = get_args(annotation)
        return {"type": "array", "items": schema_for_type(item)}
    if origin is dict:
        key, value = get_args(annotation)
        if key is not str or value is Any:
            raise TypeError(f"{annotation!r}: mark raw JSON with CrdHint(preserve_unknown=True)")
        return {"type": "object", "additionalProperties": schema_for_type(value)}
    simple = {str: "string", bool: "boolean", int: "integer", float: "number", datetime: "string"}
    if annotation in simple:
        return {"type": simple[annotation]}
    if isinstance(annotation, type) and issubclass(annotation, ApiModel):
        return schema_for_model(annotation)
    raise TypeError(f"no schema for {annotation!r}")


def schema_for_model(model: type[ApiModel]) -> dict[str, Any]:
    """The object schema of a model: its fields by JSON name, ``required`` from ``CrdHint``."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, info in model.model_fields.items():
        alias = info.alias or name
        hints = [item for item in info.metadata if isinstance(item, CrdHint)]
        if any(hint.preserve_unknown for hint in hints):
            node = _apply_hints({}, hints)
        else:
            node = _apply_hints(schema_for_type(info.annotation), hints)
        description = info.description
        if description is None:
            field_type = _model_of(info.annotation)
            description = _summary(field_type) if field_type else None
        if description:
            node["description"] = description
        properties[alias] = node
        if any(hint.required for hint in hints):
            required.append(alias)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = sorted(required)
    return schema


def _model_of(annotation: Any) -> type[ApiModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, ApiModel):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(members) == 1:
            return _model_of(members[0])
    return None


def object_schema(info: KindInfo) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one kind. ``metadata`` is left to the API server (structural
    schemas may only constrain its name)."""
    fields = info.model.model_fields
    spec_model = _model_of(fields["spec"].annotation)
    status_model = _model_of(fields["status"].annotation)
    if spec_model is None or status_model is None:
        raise TypeError(f"{info.kind}: spec and status must be models")
    spec = schema_for_model(spec_model)
    spec["description"] = _summary(spec_model)
    status = schema_for_model(status_model)
    status["description"] = _summary(status_model)
    return {
        "description": _summary(info.model),
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "description": _API_VERSION_DESCRIPTION},
            "kind": {"type": "string", "description": _KIND_DESCRIPTION},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }


def crd(info: KindInfo) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind, as a JSON object."""
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": "CustomResourceDefinition",
        "metadata": {"name": info.crd_name},
        "spec": {
            "group": keys.GROUP,
            "names": {
                "kind": info.kind,
                "listKind": info.list_kind,
                "plural": info.plural,
                "singular": info.singular,
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": keys.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": PRINTER_COLUMNS[info.kind],
                    "schema": {"openAPIV3Schema": object_schema(info)},
                }
            ],
        },
    }


def all_crds() -> list[dict[str, Any]]:
    """The four CRDs, in file-name order."""
    return [crd(info) for info in KINDS]


# --- YAML --------------------------------------------------------------------------------------


def file_name(info: KindInfo) -> str:
    """``actions.github.com_<plural>.yaml``, as ARC names its CRD files."""
    return f"{keys.GROUP}_{info.plural}.yaml"


def render(document: Mapping[str, Any]) -> str:
    """One YAML document (keys sorted, like controller-gen), starting with ``---``."""
    body = yaml.safe_dump(
        dict(document), sort_keys=True, default_flow_style=False, width=100, allow_unicode=True
    )
    return f"---\n{body}"


def render_files() -> dict[str, str]:
    """File name → YAML text, for ``deploy/crds``."""
    return {file_name(info): render(crd(info)) for info in KINDS}


def render_stream() -> str:
    """All four CRDs as one YAML stream: the concatenation of ``render_files()``."""
    return "".join(render_files().values())


def write_files(directory: Path) -> list[Path]:
    """Write one file per CRD into ``directory`` (created if missing); return the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_files().items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


# --- installed CRDs ----------------------------------------------------------------------------


def installed_crd_gaps(installed: Mapping[str, Any]) -> list[str]:
    """Fields our schema declares that an installed CRD does not (e.g. ARC's CRDs lack
    ``status.jobCompletion``): the API server would silently prune what we write there (L8).
    Returns field paths like ``status.runnerStartedAt``; empty means the CRD is current."""
    names = installed.get("spec", {}).get("names", {})
    info = BY_KIND.get(names.get("kind", "")) if isinstance(names, Mapping) else None
    if info is None:
        return ["spec.names.kind"]
    versions = installed.get("spec", {}).get("versions", [])
    schema: Any = None
    for version in versions if isinstance(versions, list) else []:
        if isinstance(version, Mapping) and version.get("name") == keys.VERSION:
            schema = version.get("schema", {}).get("openAPIV3Schema")
    if not isinstance(schema, Mapping):
        return [f"spec.versions[{keys.VERSION}].schema.openAPIV3Schema"]
    ours = object_schema(info)
    return [path for path in declared_leaf_paths(ours) if not is_declared(schema, path)]
