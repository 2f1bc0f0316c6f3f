{{/*
Names and labels. They are ARC's (gha-runner-scale-set-controller 0.14.2) on purpose: the
runner scale set charts find the controller's Deployment by `app.kubernetes.io/part-of:
gha-rs-controller` and its ServiceAccount by the `actions.github.com/controller-*` labels, and an
install that replaces ARC's under the same release name keeps every object name.
*/}}

{{- define "scaleset-controller.baseName" -}}
gha-rs-controller
{{- end }}

{{- define "scaleset-controller.namespace" -}}
{{- .Values.namespaceOverride | default .Release.Namespace }}
{{- end }}

{{- define "scaleset-controller.name" -}}
{{- $name := .Values.nameOverride | default (include "scaleset-controller.baseName" .) | toString | trunc 63 | trimSuffix "-" }}
{{- include "scaleset-controller.dnsLabel" (dict "value" $name "what" "nameOverride") }}
{{- end }}

{{/* "value" itself when it is a DNS-1123 label (what object names and label values need);
otherwise the render fails with a sentence naming the value "what". */}}
{{- define "scaleset-controller.dnsLabel" -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .value) }}
{{- fail (printf "%s %q is not a valid name: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters" .what .value) }}
{{- end }}
{{- .value }}
{{- end }}

{{/* <release>-<name>, or the release name alone when it already contains <name>; 63 chars. */}}
{{- define "scaleset-controller.fullname" -}}
{{- $full := "" }}
{{- if .Values.fullnameOverride }}
{{- $full = .Values.fullnameOverride }}
{{- else }}
{{- $name := .Values.nameOverride | default (include "scaleset-controller.baseName" .) }}
{{- $full = ternary .Release.Name (printf "%s-%s" .Release.Name $name) (contains $name .Release.Name) }}
{{- end }}
{{- include "scaleset-controller.dnsLabel" (dict "value" ($full | toString | trunc 63 | trimSuffix "-") "what" "fullnameOverride") }}
{{- end }}

