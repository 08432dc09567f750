"""Configuration from RAGPULSE_* variables, and what `import ragpulse.agent` pulls in."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ragpulse.agent.config import Limits, Settings, settings_from_env

from tests.services import ROOT


def test_settings_from_env():
    s = settings_from_env(
        {
            "RAGPULSE_SERVICE_NAME": "svc",
            "RAGPULSE_EXPORTER": "Kafka",
            "RAGPULSE_KAFKA_BOOTSTRAP_SERVERS": "k1:9092,k2:9092",
            "RAGPULSE_KAFKA_TOPIC": "spans",
            "RAGPULSE_KAFKA_COMPRESSION": "none",
            "RAGPULSE_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "RAGPULSE_KAFKA_SASL_MECHANISM": "PLAIN",
            "RAGPULSE_KAFKA_SASL_USERNAME": "u",
            "RAGPULSE_KAFKA_SASL_PASSWORD": "p",
            "RAGPULSE_KAFKA_SSL_CAFILE": "/ca.pem",
            "RAGPULSE_SAMPLE_RATE": "0.25",
            "RAGPULSE_REDACT": "true",
            "RAGPULSE_LIMIT_MAX_CHUNKS": "7",
            "RAGPULSE_CORPUS_VERSION": "v3",
        }
    ).validated()
    assert s.service_name == "svc"
    assert s.exporter == "kafka"
    assert s.kafka_bootstrap_servers == "k1:9092,k2:9092"
    assert s.kafka_topic == "spans"
    assert s.kafka_compression is None
    assert s.kafka_options == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "u",
        "sasl_plain_password": "p",
        "ssl_cafile": "/ca.pem",
    }
    assert s.sample_rate == 0.25
    assert s.redact is True
    assert s.limits.max_chunks == 7
    assert s.corpus_version == "v3"


def test_defaults_and_validation():
    s = settings_from_env({})
    assert s == Settings()
    assert s.exporter == "embedded"
    with pytest.raises(ValueError, match="RAGPULSE_SAMPLE_RATE"):
        settings_from_env({"RAGPULSE_SAMPLE_RATE": "lots"})
    with pytest.raises(ValueError, match="1 MB"):
        Settings(limits=Limits(max_record_bytes=2_000_000)).validated()


def test_import_is_light():
    """`import ragpulse.agent` loads neither the collector's dependencies nor the OTel SDK or Kafka."""
    code = (
        "import sys, json, ragpulse.agent; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('litellm','clickhouse_connect','chdb','prometheus_client','kafka','google','ragpulse') "
        "or m.startswith('opentelemetry.sdk') or m.startswith('opentelemetry.exporter'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    loaded = json.loads(out.stdout)
    assert [m for m in loaded if not m.startswith("ragpulse")] == []
    assert "ragpulse.collector" not in loaded
    assert "ragpulse.agent.kafka_exporter" not in loaded


def test_env_configures_on_first_call(tmp_path):
    """Without configure(), the first traced call configures from RAGPULSE_* (here: embedded, no sink)."""
    code = (
        "from ragpulse.agent import trace_rag, flush, stats\n"
        "@trace_rag\n"
        "def rag(query):\n"
        "    return 'ok'\n"
        "assert rag('q') == 'ok'\n"
        "flush()\n"
        "import json; print(json.dumps(stats()))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "RAGPULSE_EXPORTER": "embedded", "RAGPULSE_SERVICE_NAME": "envsvc"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["dropped"]["no_sink"] == 1

    env["RAGPULSE_EXPORTER"] = "carrier-pigeon"  # a bad environment: logged, tracing off, the app runs
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert "configuration from the environment failed" in out.stderr
