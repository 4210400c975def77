{{/*
Names are fixed ("gpu-extender", "gpu-scheduler"), as in manifests/: the
scheduler configuration, the ServiceMonitor's job label, the alerts and the
dashboard all refer to them, so one release per cluster.
*/}}

{{- define "gpu-extender.namespace" -}}
{{- required "namespace.name is required" .Values.namespace.name -}}
{{- end -}}

{{/* Labels Helm adds on top of the manifests' own; never in selectors. */}}
{{- define "gpu-extender.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* metadata.labels of an extender object: include "gpu-extender.labels" (list . "component") */}}
{{- define "gpu-extender.labels" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
app.kubernetes.io/name: gpu-extender
{{- if $component }}
app.kubernetes.io/component: {{ $component }}
{{- end }}
app.kubernetes.io/part-of: gpu-extender
{{ include "gpu-extender.helmLabels" $root }}
{{- end -}}

{{- define "gpu-extender.selectorLabels" -}}
app.kubernetes.io/name: gpu-extender
app.kubernetes.io/component: extender
{{- end -}}

{{- define "gpu-extender.scheduler.labels" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
app.kubernetes.io/name: {{ $root.Values.scheduler.name }}
{{- if $component }}
app.kubernetes.io/component: {{ $component }}
{{- end }}
app.kubernetes.io/part-of: gpu-extender
{{ include "gpu-extender.helmLabels" $root }}
{{- end -}}

{{- define "gpu-extender.scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ .Values.scheduler.name }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "gpu-extender.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The extender's config as a dict: values plus what the chart decides. */}}
{{- define "gpu-extender.configDict" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $kube := default dict (get $cfg "kubernetes") -}}
{{- $_ := set $kube "namespace" (include "gpu-extender.namespace" .) -}}
{{- $_ := set $cfg "kubernetes" $kube -}}
{{- if .Values.tls.enabled -}}
{{- $server := default dict (get $cfg "server") -}}
{{- $_ := set $server "port" (int .Values.tls.containerPort) -}}
{{- $_ := set $server "tls_cert_file" "/etc/gpu-extender-tls/tls.crt" -}}
{{- $_ := set $server "tls_key_file" "/etc/gpu-extender-tls/tls.key" -}}
{{- $_ := set $cfg "server" $server -}}
{{- end -}}
{{- if and .Values.scheduler.enabled .Values.scheduler.allPods -}}
{{- $score := default dict (get $cfg "score") -}}
{{- if not (hasKey $score "relative") -}}
{{- $_ := set $score "relative" true -}}
{{- end -}}
{{- if not (hasKey $score "fgd_idle_card_milli") -}}
{{- $_ := set $score "fgd_idle_card_milli" 25 -}}
{{- end -}}
{{- $_ := set $cfg "score" $score -}}
{{- end -}}
{{- toJson $cfg -}}
{{- end -}}

{{/* Port the extender container listens on. */}}
{{- define "gpu-extender.containerPort" -}}
{{- if .Values.tls.enabled -}}
{{- int .Values.tls.containerPort -}}
{{- else -}}
{{- int (default 8888 .Values.config.server.port) -}}
{{- end -}}
{{- end -}}

{{- define "gpu-extender.portName" -}}
{{- if .Values.tls.enabled }}https{{ else }}http{{ end -}}
{{- end -}}

{{- define "gpu-extender.servicePort" -}}
{{- if .Values.tls.enabled -}}
{{- int .Values.tls.servicePort -}}
{{- else -}}
{{- int .Values.service.port -}}
{{- end -}}
{{- end -}}

{{/* DNS name of the Service, the certificate's name. */}}
{{- define "gpu-extender.serviceHost" -}}
{{- printf "gpu-extender.%s.svc" (include "gpu-extender.namespace" .) -}}
{{- end -}}

{{/* urlPrefix of the scheduler's extenders: entry. */}}
{{- define "gpu-extender.urlPrefix" -}}
{{- $scheme := ternary "https" "http" (.Values.tls.enabled | default false) -}}
{{- $port := ternary (int .Values.tls.servicePort) (int .Values.service.port) (.Values.tls.enabled | default false) -}}
{{- printf "%s://%s:%d%s" $scheme (include "gpu-extender.serviceHost" .) $port (default "/gpu-extender" .Values.config.server.url_prefix) -}}
{{- end -}}