{{- define "scaleset-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "scaleset-controller.name" . }}
app.kubernetes.io/namespace: {{ include "scaleset-controller.namespace" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "scaleset-controller.labels" -}}
helm.sh/chart: {{ printf "%s-%s" (include "scaleset-controller.baseName" .) .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "scaleset-controller.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gha-rs-controller
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- range $key, $value := .Values.labels }}
{{ $key }}: {{ $value | quote }}
{{- end }}
{{- end }}

{{- define "scaleset-controller.serviceAccountName" -}}
{{- $name := .Values.serviceAccount.name }}
{{- if eq $name "default" }}
{{- fail "serviceAccount.name cannot be set to 'default'" }}
{{- end }}
{{- if .Values.serviceAccount.create }}
{{- $name | default (include "scaleset-controller.fullname" .) }}
{{- else if $name }}
{{- $name }}
{{- else }}
{{- fail "serviceAccount.name must be set if serviceAccount.create is false" }}
{{- end }}
{{- end }}

{{/*
The controller (and listener) image: image.repository, with image.tag or the chart's appVersion.
No scaleset image is published, so the chart refuses to install without one rather than pull an
image that does not exist; ARC's controller image (a values file copied whole) cannot run
`scaleset controller`, so it is refused too, naming the value to change.
*/}}
{{- define "scaleset-controller.image" -}}
{{- $repository := .Values.image.repository | default "" | toString }}
{{- if not $repository }}
{{- fail "image.repository is not set: no scaleset image is published. Build the image from a scaleset checkout with scripts/build-image, push it to a registry your cluster pulls from, and set image.repository (and image.tag) to it" }}
{{- end }}
{{- if regexMatch "(^|/)gha-runner-scale-set-controller$" $repository }}
{{- fail (printf "image.repository %q is actions-runner-controller's controller image, which cannot run scaleset: set image.repository (and image.tag) to your build of scaleset's image (scripts/build-image)" $repository) }}
{{- end }}
{{- printf "%s:%s" $repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{/*
The namespaces the controller is limited to, one per line: flags.watchSingleNamespace, then
`namespaces`, without duplicates. Empty: every namespace (cluster-wide RBAC).
*/}}
{{- define "scaleset-controller.watchedNamespaces" -}}
{{- $all := list }}
{{- with .Values.flags.watchSingleNamespace }}
{{- $all = append $all . }}
{{- end }}
{{- range .Values.namespaces }}
{{- $all = append $all . }}
{{- end }}
{{- range uniq $all }}
{{ . }}
{{- end }}
{{- end }}

{{/* "true" when RBAC is per namespace (Roles) rather than cluster-wide. */}}
{{- define "scaleset-controller.namespaced" -}}
{{- if or .Values.flags.watchSingleNamespace .Values.namespaces }}true{{ end }}
{{- end }}

{{/* The port of a Go-style bind address (":8080" -> 8080); fails with `what` if it has none. */}}
{{- define "scaleset-controller.port" -}}
{{- $port := regexFind "[0-9]+$" (toString .address) }}
{{- if not $port }}
{{- fail (printf "%s must end with a numeric port (got %q)" .what (toString .address)) }}
{{- end }}
{{- $port }}
{{- end }}

{{/*
The values this chart accepts from ARC but does not act on, each with why; NOTES.txt prints a
warning for each one that is set, and the controller logs one at start (SCALESET_IGNORED_VALUES). Keys nobody knows (a typo, or a key of a newer ARC) are warned
about too, by the "unknown" list below.
*/}}
{{- define "scaleset-controller.ignoredValues" -}}
{{- if .Values.flags.updateStrategy }}
- key: flags.updateStrategy
  why: scaleset updates a scale set's runner set in place (ARC 0.15 removed this value for the same behaviour) and never deletes a busy runner to apply a change
{{- end }}
{{- if and (kindIs "map" .Values.pprof) .Values.pprof.addr }}
- key: pprof.addr
  why: scaleset has no pprof endpoint (it is not a Go program)
{{- end }}
{{- $known := dict
  "" (list "labels" "replicaCount" "image" "imagePullSecrets" "nameOverride" "fullnameOverride" "env" "serviceAccount" "podAnnotations" "podLabels" "podSecurityContext" "securityContext" "resources" "nodeSelector" "tolerations" "affinity" "topologySpreadConstraints" "volumes" "volumeMounts" "priorityClassName" "metrics" "pprof" "flags" "namespaceOverride" "namespaces" "scaleset" "terminationGracePeriodSeconds" "podDisruptionBudget")
  "flags." (list "logLevel" "logFormat" "watchSingleNamespace" "runnerMaxConcurrentReconciles" "defaultMaxConcurrentReconciles" "autoscalingRunnerSetMaxConcurrentReconciles" "autoscalingListenerMaxConcurrentReconciles" "ephemeralRunnerSetMaxConcurrentReconciles" "ephemeralRunnerMaxConcurrentReconciles" "updateStrategy" "excludeLabelPropagationPrefixes" "rateLimiter" "healthProbeBindAddress" "k8sClientRateLimiterQPS" "k8sClientRateLimiterBurst")
  "image." (list "repository" "pullPolicy" "tag")
  "serviceAccount." (list "create" "annotations" "name")
  "pprof." (list "addr")
  "metrics." (list "controllerManagerAddr" "listenerAddr" "listenerEndpoint")
}}
{{- range $prefix, $keys := $known }}
{{- $values := $.Values }}
{{- if $prefix }}
{{- $values = index $.Values (trimSuffix "." $prefix) }}
{{- end }}
{{- if kindIs "map" $values }}
{{- range $key, $_ := $values }}
{{- if not (has $key $keys) }}
- key: {{ printf "%s%s" $prefix $key }}
  why: this chart does not know this value
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
