{{- define "longhorn.labels" -}}
app.kubernetes.io/name: longhorn
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion }}
{{- end -}}
{{- /* One line of default-setting.yaml; 1.10 and later quote the value, as the real chart. */}}
{{- define "longhorn.setting" -}}
{{- $v := index .values .key -}}
{{- if not (kindIs "invalid" $v) }}
    {{ .name }}: {{ if semverCompare ">=1.10.0-0" .version }}{{ $v | quote }}{{ else }}{{ $v }}{{ end }}
{{- end -}}
{{- end -}}
