{{- define "longhorn.labels" -}}
app.kubernetes.io/name: longhorn
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion }}
{{- end -}}
{{- define "longhorn.setting" -}}
{{- $v := index .values .key -}}
{{- if not (kindIs "invalid" $v) }}
    {{ .name }}: {{ $v }}
{{- end -}}
{{- end -}}
