{{/*
Helpers of the scaleset-runner-set chart. Object names, labels and the runner pod are those of
ARC's gha-runner-scale-set chart (0.14.2), so an ARC release upgraded to this chart keeps its
objects and the controller finds what it expects. Objects are built as dicts and printed with
toYaml.
*/}}

{{/* The ARC release whose objects this chart renders: the AutoscalingRunnerSet's
app.kubernetes.io/version. ARC's controller deletes a scale set whose version label differs in
major.minor from its own, so this keeps a rollback to ARC 0.14.2 safe. */}}
{{- define "srs.arcVersion" -}}
0.14.2
{{- end -}}

{{/* The scale set's name: runnerScaleSetName, else the release name. */}}
{{- define "srs.scaleSetName" -}}
{{- .Values.runnerScaleSetName | default .Release.Name -}}
{{- end -}}

{{/* The namespace of every object. */}}
{{- define "srs.namespace" -}}
{{- .Values.namespaceOverride | default .Release.Namespace -}}
{{- end -}}

{{/* Prefix of the chart's object names: "<scale set>-gha-rs", at most 63 characters. */}}
{{- define "srs.prefix" -}}
{{- printf "%s-gha-rs" (include "srs.scaleSetName" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* "true" when githubConfigSecret names an existing Secret. */}}
{{- define "srs.secretIsName" -}}
{{- if kindIs "string" .Values.githubConfigSecret }}true{{ end -}}
{{- end -}}

{{- define "srs.githubSecretName" -}}
{{- if include "srs.secretIsName" . -}}
{{- if not .Values.githubConfigSecret -}}
{{- fail "githubConfigSecret is empty: give the name of an existing Secret, or a map with github_token (or github_app_id, github_app_installation_id and github_app_private_key)" -}}
{{- end -}}
{{- .Values.githubConfigSecret -}}
{{- else -}}
{{- include "srs.prefix" . | replace "_" "-" }}-github-secret
{{- end -}}
{{- end -}}

{{- define "srs.managerRoleName" -}}
{{- include "srs.prefix" . }}-manager
{{- end -}}

{{- define "srs.kubeModeRoleName" -}}
{{- include "srs.prefix" . }}-kube-mode
{{- end -}}

{{- define "srs.kubeModeServiceAccountName" -}}
{{- include "srs.prefix" . | replace "_" "-" }}-kube-mode
{{- end -}}

{{- define "srs.noPermissionServiceAccountName" -}}
{{- include "srs.prefix" . | replace "_" "-" }}-no-permission
{{- end -}}

{{/* containerMode.type, "" when unset. */}}
{{- define "srs.mode" -}}
{{- (default (dict) .Values.containerMode).type | default "" -}}
{{- end -}}

{{/* "true" in the kubernetes container modes. */}}
{{- define "srs.kubeMode" -}}
{{- if has (include "srs.mode" .) (list "kubernetes" "kubernetes-novolume") }}true{{ end -}}
{{- end -}}

{{/* "kube" or "noPermission": which runner ServiceAccount the chart makes; "" when the template
names its own. */}}
{{- define "srs.runnerServiceAccount" -}}
{{- if not ((default (dict) (default (dict) .Values.template).spec).serviceAccountName) -}}
{{- if include "srs.kubeMode" . }}kube{{ else }}noPermission{{ end -}}
{{- end -}}
{{- end -}}

{{/* The labels every object carries (a YAML map). */}}
{{- define "srs.baseLabels" -}}
{{- $name := include "srs.scaleSetName" . -}}
{{- $labels := dict
  "helm.sh/chart" (printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-")
  "app.kubernetes.io/name" $name
  "app.kubernetes.io/instance" $name
  "app.kubernetes.io/version" (include "srs.arcVersion" .)
  "app.kubernetes.io/managed-by" .Release.Service
  "app.kubernetes.io/part-of" "gha-rs"
  "actions.github.com/scale-set-name" $name
  "actions.github.com/scale-set-namespace" (include "srs.namespace" .)
-}}
{{- toYaml $labels -}}
{{- end -}}

{{/*
metadata.labels and metadata.annotations of one chart object, as YAML. Argument: a dict with
  root: the chart context; meta: the resourceMeta key of the object; component: the
  app.kubernetes.io/component label ("" for none); scaleSet: true for the AutoscalingRunnerSet
  (its resourceMeta labels are filtered like the global ones, annotation values are strings, and
  the chart's own annotations cannot be set by the user).
User labels never replace the chart's labels, nor set actions.github.com/*.
*/}}
{{- define "srs.metadata" -}}
{{- $root := .root -}}
{{- $scaleSet := .scaleSet | default false -}}
{{- $base := include "srs.baseLabels" $root | fromYaml -}}
{{- $reserved := merge (dict "app.kubernetes.io/component" "") (deepCopy $base) -}}
{{- $own := (default (dict) (index (default (dict) $root.Values.resourceMeta) .meta)) -}}
{{- $labels := dict -}}
{{- range $key, $value := (default (dict) $root.Values.labels) -}}
{{- if not (or (hasKey $reserved $key) (hasPrefix "actions.github.com/" $key)) -}}
{{- $_ := set $labels $key (toString $value) -}}
{{- end -}}
{{- end -}}
{{- range $key, $value := (default (dict) $own.labels) -}}
{{- if or (not $scaleSet) (not (or (hasKey $reserved $key) (hasPrefix "actions.github.com/" $key))) -}}
{{- $_ := set $labels $key (ternary (toString $value) $value $scaleSet) -}}
{{- end -}}
{{- end -}}
{{- $labels = merge (deepCopy $base) $labels -}}
{{- if .component -}}
{{- $_ := set $labels "app.kubernetes.io/component" .component -}}
{{- end -}}
{{- $annotations := dict -}}
{{- range $source := list (default (dict) $root.Values.annotations) (default (dict) $own.annotations) -}}
{{- range $key, $value := $source -}}
{{- if not $scaleSet -}}
{{- $_ := set $annotations $key $value -}}
{{- else if not (or (hasPrefix "actions.github.com/cleanup-" $key) (eq $key "actions.github.com/values-hash")) -}}
{{- $_ := set $annotations $key (toString $value) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $out := dict "labels" $labels -}}
{{- if $annotations -}}
{{- $_ := set $out "annotations" $annotations -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* The ServiceAccount of the controller, "<namespace>/<name>": controllerServiceAccount, else
the controller Deployment found in the cluster (offline rendering finds none). */}}
{{- define "srs.controllerServiceAccount" -}}
{{- $given := default (dict) .Values.controllerServiceAccount -}}
{{- if not (kindIs "map" $given) -}}
{{- fail (printf "controllerServiceAccount must be a map with name and namespace, got %v (a %s)" $given (kindOf $given)) -}}
{{- end -}}
{{- range $key := list "name" "namespace" -}}
{{- $value := get $given $key -}}
{{- if not (or (kindIs "string" $value) (kindIs "invalid" $value)) -}}
{{- fail (printf "controllerServiceAccount.%s must be a string, got %v (a %s)" $key $value (kindOf $value)) -}}
{{- end -}}
{{- end -}}
{{- $name := $given.name | default "" -}}
{{- $namespace := $given.namespace | default "" -}}
{{- if not (and $name $namespace) -}}
{{- $found := include "srs.findController" . | fromYaml -}}
{{- $name = $name | default $found.name -}}
{{- $namespace = $namespace | default $found.namespace -}}
{{- end -}}
{{- toYaml (dict "name" $name "namespace" $namespace) -}}
{{- end -}}

{{/* The controller Deployment's ServiceAccount labels: the one controller watching every
namespace, or the single-namespace controller watching this namespace. Fails, saying what to set,
when there is none, more than one, or both kinds. */}}
{{- define "srs.findController" -}}
{{- $hint := "Set controllerServiceAccount.name and controllerServiceAccount.namespace to the controller's ServiceAccount (needed with helm template and GitOps tools, which render without a cluster)." -}}
{{- $everywhere := list -}}
{{- $single := dict -}}
{{- range $deployment := (lookup "apps/v1" "Deployment" "" "").items -}}
{{- $labels := default (dict) $deployment.metadata.labels -}}
{{- if eq (get $labels "app.kubernetes.io/part-of") "gha-rs-controller" -}}
{{- if hasKey $labels "actions.github.com/controller-watch-single-namespace" -}}
{{- $_ := set $single (get $labels "actions.github.com/controller-watch-single-namespace") $labels -}}
{{- else -}}
{{- $everywhere = append $everywhere $labels -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $chosen := dict -}}
{{- if and (not $everywhere) (not $single) -}}
{{- fail (printf "no controller Deployment found (label app.kubernetes.io/part-of=gha-rs-controller). %s" $hint) -}}
{{- else if and $everywhere $single -}}
{{- fail (printf "found controllers watching all namespaces and controllers watching a single namespace; the chart cannot tell which one serves this scale set. %s" $hint) -}}
{{- else if gt (len $everywhere) 1 -}}
{{- fail (printf "found %d controller Deployments watching all namespaces; the chart cannot tell which one serves this scale set. %s" (len $everywhere) $hint) -}}
{{- else if $everywhere -}}
{{- $chosen = first $everywhere -}}
{{- else if hasKey $single (include "srs.namespace" .) -}}
{{- $chosen = get $single (include "srs.namespace" .) -}}
{{- else -}}
{{- fail (printf "no controller Deployment watches namespace %s (label actions.github.com/controller-watch-single-namespace). %s" (include "srs.namespace" .) $hint) -}}
{{- end -}}
{{- $name := get $chosen "actions.github.com/controller-service-account-name" -}}
{{- $namespace := get $chosen "actions.github.com/controller-service-account-namespace" -}}
{{- if not (and $name $namespace) -}}
{{- fail (printf "the controller Deployment has no actions.github.com/controller-service-account-name or -namespace label. %s" $hint) -}}
{{- end -}}
{{- toYaml (dict "name" $name "namespace" $namespace) -}}
{{- end -}}

{{- /* The values this chart ignores, as a YAML list of {key, why} (sorted by key): values of
ARC's that its chart ignores too, and top-level keys neither chart knows. NOTES.txt warns about
each; the AutoscalingRunnerSet carries them in the scaleset.dev/ignored-values annotation, which
the controller reports as the ValuesIgnored condition (Argo CD and Flux never show NOTES). */ -}}
{{- define "srs.ignoredValues" -}}
{{- $ignored := list -}}
{{- $vault := default (dict) .Values.keyVault -}}
{{- if and (kindIs "map" $vault) (hasKey $vault "azure_key_vault") -}}
{{- $ignored = append $ignored (dict "key" "keyVault.azure_key_vault" "why" "ARC's values file documents it, but ARC's chart (and this one) reads keyVault.azureKeyVault (url, tenantId, clientId, certificatePath, secretKey)") -}}
{{- end -}}
{{- $known := list "githubConfigUrl" "scaleSetLabels" "githubConfigSecret" "proxy" "maxRunners" "minRunners" "runnerGroup" "runnerScaleSetName" "githubServerTLS" "keyVault" "containerMode" "listenerTemplate" "listenerMetrics" "template" "controllerServiceAccount" "namespaceOverride" "annotations" "labels" "resourceMeta" -}}
{{- range $key := keys .Values | sortAlpha -}}
{{- if not (has $key $known) -}}
{{- $ignored = append $ignored (dict "key" $key "why" "neither this chart nor ARC's gha-runner-scale-set chart has such a value") -}}
{{- end -}}
{{- end -}}
{{- toYaml $ignored -}}
{{- end -}}
