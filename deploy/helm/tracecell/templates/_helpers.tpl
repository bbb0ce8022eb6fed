{{/* The objects' base name: the release name, or <release>-tracecell. */}}
{{- define "tracecell.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Selector labels of component (the cells: the fullname). */}}
{{- define "tracecell.selectorLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- define "tracecell.labels" -}}
{{ include "tracecell.selectorLabels" . }}
app.kubernetes.io/part-of: tracecell
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "tracecell.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

{{/* Seconds of a duration written as [Nh][Nm][Ns] (values.schema.json's pattern). */}}
{{- define "tracecell.seconds" -}}
{{- $d := toString . -}}
{{- $h := regexFind "[0-9]+h" $d | trimSuffix "h" | default "0" | atoi -}}
{{- $m := regexFind "[0-9]+m" $d | trimSuffix "m" | default "0" | atoi -}}
{{- $s := regexFind "[0-9]+s" $d | trimSuffix "s" | default "0" | atoi -}}
{{- add (mul $h 3600) (mul $m 60) $s -}}
{{- end -}}

{{/* Fails unless the grace period is above the drain timeout: SIGKILL would cut the drain. */}}
{{- define "tracecell.checkDrain" -}}
{{- $drain := include "tracecell.seconds" .drain | atoi -}}
{{- if le (int .grace) $drain -}}
{{- fail (printf "%s.terminationGracePeriodSeconds (%v) must be above %s drainTimeout (%s = %ds): the kubelet's SIGKILL would cut the drain; raise the grace period or lower the drain timeout" .where .grace .where .drain $drain) -}}
{{- end -}}
{{- end -}}

{{/* The restricted container security context of every tracecell container. */}}
{{- define "tracecell.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: [ALL]}
{{- end -}}

