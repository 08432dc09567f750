#!/usr/bin/env bash
# Provision the real services that ragpulse's tests and demos run against.
# Idempotent and cached under .cache/ (gitignored): a second run is quick.
#
#   scripts/provision.sh kafka       Kafka 4.x broker jars from Maven Central -> .cache/kafka/libs
#   scripts/provision.sh prometheus  prometheus + promtool from Debian's package (apt) if missing
#   scripts/provision.sh alertmanager  prometheus-alertmanager from Debian's package (apt) if missing
#   scripts/provision.sh helm        helm v3.22.0 built from the Go module proxy -> .cache/bin/helm
#   scripts/provision.sh chromium    headless Chromium from Debian's package (apt) if missing (report checks)
#   scripts/provision.sh all         all of the above
#   scripts/provision.sh otelcol     an OpenTelemetry Collector v0.165 built with the OpenTelemetry Collector
#                                    Builder from the Go module proxy -> .cache/bin/otelcol-ragpulse
#                                    (not in `all`: about 5-6 minutes cold on 2 cores; `make interop` runs it)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="$ROOT/.cache"
HELM_VERSION="v3.22.0"
OCB_VERSION="v0.165.0"

log() { printf '[provision] %s\n' "$*" >&2; }

provision_kafka() {
    local libs="$CACHE/kafka/libs" stamp="$CACHE/kafka/.stamp"
    local want
    want="$(sha256sum "$ROOT/scripts/kafka/pom.xml" | cut -d' ' -f1)"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && ls "$libs"/kafka_2.13-*.jar >/dev/null 2>&1; then
        log "kafka: cached ($(ls "$libs" | wc -l) jars)"
        return
    fi
    command -v mvn >/dev/null || { log "kafka: mvn not found; install Maven"; exit 1; }
    command -v java >/dev/null || { log "kafka: java not found; install a JDK (17+)"; exit 1; }
    log "kafka: resolving broker jars from Maven Central"
    rm -rf "$libs"
    mkdir -p "$libs"
    mvn -q -B -f "$ROOT/scripts/kafka/pom.xml" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$libs"
    echo "$want" > "$stamp"
    log "kafka: $(ls "$libs" | wc -l) jars in $libs"
}

# apt_server PACKAGE: install a Debian package of a server that tests start themselves, and stop
# the service the package starts (it must not run in the background of a test machine).
apt_server() {
    log "$1: installing Debian's $1 package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "$1" >/dev/null
    if command -v service >/dev/null; then service "$1" stop >/dev/null 2>&1 || true; fi
}

provision_prometheus() {
    if command -v promtool >/dev/null && command -v prometheus >/dev/null; then
        log "prometheus: present ($(promtool --version 2>&1 | head -1))"
        return
    fi
    apt_server prometheus
    pkill -x prometheus >/dev/null 2>&1 || true
    log "prometheus: $(promtool --version 2>&1 | head -1)"
}

provision_alertmanager() {
    if ! command -v prometheus-alertmanager >/dev/null; then
        apt_server prometheus-alertmanager
    fi
    log "alertmanager: $(prometheus-alertmanager --version 2>&1 | head -1)"
}

provision_chromium() {
    if command -v chromium >/dev/null; then
        log "chromium: present ($(chromium --version 2>/dev/null | head -1))"
        return
    fi
    log "chromium: installing Debian's chromium package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium >/dev/null
    log "chromium: $(chromium --version 2>/dev/null | head -1)"
}

provision_helm() {
    local bin="$CACHE/bin/helm"
    if [[ -x "$bin" ]] && "$bin" version --template '{{.Version}}' 2>/dev/null | grep -qx "$HELM_VERSION"; then
        log "helm: cached ($HELM_VERSION)"
        return
    fi
    command -v go >/dev/null || { log "helm: go not found; install Go"; exit 1; }
    log "helm: building $HELM_VERSION from the Go module proxy (a few minutes the first time)"
    mkdir -p "$CACHE/bin"
    # helm's release builds stamp the version with -X; go install does not, so do it here.
    GOBIN="$CACHE/bin" CGO_ENABLED=0 go install \
        -ldflags "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
        "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
    log "helm: $("$bin" version --short)"
}

# The collector distribution of scripts/otelcol/builder-config.yaml; rebuilt when the manifest changes.
provision_otelcol() {
    local bin="$CACHE/bin/otelcol-ragpulse" stamp="$CACHE/bin/.otelcol-ragpulse.stamp"
    local manifest="$ROOT/scripts/otelcol/builder-config.yaml" want
    want="$(cat "$manifest" <(echo "$OCB_VERSION") | sha256sum | cut -d' ' -f1)"
    if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        log "otelcol: cached ($("$bin" --version))"
        return
    fi
    command -v go >/dev/null || { log "otelcol: go not found; install Go"; exit 1; }
    local work="$CACHE/otelcol-build" start
    start=$(date +%s)
    log "otelcol: building with ocb $OCB_VERSION from the Go module proxy (minutes the first time)"
    mkdir -p "$CACHE/bin" "$work"
    GOBIN="$work" go install "go.opentelemetry.io/collector/cmd/builder@$OCB_VERSION"
    cp "$manifest" "$work/builder-config.yaml"
    (cd "$work" && CGO_ENABLED=0 ./builder --config builder-config.yaml --ldflags="-s -w")
    mv "$work/build/otelcol-ragpulse" "$bin"
    rm -rf "$work"
    echo "$want" > "$stamp"
    log "otelcol: $("$bin" --version) in $(( $(date +%s) - start ))s"
}

case "${1:-all}" in
    kafka) provision_kafka ;;
    prometheus) provision_prometheus ;;
    alertmanager) provision_alertmanager ;;
    helm) provision_helm ;;
    chromium) provision_chromium ;;
    otelcol) provision_otelcol ;;
    all) provision_kafka; provision_prometheus; provision_alertmanager; provision_helm; provision_chromium ;;
    *) echo "usage: $0 [kafka|prometheus|alertmanager|helm|chromium|otelcol|all]" >&2; exit 2 ;;
esac
