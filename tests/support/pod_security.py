"""The Pod Security Standards' "baseline" and "restricted" profiles, checked rule by rule as the
Kubernetes documentation lists them: one checker for every pod the project builds (the
controller chart's pod, the listener pod the controller makes)."""

from __future__ import annotations

from typing import Any

BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
}  # fmt: skip
RESTRICTED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
    "projected", "secret",
}  # fmt: skip


def violations(pod: dict[str, Any]) -> list[str]:
    """Every rule of the baseline and restricted profiles the pod spec breaks."""
    spec = pod["spec"]
    found: list[str] = []
    pod_sc = spec.get("securityContext") or {}
    containers = [*spec.get("initContainers", []), *spec.get("containers", [])]
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            found.append(f"baseline: {field}")
    for volume in spec.get("volumes", []):
        kinds = set(volume) - {"name"}
        if "hostPath" in kinds:
            found.append(f"baseline: hostPath volume {volume['name']}")
        if not kinds <= RESTRICTED_VOLUMES:
            found.append(f"restricted: volume {volume['name']} of type {sorted(kinds)}")
    for sysctl in pod_sc.get("sysctls", []):
        if sysctl["name"] not in SAFE_SYSCTLS:
            found.append(f"baseline: sysctl {sysctl['name']}")
    if (pod_sc.get("windowsOptions") or {}).get("hostProcess"):
        found.append("baseline: hostProcess")
    pod_nonroot = pod_sc.get("runAsNonRoot") is True
    pod_seccomp = (pod_sc.get("seccompProfile") or {}).get("type")
    if pod_sc.get("runAsUser") == 0:
        found.append("restricted: pod runAsUser 0")
    if pod_seccomp == "Unconfined":
        found.append("baseline: pod seccomp Unconfined")
    for c in containers:
        name = c["name"]
        sc = c.get("securityContext") or {}
        if sc.get("privileged"):
            found.append(f"baseline: {name} privileged")
        for port in c.get("ports", []):
            if port.get("hostPort"):
                found.append(f"baseline: {name} hostPort")
        added = set((sc.get("capabilities") or {}).get("add", []))
        if not added <= BASELINE_CAPABILITIES:
            found.append(f"baseline: {name} adds {sorted(added - BASELINE_CAPABILITIES)}")
        if not added <= {"NET_BIND_SERVICE"}:
            found.append(f"restricted: {name} adds capabilities {sorted(added)}")
        if "ALL" not in (sc.get("capabilities") or {}).get("drop", []):
            found.append(f"restricted: {name} does not drop ALL capabilities")
        if sc.get("procMount", "Default") != "Default":
            found.append(f"baseline: {name} procMount")
        selinux = sc.get("seLinuxOptions") or {}
        if selinux.get("user") or selinux.get("role"):
            found.append(f"baseline: {name} seLinux user/role")
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(f"restricted: {name} allowPrivilegeEscalation not false")
        nonroot = sc.get("runAsNonRoot")
        if nonroot is False or (nonroot is not True and not pod_nonroot):
            found.append(f"restricted: {name} runAsNonRoot not true")
        if sc.get("runAsUser") == 0:
            found.append(f"restricted: {name} runAsUser 0")
        seccomp = (sc.get("seccompProfile") or {}).get("type") or pod_seccomp
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"restricted: {name} seccomp profile {seccomp!r}")
    return found
