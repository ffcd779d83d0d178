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

{{/* Storage flags and the DSN from a Secret when given. */}}
{{- define "panorama.storageArgs" -}}
- --storage={{ .Values.storage.driver }}
{{- if eq .Values.storage.driver "sqlite" }}
- --storage-dsn=/data/panorama.db
{{- else if .Values.storage.dsnSecret.name }}
- --storage-dsn=$(PANORAMA_STORAGE_DSN)
{{- else }}
- --storage-dsn={{ required "storage.dsn or storage.dsnSecret is required for mysql and postgres" .Values.storage.dsn }}
{{- end }}
{{- end }}

{{/* The API server's reads from a PostgreSQL replica (--storage-read-dsn). */}}
{{- define "panorama.readArgs" -}}
{{- if or .Values.storage.readDsn .Values.storage.readDsnSecret.name }}
{{- if .Values.storage.readDsnSecret.name }}
- --storage-read-dsn=$(PANORAMA_STORAGE_READ_DSN)
{{- else }}
- --storage-read-dsn={{ .Values.storage.readDsn }}
{{- end }}
{{- end }}
{{- end }}

{{/* The environment of a component: (list $ "apiserver"). DSNs held in
Secrets, and the controller manager's replica name (--replica-identity). */}}
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
