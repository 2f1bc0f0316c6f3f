"""At start: are scaleset's CRDs installed, or ARC's older ones? (L8)

Helm installs a chart's CRDs once and never upgrades them, so a cluster moving from ARC keeps
ARC's schemas, and the API server silently prunes every field they lack — ``jobCompletion``,
``runnerStartedAt``, the five-way counts, the conditions — and scaleset would act on state it
can never store. So the controller reads the four installed CRDs first and refuses to run when
one is missing or lacks a field it writes, with one line naming them and the command that
installs the current ones. When it may not read CRDs (RBAC without ``get`` on
``customresourcedefinitions``) it says so and runs: the check is a safety net, not a gate on
permissions.
"""

from __future__ import annotations

from collections.abc import Sequence

from scaleset.api import KINDS
from scaleset.api.crds import installed_crd_gaps
from scaleset.kube.client import KubeClient
from scaleset.kube.errors import Forbidden, KubeError, NotFound, Unauthorized
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import CUSTOM_RESOURCE_DEFINITION
from scaleset.logs import get_logger

log = get_logger(__name__)

FIX_COMMAND = "scaleset crds | kubectl apply --server-side --force-conflicts -f -"
"""Installs (or upgrades) the four CRDs of this scaleset version."""
MAX_FIELDS_SHOWN = 6


def summarise(paths: Sequence[str]) -> list[str]:
    """Leaf paths folded to their first two segments (``status.jobCompletion.result`` →
    ``status.jobCompletion``), in first-seen order."""
    return list(dict.fromkeys(".".join(path.split(".")[:2]) for path in paths))


def describe(missing: Sequence[str], gaps: dict[str, list[str]]) -> str | None:
    """One line naming what is missing and how to fix it; None when nothing is."""
    parts = [f"{name} is not installed" for name in missing]
    for name, paths in gaps.items():
        fields = summarise(paths)
        shown = ", ".join(fields[:MAX_FIELDS_SHOWN])
        more = (
            f" (+{len(fields) - MAX_FIELDS_SHOWN} more)" if len(fields) > MAX_FIELDS_SHOWN else ""
        )
        parts.append(f"{name} lacks {shown}{more}")
    if not parts:
        return None
    return (
        "the installed actions.github.com CRDs are not scaleset's (ARC's or older): "
        + "; ".join(parts)
        + f". The API server would silently drop these fields. Install the current CRDs "
        f"(Helm never upgrades them): {FIX_COMMAND}"
    )


async def installed_crd_problem(client: KubeClient) -> str | None:
    """The refusal line, or None when the installed CRDs declare every field scaleset writes
    (or cannot be read: logged)."""
    missing: list[str] = []
    gaps: dict[str, list[str]] = {}
    for info in KINDS:
        try:
            crd = await client.get(CUSTOM_RESOURCE_DEFINITION, ObjectKey("", info.crd_name))
        except NotFound:
            missing.append(info.crd_name)
            continue
        except (Forbidden, Unauthorized) as error:
            log.warning(
                "cannot check the installed CRDs",
                error=f"{error.code}: grant get on customresourcedefinitions to verify them",
            )
            return None
        except KubeError as error:
            return f"cannot read the installed CRD {info.crd_name}: {error}"
        found = installed_crd_gaps(crd.raw)
        if found:
            gaps[info.crd_name] = found
    return describe(missing, gaps)
