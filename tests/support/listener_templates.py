"""Hypothesis strategies for listener templates made only of the parts a scale set's author may
set (``scaleset.api.listener_template``): the allow-list's tests and the listener pod's."""

from __future__ import annotations

from hypothesis import strategies as st

NAMES = st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=8)
QUANTITY = st.sampled_from(["100m", "1", "256Mi", "1Gi", 2])
RESOURCES = st.fixed_dictionaries(
    {},
    optional={
        "limits": st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITY, max_size=2),
        "requests": st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITY, max_size=2),
    },
)
PROFILE = st.one_of(
    st.just({"type": "RuntimeDefault"}),
    st.builds(lambda name: {"type": "Localhost", "localhostProfile": name}, NAMES),
)
UID = st.integers(min_value=1, max_value=2**31 - 1)
POD_SECURITY = st.fixed_dictionaries(
    {},
    optional={
        "runAsNonRoot": st.just(True),
        "runAsUser": UID,
        "runAsGroup": UID,
        "seccompProfile": PROFILE,
        "appArmorProfile": PROFILE,
    },
)
CONTAINER_SECURITY = st.fixed_dictionaries(
    {},
    optional={
        "runAsNonRoot": st.just(True),
        "runAsUser": UID,
        "runAsGroup": UID,
        "readOnlyRootFilesystem": st.just(True),
        "allowPrivilegeEscalation": st.just(False),
        "privileged": st.just(False),
        "capabilities": st.builds(
            lambda drop: {"drop": ["ALL", *drop]}, st.lists(st.sampled_from(["NET_RAW"]))
        ),
        "seccompProfile": PROFILE,
        "appArmorProfile": PROFILE,
    },
)
ENV = st.lists(
    st.one_of(
        st.builds(lambda n, v: {"name": n, "value": v}, NAMES, st.text(max_size=10)),
        st.builds(
            lambda n: {"name": n, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            NAMES,
        ),
        st.builds(
            lambda n: {
                "name": n,
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}},
            },
            NAMES,
        ),
    ),
    max_size=3,
)
LISTENER = st.fixed_dictionaries(
    {"name": st.just("listener")},
    optional={"resources": RESOURCES, "env": ENV, "securityContext": CONTAINER_SECURITY},
)
TOLERATION = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "spot", "operator": "DoesNotExist"}]}
            ]
        }
    }
}
POD_SPEC = st.fixed_dictionaries(
    {},
    optional={
        "nodeSelector": st.dictionaries(NAMES, NAMES, max_size=2),
        "tolerations": st.just([TOLERATION]),
        "affinity": st.just(AFFINITY),
        "topologySpreadConstraints": st.just(
            [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]
        ),
        "priorityClassName": NAMES,
        "securityContext": POD_SECURITY,
        "containers": st.lists(LISTENER, max_size=1),
        "serviceAccountName": NAMES,
        "automountServiceAccountToken": st.booleans(),
    },
)
ACCEPTED = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "labels": st.dictionaries(NAMES, NAMES, max_size=2),
                "annotations": st.dictionaries(NAMES, NAMES, max_size=2),
            },
        ),
        "spec": POD_SPEC,
    },
)
"""Listener templates made only of accepted parts."""
