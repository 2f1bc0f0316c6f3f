{{/*
The runner pod of the AutoscalingRunnerSet (spec.template), as YAML: `template` with
containerMode applied as ARC's chart applies it.

- Every key of template.spec is kept, except containers, initContainers, volumes and
  serviceAccountName, which are rebuilt; restartPolicy defaults to Never; serviceAccountName
  defaults to the chart's runner ServiceAccount.
- The container named "runner" keeps its fields; the mode's environment variables and volume
  mounts are appended unless it already has one of that name (a user's value always wins).
- containers, volumes and the runner's env and volumeMounts may be lists or maps whose values
  are the items, taken in key order (ARC's chart ranges over them, so it takes both).
- dind: an init container copies the runner's externals for Docker; Docker runs in a privileged
  "dind" container: a native sidecar (an init container with restartPolicy Always and a startup
  probe) on Kubernetes >= 1.29, else a second container. The volumes work (a user's "work"
  volume, else emptyDir), dind-sock and dind-externals come first.
- kubernetes: the runner runs job containers as pods through the container hooks; its work
  directory is an ephemeral volume claim (containerMode.kubernetesModeWorkVolumeClaim) unless the
  template has a "work" volume. kubernetes-novolume: no shared volume at all.
- githubServerTLS.runnerMountPath: the CA ConfigMap is mounted into the runner container and
  announced by NODE_EXTRA_CA_CERTS and RUNNER_UPDATE_CA_CERTS.
- automountServiceAccountToken: false in the default and dind modes (the runner does not use
  the Kubernetes API), unless the template sets it or names its own serviceAccountName.
*/}}
{{- define "srs.runnerTemplate" -}}
{{- $mode := include "srs.mode" . -}}
{{- if not (has $mode (list "" "dind" "kubernetes" "kubernetes-novolume")) -}}
{{- /* ARC renders the template unchanged for any other value; so do we (its tests use "none"). */ -}}
{{- $mode = "" -}}
{{- end -}}
{{- $userSpec := default (dict) (default (dict) .Values.template).spec -}}
{{- $tls := default (dict) .Values.githubServerTLS -}}
{{- $certKey := "" -}}
{{- $certPath := "" -}}
{{- if $tls.runnerMountPath -}}
{{- $certKey = $tls.certificateFrom.configMapKeyRef.key -}}
{{- $certPath = clean (printf "%s/%s" $tls.runnerMountPath $certKey) -}}
{{- end -}}
{{- $nativeSidecar := semverCompare ">=1.29-0" .Capabilities.KubeVersion.Version -}}

{{- /* The user's containers: the runner (if any) and the others. */ -}}
{{- $runner := dict -}}
{{- $others := list -}}
{{- range $container := (default (list) $userSpec.containers) -}}
{{- if eq $container.name "runner" -}}
{{- $runner = $container -}}
{{- else if not (and (eq $mode "dind") (eq $container.name "dind")) -}}
{{- $others = append $others $container -}}
{{- end -}}
{{- end -}}
{{- if not $runner -}}
{{- fail "template.spec.containers has no container named \"runner\": the GitHub runner runs in it (it gets the runner's JIT config), so no runner pod could work (ARC's chart renders such a template; scaleset's controller would refuse it)" -}}
{{- end -}}
{{- if and $userSpec.restartPolicy (ne (toString $userSpec.restartPolicy) "Never") -}}
{{- fail (printf "template.spec.restartPolicy must be Never (or unset), got %q: a restarted runner would reuse its single-use JIT config, so scaleset's controller refuses any other policy" (toString $userSpec.restartPolicy)) -}}
{{- end -}}

