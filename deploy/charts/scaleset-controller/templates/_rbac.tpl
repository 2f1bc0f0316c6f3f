{{/* The subject every binding of the chart names: the controller's ServiceAccount. */}}
{{- define "scaleset-controller.subject" -}}
- kind: ServiceAccount
  name: {{ include "scaleset-controller.serviceAccountName" . | quote }}
  namespace: {{ include "scaleset-controller.namespace" . }}
{{- end }}

{{/* A RoleBinding (`namespace` given) or ClusterRoleBinding named `name` to the role `name`. */}}
{{- define "scaleset-controller.binding" -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ ternary "RoleBinding" "ClusterRoleBinding" (not (empty .namespace)) }}
metadata:
  name: {{ .name | quote }}
  {{- with .namespace }}
  namespace: {{ . }}
  {{- end }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: {{ ternary "Role" "ClusterRole" (not (empty .namespace)) }}
  name: {{ .name | quote }}
subjects:
  {{- include "scaleset-controller.subject" .root | nindent 2 }}
{{- end }}
