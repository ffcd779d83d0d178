{{- define "panorama.labels" -}}
app.kubernetes.io/name: panorama
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{- define "panorama.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "panorama.shared" -}}
{{- if ne .Values.storage.driver "sqlite" }}true{{ end -}}
{{- end }}

{{/* Storage flags. A shared database's DSN is not one: the binaries read it
from the environment (panorama.env), which the kubelet sets from a Secret,
so that it is in neither the manifests nor the process's command line. */}}
{{- define "panorama.storageArgs" -}}
- --storage={{ .Values.storage.driver }}
{{- if eq .Values.storage.driver "sqlite" }}
- --storage-dsn=/data/panorama.db
{{- end }}
{{- end }}

{{/* Refuses storage values that cannot work or would leak a DSN. */}}
{{- define "panorama.validateStorage" -}}
{{- with .Values.storage }}
{{- range $inline, $secret := dict "dsn" "dsnSecret" "readDsn" "readDsnSecret" }}
{{- if index $.Values.storage $inline }}
{{- fail (printf "storage.%s: the chart takes no DSN inline, since values are kept in the release for anyone who may read its Secrets or run `helm get values`; put it in a Secret and set storage.%s.name (and .key)" $inline $secret) }}
{{- end }}
{{- end }}
{{- if and (ne .driver "sqlite") (not .dsnSecret.name) }}
{{- fail "storage.dsnSecret.name is required for mysql and postgres: the Secret whose key storage.dsnSecret.key holds the DSN" }}
{{- end }}
{{- if and .readDsnSecret.name (ne .driver "postgres") }}
{{- fail "storage.readDsnSecret is for storage.driver postgres: a streaming replica" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The environment of a component: (list $ "apiserver"). DSNs held in
Secrets (PANORAMA_STORAGE_DSN and PANORAMA_STORAGE_READ_DSN stand for
--storage-dsn and --storage-read-dsn), and the controller manager's replica
name (--replica-identity). */}}
{{- define "panorama.env" -}}
{{- $ := index . 0 }}{{ $part := index . 1 }}
{{- $env := list }}
{{- with $.Values.storage }}
{{- if and (ne .driver "sqlite") .dsnSecret.name }}
{{- $env = append $env (dict "name" "PANORAMA_STORAGE_DSN" "valueFrom" (dict "secretKeyRef" (dict "name" .dsnSecret.name "key" .dsnSecret.key))) }}
{{- end }}
{{- if and (eq $part "apiserver") .readDsnSecret.name }}
{{- $env = append $env (dict "name" "PANORAMA_STORAGE_READ_DSN" "valueFrom" (dict "secretKeyRef" (dict "name" .readDsnSecret.name "key" .readDsnSecret.key))) }}
{{- end }}
{{- end }}
{{- if eq $part "controller-manager" }}
{{- $env = append $env (dict "name" "POD_NAME" "valueFrom" (dict "fieldRef" (dict "fieldPath" "metadata.name"))) }}
{{- $env = concat $env ($.Values.controllerManager.extraEnv | default list) }}
{{- else }}
{{- $env = concat $env ($.Values.apiserver.extraEnv | default list) }}
{{- end }}
{{- with $env }}
env: {{- toYaml . | nindent 0 }}
{{- end }}
{{- end }}

{{/* The pod's securityContext: the values over what the Pod Security
"restricted" profile requires, which values of an earlier chart (kept by
helm upgrade --reuse-values) may lack. */}}
{{- define "panorama.podSecurityContext" -}}
{{- $restricted := dict "runAsNonRoot" true "seccompProfile" (dict "type" "RuntimeDefault") }}
{{- toYaml (mergeOverwrite $restricted (deepCopy (.Values.podSecurityContext | default dict))) }}
{{- end }}

{{- define "panorama.apiserverArgs" -}}
- --secure-port=6443
- --tls-cert-file=/tls/tls.crt
- --tls-private-key-file=/tls/tls.key
{{- end }}

{{/* The ServiceAccount of a component: (list $ "controller-manager"). The
all-in-one pod has one account for both. */}}
{{- define "panorama.serviceAccount" -}}
{{- $ := index . 0 }}
{{- if include "panorama.shared" $ }}{{ $.Release.Name }}-{{ index . 1 }}{{ else }}{{ $.Release.Name }}{{ end }}
{{- end }}

{{/* The Secret the API server serves with. */}}
{{- define "panorama.tlsSecret" -}}
{{ .Values.apiserver.tlsSecret | default (printf "%s-apiserver-tls" .Release.Name) }}
{{- end }}

{{- define "panorama.certManager" -}}
{{- if and (not .Values.apiserver.tlsSecret) .Values.apiserver.certManager (.Capabilities.APIVersions.Has "cert-manager.io/v1") }}true{{ end -}}
{{- end }}

{{/* "true" when the controller manager serves the tunnel endpoint; off
for an upgrade --reuse-values from a chart without the value. */}}
{{- define "panorama.tunnel" -}}
{{- if (.Values.tunnel | default dict).enabled }}true{{ end -}}
{{- end }}

{{/* The Secret the tunnel endpoint serves with. */}}
{{- define "panorama.tunnelSecret" -}}
{{ .Values.tunnel.tlsSecret | default (printf "%s-tunnel-tls" .Release.Name) }}
{{- end }}