{{- /* Environment variables and volume mounts the mode adds to the runner container. */ -}}
{{- $addEnv := list -}}
{{- $addMounts := list -}}
{{- $workMount := dict "name" "work" "mountPath" "/home/runner/_work" -}}
{{- $podName := dict "name" "ACTIONS_RUNNER_POD_NAME" "valueFrom" (dict "fieldRef" (dict "fieldPath" "metadata.name")) -}}
{{- $requireJobContainer := dict "name" "ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER" "value" "true" -}}
{{- if eq $mode "dind" -}}
{{- $addEnv = list (dict "name" "DOCKER_HOST" "value" "unix:///var/run/docker.sock") (dict "name" "RUNNER_WAIT_FOR_DOCKER_IN_SECONDS" "value" "120") -}}
{{- $addMounts = list $workMount (dict "name" "dind-sock" "mountPath" "/var/run") -}}
{{- else if eq $mode "kubernetes" -}}
{{- $addEnv = list (dict "name" "ACTIONS_RUNNER_CONTAINER_HOOKS" "value" "/home/runner/k8s/index.js") $podName $requireJobContainer -}}
{{- $addMounts = list $workMount -}}
{{- else if eq $mode "kubernetes-novolume" -}}
{{- $addEnv = list (dict "name" "ACTIONS_RUNNER_CONTAINER_HOOKS" "value" "/home/runner/k8s-novolume/index.js") $podName $requireJobContainer (dict "name" "ACTIONS_RUNNER_IMAGE" "value" (toString ($runner.image | default ""))) -}}
{{- end -}}
{{- if $certPath -}}
{{- $addEnv = concat $addEnv (list (dict "name" "NODE_EXTRA_CA_CERTS" "value" $certPath) (dict "name" "RUNNER_UPDATE_CA_CERTS" "value" "1")) -}}
{{- $addMounts = append $addMounts (dict "name" "github-server-tls-cert" "mountPath" $certPath "subPath" $certKey) -}}
{{- end -}}

{{- $runnerContainer := dict -}}
{{- if $runner -}}
{{- $runnerContainer = omit $runner "env" "volumeMounts" -}}
{{- $env := list -}}
{{- range $item := $runner.env }}{{ $env = append $env $item }}{{ end -}}
{{- $names := list -}}
{{- range $item := $env }}{{ $names = append $names $item.name }}{{ end -}}
{{- range $item := $addEnv -}}
{{- if not (has $item.name $names) }}{{ $env = append $env $item }}{{ end -}}
{{- end -}}
{{- $mounts := list -}}
{{- range $item := $runner.volumeMounts }}{{ $mounts = append $mounts $item }}{{ end -}}
{{- $names = list -}}
{{- range $item := $mounts }}{{ $names = append $names $item.name }}{{ end -}}
{{- range $item := $addMounts -}}
{{- if not (has $item.name $names) }}{{ $mounts = append $mounts $item }}{{ end -}}
{{- end -}}
{{- if $env }}{{ $_ := set $runnerContainer "env" $env }}{{ end -}}
{{- if or $mounts (eq $mode "kubernetes-novolume") }}{{ $_ := set $runnerContainer "volumeMounts" ($mounts | default (list)) }}{{ end -}}
{{- end -}}

{{- /* The Docker daemon container of dind mode. */ -}}
{{- $dind := dict
  "name" "dind"
  "image" "docker:dind"
  "args" (list "dockerd" "--host=unix:///var/run/docker.sock" "--group=$(DOCKER_GROUP_GID)")
  "env" (list (dict "name" "DOCKER_GROUP_GID" "value" "123"))
  "securityContext" (dict "privileged" true)
  "volumeMounts" (list $workMount (dict "name" "dind-sock" "mountPath" "/var/run") (dict "name" "dind-externals" "mountPath" "/home/runner/externals"))
-}}
{{- if $nativeSidecar -}}
{{- $_ := set $dind "restartPolicy" "Always" -}}
{{- $_ := set $dind "startupProbe" (dict "exec" (dict "command" (list "docker" "info")) "initialDelaySeconds" 0 "failureThreshold" 24 "periodSeconds" 5) -}}
{{- end -}}

{{- /* Containers and init containers. */ -}}
{{- $containers := list -}}
{{- $initContainers := list -}}
{{- if $mode -}}
{{- $containers = append $containers $runnerContainer -}}
{{- if and (eq $mode "dind") (not $nativeSidecar) }}{{ $containers = append $containers $dind }}{{ end -}}
{{- $containers = concat $containers $others -}}
{{- else -}}
{{- range $container := (default (list) $userSpec.containers) -}}
{{- $containers = append $containers (ternary $runnerContainer $container (eq $container.name "runner")) -}}
{{- end -}}
{{- end -}}
{{- if eq $mode "dind" -}}
{{- $copy := dict "name" "init-dind-externals" "image" $runner.image "command" (list "cp") "args" (list "-r" "/home/runner/externals/." "/home/runner/tmpDir/") "volumeMounts" (list (dict "name" "dind-externals" "mountPath" "/home/runner/tmpDir")) -}}
{{- $initContainers = append $initContainers $copy -}}
{{- if $nativeSidecar }}{{ $initContainers = append $initContainers $dind }}{{ end -}}
{{- end -}}
{{- $initContainers = concat $initContainers (default (list) $userSpec.initContainers) -}}

