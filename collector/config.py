"""Collector configuration: a YAML file, environment overrides, fail-fast validation.

The file has the sections of ``default_config.yaml`` (shipped with the package
and used for every key the file leaves out). Any key can be overridden from
the environment as ``RAGPULSE_<SECTION>__<KEY>`` (e.g.
``RAGPULSE_STORAGE__DSN=http://default:@ch:8123/ragpulse``, and a key inside a
mapping setting as ``RAGPULSE_KAFKA__SECURITY__SASL_PLAIN_PASSWORD``). An
override is typed by the setting it replaces: a text setting takes the variable
verbatim (a password ``12345`` or ``yes`` stays that text), any other is parsed
as YAML (``0.25``, ``true``, ``null``, ``[a, b]``). :func:`load_config` raises
:class:`ConfigError` with a one-line reason for anything it cannot use.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

__all__ = ["ConfigError", "load_config", "default_config", "logs_url", "merge", "validate", "chdb_dsn"]

ENV_PREFIX = "RAGPULSE_"


class ConfigError(ValueError):
    """The configuration cannot be used; the message is one line naming the key."""


def default_config() -> dict[str, Any]:
    """The packaged defaults (collector/default_config.yaml)."""
    text = resources.files("ragpulse.collector").joinpath("default_config.yaml").read_text()
    return yaml.safe_load(text)


def merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge ``override`` into a copy of ``base`` (lists and scalars replace)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _setting_type(path: list[str], base: Mapping[str, Any]) -> Any:
    """The type a setting at ``path`` takes: from the schema, else from the value it replaces."""
    if len(path) == 2 and path[1] in _SCHEMA.get(path[0], {}):
        return _SCHEMA[path[0]][path[1]]
    if len(path) == 3 and (path[0], path[1]) == ("kafka", "security") and path[2] in KAFKA_SECURITY:
        return KAFKA_SECURITY[path[2]]
    node: Any = base
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return None if node is None else type(node)


def _env_overrides(env: Mapping[str, str], base: Mapping[str, Any]) -> dict[str, Any]:
    """The ``RAGPULSE_*`` variables of ``env`` as a nested override of ``base``, each typed by its setting."""
    out: dict[str, Any] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        if _setting_type(path, base) is str or raw == "":
            value: Any = raw
        else:
            try:
                value = yaml.safe_load(raw)
            except yaml.YAMLError:
                value = raw
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return out


#: kafka-python's client settings under ``kafka.security`` whose type the collector checks (the
#: section passes any other kafka-python setting through unchecked).
KAFKA_SECURITY: dict[str, type] = {
    "security_protocol": str,
    "sasl_mechanism": str,
    "sasl_plain_username": str,
    "sasl_plain_password": str,
    "sasl_kerberos_service_name": str,
    "sasl_kerberos_domain_name": str,
    "ssl_cafile": str,
    "ssl_certfile": str,
    "ssl_keyfile": str,
    "ssl_password": str,
    "ssl_crlfile": str,
    "ssl_ciphers": str,
    "ssl_check_hostname": bool,
}

_SCHEMA: dict[str, dict[str, type | tuple[type, ...]]] = {
    "kafka": {
        "bootstrap_servers": str,
        "spans_topic": str,
        "judge_topic": str,
        "deadletter_topic": str,
        "group_id": str,
        "judge_group_id": str,
        "max_poll_records": int,
        "fetch_max_bytes": int,
        "session_timeout_ms": int,
        "security": dict,
    },
    "storage": {
        "dsn": str,
        "database": str,
        "ttl_days": int,
        "batch_max_traces": int,
        "batch_max_seconds": (int, float),
        "retry_initial_s": (int, float),
        "retry_max_s": (int, float),
    },
    "assembly": {"timeout_s": (int, float), "max_traces": int},
    "limits": {"max_record_bytes": int, "max_attribute_chars": int, "max_attributes": int},
    "sampling": {
        "rate": (int, float),
        "seed": str,
        "budget_per_minute": (int, type(None)),
        "budget_includes_rules": bool,
        "per_variant_per_minute": (int, type(None)),
        "rules": list,
    },
    "variants": {"labels": dict},
    "cost": {"prices": dict, "litellm": bool},
    "metrics": {"host": str, "port": int, "stall_s": (int, float)},
    "receiver": {
        "enabled": bool,
        "host": str,
        "port": int,
        "read_timeout_s": (int, float),
        "auth_token": str,
        "auth_token_file": str,
        "max_inflight_bytes": int,
        "grpc_enabled": bool,
        "grpc_port": int,
        "grpc_workers": int,
    },
    "judge": {
        "enabled": bool,
        "judge": str,
        "workers": int,
        "batch_size": int,
        "max_poll_interval_s": (int, float),
        "settings": dict,
    },
    "shutdown": {"grace_s": (int, float)},
    "evaluations": {
        "otlp_endpoint": str,
        "headers": dict,
        "timeout_s": (int, float),
        "schedule_delay_s": (int, float),
        "max_export_batch_size": int,
        "max_queue_size": int,
        "thresholds": dict,
    },
    "feedback": {"judge_on_negative": bool, "reask": dict},
    "alertmanager": {"enabled": bool, "host": str, "port": int, "token": str, "lookback_s": (int, float)},
    "review_metrics": {"enabled": bool, "agreement_window": int, "refresh_s": (int, float)},
    "session_metrics": {"enabled": bool, "refresh_s": (int, float), "settle_s": (int, float)},
}


def validate(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Check types and ranges; return the config (a chDB directory made absolute,
    :func:`chdb_dsn`) or raise ConfigError."""
    for section, value in cfg.items():
        if section not in _SCHEMA:
            raise ConfigError(f"unknown section {section!r} (known: {', '.join(sorted(_SCHEMA))})")
        if not isinstance(value, Mapping):
            raise ConfigError(f"section {section!r} must be a mapping")
        for key, v in value.items():
            if key not in _SCHEMA[section]:
                raise ConfigError(f"unknown key {section}.{key}")
            want = _SCHEMA[section][key]
            if isinstance(v, bool) and want in (int, (int, float)):
                raise ConfigError(f"{section}.{key} must be a number, got {v!r}")
            if not isinstance(v, want):
                names = want.__name__ if isinstance(want, type) else "/".join(t.__name__ for t in want)
                raise ConfigError(f"{section}.{key} must be {names}, got {type(v).__name__} {v!r}")
    for key, v in (cfg.get("kafka", {}).get("security") or {}).items():
        if key in KAFKA_SECURITY and not isinstance(v, KAFKA_SECURITY[key]):
            raise ConfigError(f"kafka.security.{key} must be {KAFKA_SECURITY[key].__name__}, got {v!r}")
    s = cfg["sampling"]
    if not 0.0 <= float(s["rate"]) <= 1.0:
        raise ConfigError(f"sampling.rate must be between 0 and 1, got {s['rate']}")
    if s.get("budget_per_minute") is not None and s["budget_per_minute"] < 0:
        raise ConfigError("sampling.budget_per_minute must be >= 0 or null")
    if s.get("per_variant_per_minute") is not None and s["per_variant_per_minute"] < 1:
        raise ConfigError("sampling.per_variant_per_minute must be >= 1 or null")
    _check_variants_and_cost(cfg)
    from .ingest.sampling import SamplingPolicy

    try:
        SamplingPolicy.from_config(s)
    except ValueError as exc:
        raise ConfigError(f"sampling.rules: {exc}") from None
    for section, key in (
        ("storage", "batch_max_traces"),
        ("assembly", "max_traces"),
        ("limits", "max_record_bytes"),
        ("limits", "max_attribute_chars"),
        ("kafka", "max_poll_records"),
        ("judge", "workers"),
        ("judge", "batch_size"),
        ("metrics", "stall_s"),
        ("judge", "max_poll_interval_s"),
        ("receiver", "read_timeout_s"),
        ("evaluations", "timeout_s"),
        ("evaluations", "schedule_delay_s"),
        ("evaluations", "max_export_batch_size"),
        ("evaluations", "max_queue_size"),
        ("receiver", "max_inflight_bytes"),
        ("receiver", "grpc_workers"),
        ("review_metrics", "agreement_window"),
        ("review_metrics", "refresh_s"),
        ("session_metrics", "refresh_s"),
    ):
        if cfg[section][key] <= 0:
            raise ConfigError(f"{section}.{key} must be positive, got {cfg[section][key]}")
    if cfg["session_metrics"]["settle_s"] < 0:
        raise ConfigError("session_metrics.settle_s must be >= 0")
    dsn = _storage_dsn(cfg["storage"])
    for section, key in (("metrics", "port"), ("receiver", "port"), ("receiver", "grpc_port")):
        if not 0 <= cfg[section][key] <= 65535:
            raise ConfigError(f"{section}.{key} out of range: {cfg[section][key]}")
    _check_evaluations(cfg["evaluations"])
    from .core.bearer import token_from_config

    try:
        token_from_config(cfg["receiver"])
    except ValueError as exc:
        raise ConfigError(f"receiver.{exc}") from None
    out = dict(cfg)
    out["storage"] = {**cfg["storage"], "dsn": dsn}
    return out


