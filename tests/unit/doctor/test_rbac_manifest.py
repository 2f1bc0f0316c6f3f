"""``deploy/rbac/doctor-clusterrole.yaml`` without a server: one read-only ClusterRole whose CRD
grant names exactly our four CRDs (the real authorizer test is tests/integration/doctor/
test_rbac.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from scaleset.api import KINDS

MANIFEST = Path(__file__).resolve().parents[3] / "deploy" / "rbac" / "doctor-clusterrole.yaml"


def test_one_read_only_cluster_role() -> None:
    documents = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    assert [d["kind"] for d in documents] == ["ClusterRole"]
    verbs = {verb for rule in documents[0]["rules"] for verb in rule["verbs"]}
    assert verbs <= {"get", "list"}


def test_the_crd_grant_names_our_four_crds() -> None:
    [role] = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    [crds] = [r for r in role["rules"] if "customresourcedefinitions" in r["resources"]]
    assert set(crds["resourceNames"]) == {info.crd_name for info in KINDS}
