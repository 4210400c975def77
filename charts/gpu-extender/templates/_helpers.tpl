{{/*
Names are fixed ("gpu-extender", "gpu-scheduler"), as in manifests/: the
scheduler configuration, the ServiceMonitor's job label, the alerts and the
dashboard all refer to them, so one release per cluster.
*/}}

{{/*
The extender's namespace is the release's: helm install -n gpu-system
--create-namespace. The chart never creates it, so `helm uninstall` leaves the
namespace and the ledger Leases in it (the time-slice bookings of running pods).
*/}}
{{- define "gpu-extender.namespace" -}}
{{- .Release.Namespace -}}
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

{{/*
An image reference "[registry/]repository:tag" from a block of values with
registry, repository and tag; an empty tag takes the default given:
  include "gpu-extender.imageRef" (list .Values.image .Chart.AppVersion)
*/}}
{{- define "gpu-extender.imageRef" -}}
{{- $img := index . 0 -}}
{{- $tag := default (index . 1) $img.tag -}}
{{- if $img.registry -}}
{{- printf "%s/%s:%s" (trimSuffix "/" $img.registry) $img.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" $img.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "gpu-extender.image" -}}
{{- include "gpu-extender.imageRef" (list .Values.image .Chart.AppVersion) -}}
{{- end -}}

{{/*
The kube-scheduler image: scheduler.image.tag, else the API server's own
version (vMAJOR.MINOR.PATCH of .Capabilities.KubeVersion, vendor suffixes such
as "-eks-..." or "+k3s1" cut), so the second scheduler is never newer than the
API server. `helm template` without a cluster takes --kube-version.
*/}}
{{- define "gpu-extender.schedulerImage" -}}
{{- $kube := regexFind "^v[0-9]+\\.[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version -}}
{{- include "gpu-extender.imageRef" (list .Values.scheduler.image $kube) -}}
{{- end -}}

{{/*
Metadata of a Deployment's pod template: the selector labels, part-of, the
component's podLabels (which may not replace a selector label) and
podAnnotations.
  include "gpu-extender.podMetadata" (list $values $selectorLabelsYaml)
*/}}
{{- define "gpu-extender.podMetadata" -}}
{{- $v := index . 0 -}}
{{- $sel := index . 1 | fromYaml -}}
labels:
  {{- toYaml $sel | nindent 2 }}
  app.kubernetes.io/part-of: gpu-extender
{{- range $k, $val := $v.podLabels }}
{{- if or (hasKey $sel $k) (eq $k "app.kubernetes.io/part-of") }}
{{- fail (printf "podLabels: %s is set by the chart (a selector label); choose another label" $k) }}
{{- end }}
  {{ $k }}: {{ $val | quote }}
{{- end }}
{{- with $v.podAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
Placement and pod security of a Deployment's pod spec, from one component's
block of values (extender or scheduler): priorityClassName, nodeSelector,
tolerations, affinity, topologySpreadConstraints and podSecurityContext.
Without affinity, a preferred pod anti-affinity spreads the replicas over
nodes; a spread constraint without labelSelector gets the pods' selector.
  include "gpu-extender.podPlacement" (list $values $selectorLabelsYaml)
*/}}
{{- define "gpu-extender.podPlacement" -}}
{{- $v := index . 0 -}}
{{- $sel := index . 1 | fromYaml -}}
{{- with $v.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
affinity:
{{- if $v.affinity }}
  {{- toYaml $v.affinity | nindent 2 }}
{{- else }}
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- toYaml $sel | nindent 14 }}
{{- end }}
{{- with $v.topologySpreadConstraints }}
topologySpreadConstraints:
{{- range . }}
{{- $c := deepCopy . }}
{{- if not (hasKey $c "labelSelector") }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" $sel) }}
{{- end }}
  - {{ toYaml $c | nindent 4 | trim }}
{{- end }}
{{- end }}
{{- with $v.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
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
{{- $filter := default dict (get $cfg "filter") -}}
{{- if not (hasKey $filter "shortlist_nodes") -}}
{{- $_ := set $filter "shortlist_nodes" 100 -}}
{{- end -}}
{{- $_ := set $cfg "filter" $filter -}}
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
