{{/* Names and labels. */}}
{{- define "ragpulse.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ragpulse.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "ragpulse.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ragpulse.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "ragpulse.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "ragpulse.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ragpulse
{{- end }}

{{/* Labels of one component; call with (dict "ctx" $ "component" "ingest"). */}}
{{- define "ragpulse.componentLabels" -}}
{{ include "ragpulse.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "ragpulse.componentSelector" -}}
{{ include "ragpulse.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The label every collector pod (ingest and judge) carries: the metrics Service selects it. */}}
{{- define "ragpulse.collectorSelector" -}}
{{ include "ragpulse.selectorLabels" . }}
ragpulse.io/collector: "true"
{{- end }}

{{- define "ragpulse.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "ragpulse.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "ragpulse.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "ragpulse.required" -}}
{{- $_ := required "kafka.bootstrapServers is required: the bootstrap servers of your Kafka cluster, host:port[,host:port] (e.g. my-cluster-kafka-bootstrap.kafka:9092 for Strimzi)" .Values.kafka.bootstrapServers }}
{{- $_ := required "clickhouse.url is required: http(s)://host:port of your ClickHouse server, without credentials (e.g. http://clickhouse-ragpulse.clickhouse:8123)" .Values.clickhouse.url }}
{{- if ne (empty .Values.kafka.tls.certKey) (empty .Values.kafka.tls.keyKey) }}
{{- fail "kafka.tls.certKey and kafka.tls.keyKey go together: set both for mutual TLS, or neither" }}
{{- end }}
{{- if and (hasPrefix "SASL_" .Values.kafka.securityProtocol) (not .Values.kafka.sasl.existingSecret) }}
{{- fail (printf "kafka.securityProtocol %s needs kafka.sasl.existingSecret: the Secret with the SASL user name and password" .Values.kafka.securityProtocol) }}
{{- end }}
{{- if ge (float64 .Values.config.shutdown.grace_s) (float64 .Values.terminationGracePeriodSeconds) }}
{{- fail (printf "config.shutdown.grace_s (%v) must be below terminationGracePeriodSeconds (%v): the pod is killed before it has committed" .Values.config.shutdown.grace_s .Values.terminationGracePeriodSeconds) }}
{{- end }}
{{- end }}

{{/*
The ClickHouse DSN the collector reads (storage.dsn), with the password taken from
existingSecret through Kubernetes' $(VAR) expansion: the password never appears in a
rendered manifest.
*/}}
{{- define "ragpulse.dsn" -}}
{{- $u := urlParse .Values.clickhouse.url }}
{{- if .Values.clickhouse.existingSecret }}
{{- printf "%s://%s:$(RAGPULSE_CLICKHOUSE_PASSWORD)@%s" $u.scheme .Values.clickhouse.user $u.host }}
{{- else }}
{{- printf "%s://%s:@%s" $u.scheme .Values.clickhouse.user $u.host }}
{{- end }}
{{- end }}

{{/* Environment shared by every ragpulse container: storage and Kafka credentials, extras. */}}
{{- define "ragpulse.env" -}}
- name: HOME
  value: /tmp
- name: LITELLM_LOCAL_MODEL_COST_MAP
  value: "True"
{{- if .Values.clickhouse.existingSecret }}
- name: RAGPULSE_CLICKHOUSE_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.clickhouse.existingSecret }}
      key: {{ .Values.clickhouse.passwordKey }}
{{- end }}
- name: RAGPULSE_STORAGE__DSN
  value: {{ include "ragpulse.dsn" . | quote }}
- name: RAGPULSE_STORAGE__DATABASE
  value: {{ .Values.config.storage.database | quote }}
{{- if .Values.kafka.sasl.existingSecret }}
- name: RAGPULSE_KAFKA__SECURITY__SASL_PLAIN_USERNAME
  {{- if .Values.kafka.sasl.username }}
  value: {{ .Values.kafka.sasl.username | quote }}
  {{- else }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.kafka.sasl.existingSecret }}
      key: {{ .Values.kafka.sasl.usernameKey }}
  {{- end }}
- name: RAGPULSE_KAFKA__SECURITY__SASL_PLAIN_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.kafka.sasl.existingSecret }}
      key: {{ .Values.kafka.sasl.passwordKey }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* kafka-python security settings that are not secret (the SASL credentials come from env). */}}
{{- define "ragpulse.kafkaSecurity" -}}
{{- $s := dict "security_protocol" .Values.kafka.securityProtocol }}
{{- if hasPrefix "SASL_" .Values.kafka.securityProtocol }}
{{- $_ := set $s "sasl_mechanism" .Values.kafka.sasl.mechanism }}
{{- end }}
{{- if .Values.kafka.tls.existingSecret }}
{{- $_ := set $s "ssl_cafile" (printf "/etc/ragpulse/kafka-tls/%s" .Values.kafka.tls.caKey) }}
{{- if .Values.kafka.tls.certKey }}
{{- $_ := set $s "ssl_certfile" (printf "/etc/ragpulse/kafka-tls/%s" .Values.kafka.tls.certKey) }}
{{- $_ := set $s "ssl_keyfile" (printf "/etc/ragpulse/kafka-tls/%s" .Values.kafka.tls.keyKey) }}
{{- end }}
{{- end }}
{{- toYaml $s }}
{{- end }}

{{/* Pod- and container-level security: non-root, read-only root, no capabilities, seccomp. */}}
{{- define "ragpulse.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
fsGroup: {{ .Values.securityContext.fsGroup }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "ragpulse.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
privileged: false
capabilities:
  drop: [ALL]
{{- end }}

{{/* Volumes every ragpulse pod mounts: the config, a writable /tmp, Kafka TLS material. */}}
{{- define "ragpulse.volumes" -}}
- name: config
  configMap:
    name: {{ include "ragpulse.fullname" . }}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- if .Values.kafka.tls.existingSecret }}
- name: kafka-tls
  secret:
    secretName: {{ .Values.kafka.tls.existingSecret }}
{{- end }}
{{- end }}

{{- define "ragpulse.volumeMounts" -}}
- name: config
  mountPath: /etc/ragpulse/config
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- if .Values.kafka.tls.existingSecret }}
- name: kafka-tls
  mountPath: /etc/ragpulse/kafka-tls
  readOnly: true
{{- end }}
{{- end }}

{{/* Pod-level settings shared by every pod of the chart. */}}
{{- define "ragpulse.podCommon" -}}
serviceAccountName: {{ include "ragpulse.serviceAccountName" . }}
automountServiceAccountToken: {{ .Values.automountServiceAccountToken }}
securityContext:
  {{- include "ragpulse.podSecurityContext" . | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
collector.yaml: values.config plus the settings the chart owns (Kafka address and security,
metrics and receiver listeners on all interfaces). storage.dsn comes from the environment.
*/}}
{{- define "ragpulse.collectorConfig" -}}
{{- $cfg := deepCopy .Values.config }}
{{- $kafka := default (dict) $cfg.kafka }}
{{- $_ := set $kafka "bootstrap_servers" .Values.kafka.bootstrapServers }}
{{- $_ := set $kafka "security" (include "ragpulse.kafkaSecurity" . | fromYaml) }}
{{- $_ := set $cfg "kafka" $kafka }}
{{- $_ := set $cfg "metrics" (dict "host" "0.0.0.0" "port" .Values.metrics.port "stall_s" .Values.metrics.stallSeconds) }}
{{- $receiver := default (dict) $cfg.receiver }}
{{- $_ := set $cfg "receiver" (merge (dict "enabled" .Values.receiver.enabled "host" "0.0.0.0" "port" .Values.receiver.port "read_timeout_s" .Values.receiver.readTimeoutSeconds "grpc_enabled" .Values.receiver.grpc.enabled "grpc_port" .Values.receiver.grpc.port) $receiver) }}
{{- $am := .Values.alertmanagerWebhook }}
{{- $_ := set $cfg "alertmanager" (dict "enabled" $am.enabled "host" "0.0.0.0" "port" $am.port "lookback_s" $am.lookbackSeconds) }}
{{- toYaml $cfg }}
{{- end }}

{{/*
The error budget of an objective (1 - objective) rounded to 10 places, as text: Go's %v writes
the shortest digits, as the mixin's renderer does (collector/monitoring/common.py budget_text).
*/}}
{{- define "ragpulse.errorBudget" -}}
{{- round (subf 1.0 (float64 .)) 10 }}
{{- end }}

{{/* Environment of the ingest pods only: the intake's and the webhook's bearer tokens, from their Secrets. */}}
{{- define "ragpulse.ingestEnv" -}}
{{- with .Values.receiver }}
{{- if and (or .enabled .grpc.enabled) .existingSecret }}
- name: RAGPULSE_RECEIVER__AUTH_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .tokenKey }}
{{- end }}
{{- end }}
{{- with .Values.alertmanagerWebhook }}
{{- if and .enabled .existingSecret }}
- name: RAGPULSE_ALERTMANAGER__TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .tokenKey }}
{{- end }}
{{- end }}
{{- end }}
