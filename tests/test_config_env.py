"""``RAGPULSE_<SECTION>__<KEY>`` overrides are typed by the setting they replace.

A text setting takes the variable verbatim, so a password or token that reads as a YAML
number, boolean or null (``12345``, ``yes``, ``null``) stays the text a Secret holds; every
other setting is parsed as YAML.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ragpulse.collector.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]
RAGPULSE = str(Path(sys.executable).parent / "ragpulse")  # the installed entry point
TEXTS = ["12345", "yes", "null", "0x1F", "1e3", "~", "[a]", "007"]


@pytest.mark.parametrize("raw", TEXTS)
def test_text_settings_keep_the_variable_verbatim(raw: str) -> None:
    env = {
        "RAGPULSE_ALERTMANAGER__TOKEN": raw,
        "RAGPULSE_SAMPLING__SEED": raw,
        "RAGPULSE_KAFKA__GROUP_ID": raw,
        "RAGPULSE_KAFKA__SECURITY__SASL_PLAIN_USERNAME": raw,
        "RAGPULSE_KAFKA__SECURITY__SASL_PLAIN_PASSWORD": raw,
        "RAGPULSE_STORAGE__DSN": f"http://ragpulse:{raw}@clickhouse:8123/ragpulse",
    }
    cfg = load_config(None, env=env)
    assert cfg["alertmanager"]["token"] == raw
    assert cfg["sampling"]["seed"] == raw
    assert cfg["kafka"]["group_id"] == raw
    assert cfg["kafka"]["security"] == {"sasl_plain_username": raw, "sasl_plain_password": raw}
    assert cfg["storage"]["dsn"].endswith(f":{raw}@clickhouse:8123/ragpulse")


def test_other_settings_are_parsed_as_yaml() -> None:
    cfg = load_config(
        None,
        env={
            "RAGPULSE_SAMPLING__RATE": "0.25",
            "RAGPULSE_JUDGE__WORKERS": "4",
            "RAGPULSE_RECEIVER__ENABLED": "true",
            "RAGPULSE_SAMPLING__BUDGET_PER_MINUTE": "null",
            "RAGPULSE_KAFKA__SECURITY__SSL_CHECK_HOSTNAME": "false",
            "RAGPULSE_FEEDBACK__REASK__WINDOW_S": "60",  # typed by the default it replaces (int)
            "RAGPULSE_JUDGE__SETTINGS__THRESHOLD": "0.8",  # no schema, no default: YAML
        },
    )
    assert cfg["sampling"]["rate"] == 0.25 and cfg["judge"]["workers"] == 4
    assert cfg["receiver"]["enabled"] is True and cfg["sampling"]["budget_per_minute"] is None
    assert cfg["kafka"]["security"] == {"ssl_check_hostname": False}
    assert cfg["feedback"]["reask"]["window_s"] == 60 and cfg["judge"]["settings"] == {"threshold": 0.8}


def test_a_setting_from_the_file_types_its_override(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("judge: {settings: {model_name: base, threshold: 0.5}}\n")
    cfg = load_config(
        path,
        env={"RAGPULSE_JUDGE__SETTINGS__MODEL_NAME": "1.5", "RAGPULSE_JUDGE__SETTINGS__THRESHOLD": "0.7"},
    )
    assert cfg["judge"]["settings"] == {"model_name": "1.5", "threshold": 0.7}


def test_wrong_types_still_fail_with_the_key() -> None:
    with pytest.raises(ConfigError, match="judge.workers must be int"):
        load_config(None, env={"RAGPULSE_JUDGE__WORKERS": "four"})
    with pytest.raises(ConfigError, match="kafka.security.ssl_check_hostname must be bool"):
        load_config(None, env={"RAGPULSE_KAFKA__SECURITY__SSL_CHECK_HOSTNAME": "maybe"})


def test_kafka_security_types_are_checked_in_the_file(tmp_path: Path) -> None:
    """In YAML the author can quote; an unquoted numeric password is refused by name, not sent to Kafka."""
    path = tmp_path / "c.yaml"
    path.write_text("kafka: {security: {sasl_plain_password: 12345}}\n")
    with pytest.raises(ConfigError, match="kafka.security.sasl_plain_password must be str, got 12345"):
        load_config(path, env={})


def test_collect_check_accepts_numeric_secrets_from_the_environment() -> None:
    """The real command, as the chart's pods run it: secrets from Secrets arrive as environment text."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    env.update(
        RAGPULSE_ALERTMANAGER__TOKEN="12345",
        RAGPULSE_SAMPLING__SEED="42",
        RAGPULSE_KAFKA__SECURITY__SASL_PLAIN_PASSWORD="007",
        RAGPULSE_KAFKA__SECURITY__SECURITY_PROTOCOL="SASL_PLAINTEXT",
    )
    run = subprocess.run(
        [RAGPULSE, "collect", "--check"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
