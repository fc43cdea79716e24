{{/* Names. The defaults give every object the name the kustomize base uses. */}}
{{- define "vcp.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vcp.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "vcp.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "vcp.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* vault-helm's global.namespace, else the release's. */}}
{{- define "vcp.namespace" -}}
{{- .Values.global.namespace | default .Release.Namespace -}}
{{- end -}}

{{/* The Secret of the object-version key (the daemon's default for the first provider when hmacSecretName is empty). */}}
{{- define "vcp.hmacSecretName" -}}
{{- .Values.csi.hmacSecretName | default (printf "%s-csi-provider-hmac-key" (first .Values.csi.providers)) -}}
{{- end -}}

{{/*
Labels of every object: the two the kustomize base sets, then Helm's own (which
test/deploy/chart.test.ts removes before comparing with kustomize).
*/}}
{{- define "vcp.labels" -}}
app.kubernetes.io/name: {{ include "vcp.name" . }}
app.kubernetes.io/part-of: vault-csi-provider
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* The provider's pods: the DaemonSet's selector, and what monitors select. */}}
{{- define "vcp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vcp.name" . }}
app.kubernetes.io/component: provider
{{- end -}}

{{/*
vault-helm accepts several values either as YAML or as a string of YAML that is itself a template.
"vcp.yaml" renders either form as YAML text: (list VALUE $).
*/}}
{{- define "vcp.yaml" -}}
{{- $v := index . 0 -}}
{{- $ctx := index . 1 -}}
{{- if kindIs "string" $v -}}
{{- tpl $v $ctx | trim -}}
{{- else if $v -}}
{{- toYaml $v -}}
{{- end -}}
{{- end -}}

{{/* A map value in either form, as a dict: (list VALUE $) | include | fromYaml. */}}
{{- define "vcp.map" -}}
{{- $text := include "vcp.yaml" . -}}
{{- if $text -}}
{{- $m := fromYaml $text -}}
{{- if hasKey $m "Error" -}}
{{- fail (printf "expected a YAML map, got: %s" $text) -}}
{{- end -}}
{{- toYaml $m -}}
{{- else -}}
{}
{{- end -}}
{{- end -}}

{{/* The image, tag defaulting to the chart's appVersion. */}}
{{- define "vcp.image" -}}
{{- printf "%s:%s" .Values.csi.image.repository (.Values.csi.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}

{{/*
Pod security context: the hardened default (or uid 0 with runAsRoot), then the user's keys, each
replacing the default's (a plain key-by-key merge, so that `runAsUser: 0` or `false` win too).
*/}}
{{- define "vcp.podSecurityContext" -}}
{{- $base := dict "runAsNonRoot" true "runAsUser" 65532 "runAsGroup" 65532 "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- if .Values.csi.daemonSet.runAsRoot -}}
{{- $base = dict "runAsNonRoot" false "runAsUser" 0 "runAsGroup" 0 "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- end -}}
{{- $user := include "vcp.map" (list .Values.csi.daemonSet.securityContext.pod $) | fromYaml -}}
{{- range $k, $v := $user }}{{ $_ := set $base $k $v }}{{ end -}}
{{- toYaml $base -}}
{{- end -}}

{{/* Provider container security context: nothing but its own process, then the user's. */}}
{{- define "vcp.containerSecurityContext" -}}
{{- $base := dict "allowPrivilegeEscalation" false "readOnlyRootFilesystem" true "privileged" false "capabilities" (dict "drop" (list "ALL")) -}}
{{- $user := include "vcp.map" (list .Values.csi.daemonSet.securityContext.container $) | fromYaml -}}
{{- range $k, $v := $user }}{{ $_ := set $base $k $v }}{{ end -}}
{{- toYaml $base -}}
{{- end -}}

{{/* The uid:gid the provider process runs as: the container's setting, else the pod's. */}}
{{- define "vcp.runAs" -}}
{{- $pod := include "vcp.podSecurityContext" . | fromYaml -}}
{{- $ctr := include "vcp.containerSecurityContext" . | fromYaml -}}
{{- $uid := $pod.runAsUser | default 0 -}}
{{- if hasKey $ctr "runAsUser" }}{{ $uid = $ctr.runAsUser }}{{ end -}}
{{- $gid := $pod.runAsGroup | default 0 -}}
{{- if hasKey $ctr "runAsGroup" }}{{ $gid = $ctr.runAsGroup }}{{ end -}}
{{- printf "%d:%d" (int64 $uid) (int64 $gid) -}}
{{- end -}}
