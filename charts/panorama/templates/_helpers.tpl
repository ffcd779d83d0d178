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

{{- define "panorama.storageEnv" -}}
{{- if and (ne .Values.storage.driver "sqlite") .Values.storage.dsnSecret.name }}
env:
- name: PANORAMA_STORAGE_DSN
  valueFrom:
    secretKeyRef: {name: {{ .Values.storage.dsnSecret.name }}, key: {{ .Values.storage.dsnSecret.key }}}
{{- end }}
{{- end }}

{{- define "panorama.apiserverArgs" -}}
- --secure-port=6443
{{- if .Values.apiserver.tlsSecret }}
- --tls-cert-file=/tls/tls.crt
- --tls-private-key-file=/tls/tls.key
{{- else }}
- --cert-dir=/tmp/certs
{{- end }}
{{- end }}