def _storage_dsn(storage: Mapping[str, Any]) -> str:
    """The storage section's DSN, a chDB directory made absolute; ConfigError for a wrong one."""
    if storage["ttl_days"] < 0:
        raise ConfigError("storage.ttl_days must be >= 0 (0 = no TTL)")
    if not storage["dsn"].startswith(("chdb://", "http://", "https://", "clickhouse://", "clickhouses://")):
        raise ConfigError(
            f"storage.dsn must be chdb:///path or http(s)://user:pass@host:port/db, got {storage['dsn']!r}"
        )
    return chdb_dsn(storage["dsn"])


_CHDB = "chdb://"
_IN_MEMORY = ("memory", ":memory:")  # clickhouse-connect's names for a chDB engine without a disk


def chdb_dsn(dsn: str) -> str:
    """``dsn`` with a chDB directory made absolute, any other DSN unchanged.

    ``chdb:///abs/path`` names an absolute directory. ``chdb://ragpulse-data/mine`` is how a
    shell user writes a directory relative to where they run the command, but clickhouse-connect
    reads it as the directory ``ragpulse-data`` holding a database ``mine``, which does not exist
    (a storage error the collector retries as if the server were down). So a relative directory
    (``~`` expanded) becomes
    ``chdb:///<current directory>/ragpulse-data/mine`` here, engine options (``?...``) kept; a
    DSN naming no directory, or clickhouse-connect's in-memory engine (ragpulse keeps its tables
    on disk, and every command opens them again), is refused in one line."""
    if not dsn.startswith(_CHDB):
        return dsn
    path, sep, options = dsn[len(_CHDB) :].partition("?")
    if path.startswith("/"):
        return dsn
    if not path:
        raise ConfigError(
            f"storage.dsn {dsn!r} names no directory: chdb:///absolute/path or chdb://relative/path"
        )
    if path.split("/", 1)[0] in _IN_MEMORY:
        raise ConfigError(f"storage.dsn {dsn!r}: ragpulse keeps its tables on disk, give chdb:///a/directory")
    return f"{_CHDB}{os.path.abspath(os.path.expanduser(path))}{sep}{options}"


