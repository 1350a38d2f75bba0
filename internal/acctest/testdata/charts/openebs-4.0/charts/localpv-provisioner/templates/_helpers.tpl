{{- define "localpv.fullname" -}}
{{- printf "%s-%s" .Release.Name .Values.localpv.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "localpv.serviceAccountName" -}}
{{- default (include "localpv.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}
{{- define "localpv.basePath" -}}
{{- .Values.hostpathClass.basePath | default .Values.localpv.basePath -}}
{{- end -}}
