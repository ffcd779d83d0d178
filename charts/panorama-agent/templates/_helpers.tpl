{{- define "panorama-agent.labels" -}}
app.kubernetes.io/name: panorama-agent
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{- define "panorama-agent.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The Secret holding the token: the one named, or the chart's. */}}
{{- define "panorama-agent.tokenSecret" -}}
{{ .Values.tokenSecret | default (printf "%s-token" .Release.Name) }}
{{- end }}

{{/* Refuses values with which the agent could not connect. */}}
{{- define "panorama-agent.validate" -}}
{{- if not (hasPrefix "https://" .Values.hub.url) }}
{{- fail "hub.url is required: the https://host:port of the hub's tunnel endpoint" }}
{{- end }}
{{- if not .Values.cluster }}
{{- fail "cluster is required: the name of this member's Cluster in the hub" }}
{{- end }}
{{- if and .Values.token .Values.tokenSecret }}
{{- fail "set token or tokenSecret, not both" }}
{{- end }}
{{- if not (or .Values.token .Values.tokenSecret) }}
{{- fail "token or tokenSecret is required: the hub's ServiceAccount token for this Cluster (audience panorama.io/tunnel), or a Secret with it in key token" }}
{{- end }}
{{- end }}

{{/* The pod's securityContext: the values over what the Pod Security
"restricted" profile requires, which values of an earlier chart (kept by
helm upgrade --reuse-values) may lack. */}}
{{- define "panorama-agent.podSecurityContext" -}}
{{- $restricted := dict "runAsNonRoot" true "seccompProfile" (dict "type" "RuntimeDefault") }}
{{- toYaml (mergeOverwrite $restricted (deepCopy (.Values.podSecurityContext | default dict))) }}
{{- end }}