def _check_variants_and_cost(cfg: Mapping[str, Any]) -> None:
    """variants.labels and cost.prices build (the errors name the key)."""
    from .core.variants import VariantLabels
    from .ingest.cost import Pricing

    try:
        VariantLabels.from_config(cfg.get("variants"))
        Pricing.from_config(cfg.get("cost"))
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None


def logs_url(endpoint: str) -> str:
    """The OTLP/HTTP logs URL: an endpoint without a path gets the standard ``/v1/logs``."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"evaluations.otlp_endpoint must be an http(s) URL, got {endpoint!r}")
    return endpoint.rstrip("/") + "/v1/logs" if parts.path in ("", "/") else endpoint


def _check_evaluations(section: Mapping[str, Any]) -> None:
    """The endpoint is an http(s) URL; thresholds name scores and lie in [0, 1]."""
    from .contract import SCORE_NAMES

    if section["otlp_endpoint"]:
        try:
            logs_url(section["otlp_endpoint"])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    for name, value in section["thresholds"].items():
        if name not in SCORE_NAMES:
            raise ConfigError(
                f"evaluations.thresholds: unknown score {name!r} (known: {', '.join(SCORE_NAMES)})"
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ConfigError(f"evaluations.thresholds.{name} must be a number in [0, 1], got {value!r}")


def load_config(
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Defaults <- YAML file <- ``overrides`` <- environment, validated."""
    cfg = default_config()
    if path is not None:
        p = Path(path)
        try:
            loaded = yaml.safe_load(p.read_text())
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {p}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {p} is not valid YAML: {str(exc).splitlines()[0]}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, Mapping):
            raise ConfigError(f"config file {p} must hold a mapping at the top level")
        for section, value in loaded.items():
            if section in cfg and not isinstance(value, Mapping):
                raise ConfigError(f"section {section!r} must be a mapping")
        cfg = merge(cfg, loaded)
    if overrides:
        cfg = merge(cfg, overrides)
    cfg = merge(cfg, _env_overrides(os.environ if env is None else env, cfg))
    return validate(cfg)
