{{/*
The second scheduler's KubeSchedulerConfiguration, as in
manifests/scheduler/kube-scheduler-config.yaml (https=false) and
kube-scheduler-config-https.yaml (https=true), or without scheduler.allPods as
in those of manifests/overlays/gpu-pods-only:
  include "gpu-extender.schedulerConfig" (list . false)
*/}}
{{- define "gpu-extender.schedulerConfig" -}}
{{- $root := index . 0 -}}
{{- $https := index . 1 -}}
{{- $s := $root.Values.scheduler -}}
{{- $host := include "gpu-extender.serviceHost" $root -}}
{{- $prefix := default "/gpu-extender" $root.Values.config.server.url_prefix -}}
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
# Empty kubeconfig: in-cluster config with the {{ $s.name }} ServiceAccount.
clientConnection:
  kubeconfig: ""
leaderElection:
  leaderElect: true
  # Its own lock, so it never contends with the default kube-scheduler.
  resourceLock: leases
  resourceName: {{ $s.name }}
  resourceNamespace: {{ $s.namespace }}
# The extender only sees the nodes the scheduler sends; with sampling, a
# sample of full GPU nodes would make a pod unschedulable although other
# nodes fit. Send every feasible node.
percentageOfNodesToScore: {{ int $s.percentageOfNodesToScore }}
profiles:
  - schedulerName: {{ $s.name }}
{{- if $s.allPods }}
    # Every pod scored by fgd: LeastAllocated and BalancedAllocation only
    # blur its choice (docs/scheduling-quality.md). Their scores are off;
    # their filters stay.
    plugins:
      score:
        disabled:
          - name: NodeResourcesFit
          - name: NodeResourcesBalancedAllocation
    pluginConfig:
      - name: NodeResourcesFit
        args:
          # Virtual resource of annotation-driven shared pods: without
          # managedResources' ignoredByScheduler, NodeResourcesFit's filter
          # must ignore it here.
          ignoredResources:
            - {{ $root.Values.config.names.time_slice_resource }}
{{- else }}
    # LeastAllocated beside the extender's fgd score places best in
    # `gpu-extender simulate` (docs/scheduling-quality.md); spelled out so a
    # cluster-wide default cannot change it.
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: LeastAllocated
            resources:
              - name: cpu
                weight: 1
              - name: memory
                weight: 1
{{- end }}
extenders:
{{- if $https }}
  - urlPrefix: {{ printf "https://%s:%d%s" $host (int $root.Values.tls.servicePort) $prefix | quote }}
{{- else }}
  - urlPrefix: {{ printf "http://%s:%d%s" $host (int $root.Values.service.port) $prefix | quote }}
{{- end }}
    filterVerb: filter
    prioritizeVerb: prioritize
    bindVerb: bind
    # Victims on one card for a higher-priority GPU pod (docs/sharing.md,
    # Preemption): replaces the scheduler's GPU victims, drops nodes where no
    # single card can be freed.
    preemptVerb: preempt
    # Extender score 0..10 x weight x 10 is added to the in-tree scores.
    weight: {{ int $s.extender.weight }}
    # Only node names are sent; the extender watches nodes itself.
    nodeCacheCapable: true
{{- if $https }}
    enableHTTPS: true
    tlsConfig:
      # Verify the extender's certificate against this CA. Never combine a
      # CA with insecure: true, and never leave the CA out.
{{- if $root.Values.tls.caData }}
      caData: {{ $root.Values.tls.caData | quote }}
{{- else }}
      # Mounted by the scheduler Deployment from the ConfigMap gpu-extender-ca.
      caFile: /etc/kubernetes/gpu-extender-ca/ca.crt
{{- end }}
      serverName: {{ $host }}
{{- else }}
    enableHTTPS: false
{{- end }}
    # Whole exchange per call, including bind's API server writes.
    httpTimeout: {{ $s.extender.httpTimeout }}
    # false: fail closed. An extender outage keeps GPU pods Pending (retried
    # with backoff) instead of placing them without the ledger.
    ignorable: {{ $s.extender.ignorable }}
{{- if not $s.allPods }}
    # The extender is called only for pods that request one of these.
    managedResources:
      - name: {{ $root.Values.config.names.gpu_resource }}
        ignoredByScheduler: false
      - name: {{ $root.Values.config.names.shared_resource }}
        ignoredByScheduler: false
      # Virtual resource of annotation-driven shared pods: no node
      # advertises it, so NodeResourcesFit must ignore it.
      - name: {{ $root.Values.config.names.time_slice_resource }}
        ignoredByScheduler: true
{{- end }}
{{- end -}}