{{- /* Volumes. */ -}}
{{- $userVolumes := list -}}
{{- range $volume := $userSpec.volumes }}{{ $userVolumes = append $userVolumes $volume }}{{ end -}}
{{- $workVolumes := list -}}
{{- $otherVolumes := list -}}
{{- range $volume := $userVolumes -}}
{{- if eq $volume.name "work" }}{{ $workVolumes = append $workVolumes $volume }}{{ else }}{{ $otherVolumes = append $otherVolumes $volume }}{{ end -}}
{{- end -}}
{{- $volumes := list -}}
{{- if $certPath -}}
{{- $volumes = append $volumes (dict "name" "github-server-tls-cert" "configMap" (dict "name" $tls.certificateFrom.configMapKeyRef.name "items" (list (dict "key" $certKey "path" $certKey)))) -}}
{{- end -}}
{{- if eq $mode "dind" -}}
{{- $volumes = concat $volumes (list (dict "name" "dind-sock" "emptyDir" (dict)) (dict "name" "dind-externals" "emptyDir" (dict))) -}}
{{- $volumes = concat $volumes (default (list (dict "name" "work" "emptyDir" (dict))) $workVolumes) $otherVolumes -}}
{{- else if eq $mode "kubernetes" -}}
{{- if not $workVolumes -}}
{{- $claim := (default (dict) .Values.containerMode).kubernetesModeWorkVolumeClaim -}}
{{- if not $claim -}}
{{- fail "containerMode.type is kubernetes but containerMode.kubernetesModeWorkVolumeClaim is empty and template.spec.volumes has no volume named \"work\": the runner's work directory needs one (e.g. kubernetesModeWorkVolumeClaim: {accessModes: [ReadWriteOnce], storageClassName: <class>, resources: {requests: {storage: 1Gi}}})" -}}
{{- end -}}
{{- $workVolumes = list (dict "name" "work" "ephemeral" (dict "volumeClaimTemplate" (dict "spec" $claim))) -}}
{{- end -}}
{{- $volumes = concat $volumes $workVolumes $otherVolumes -}}
{{- else -}}
{{- $volumes = concat $volumes $userVolumes -}}
{{- end -}}

{{- $spec := omit $userSpec "containers" "initContainers" "volumes" "serviceAccountName" -}}
{{- if not $userSpec.restartPolicy }}{{ $_ := set $spec "restartPolicy" "Never" }}{{ end -}}
{{- $account := $userSpec.serviceAccountName -}}
{{- if not $account -}}
{{- $account = ternary (include "srs.kubeModeServiceAccountName" .) (include "srs.noPermissionServiceAccountName" .) (eq (include "srs.kubeMode" .) "true") -}}
{{- end -}}
{{- $_ := set $spec "serviceAccountName" $account -}}
{{- /* The runner of the default and dind modes never calls the Kubernetes API: no token in its
pod (ARC mounts the no-permission ServiceAccount's). The kubernetes modes' hooks need it. A
template that sets automountServiceAccountToken, or names its own ServiceAccount, decides. */ -}}
{{- if and (has $mode (list "" "dind")) (not (hasKey $userSpec "automountServiceAccountToken")) (not $userSpec.serviceAccountName) -}}
{{- $_ := set $spec "automountServiceAccountToken" false -}}
{{- end -}}
{{- if $initContainers }}{{ $_ := set $spec "initContainers" $initContainers }}{{ end -}}
{{- $_ := set $spec "containers" $containers -}}
{{- if or $volumes (eq $mode "kubernetes-novolume") }}{{ $_ := set $spec "volumes" ($volumes | default (list)) }}{{ end -}}

{{- $template := dict "spec" $spec -}}
{{- with (default (dict) .Values.template).metadata -}}
{{- $metadata := pick . "labels" "annotations" -}}
{{- $_ := set $template "metadata" $metadata -}}
{{- end -}}
{{- toYaml $template -}}
{{- end -}}
