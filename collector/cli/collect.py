"""``ragpulse collect``: the collector service.

With Kafka (default): consume ``ragpulse.spans``, store RAG traces, sample,
queue for judging, and (``judge.enabled``) run judge workers on
``ragpulse.judge``. ``--role ingest`` or ``--role judge`` runs one half only.
With ``--no-kafka``: own an embedded (chDB) database and take spans over
OTLP/HTTP (``POST /v1/traces``), and OTLP/gRPC with ``receiver.grpc_enabled``,
with the same pipeline and an in-process judge queue. The config is validated first; a bad one fails with a one-line reason.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import sys
import threading
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("collect", help="run the collector service", description=__doc__)
    parser.add_argument("--config", help="YAML config (defaults: collector/default_config.yaml)")
    parser.add_argument(
        "--role", choices=["all", "ingest", "judge"], default="all", help="what to run (Kafka mode)"
    )
    parser.add_argument(
        "--no-kafka", action="store_true", help="embedded mode: OTLP/HTTP receiver + chDB, no Kafka"
    )
    parser.add_argument("--check", action="store_true", help="validate the config and exit")
    parser.add_argument("--log-level", default="INFO")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..config import ConfigError, load_config
    from .errors import CliError

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    if args.check:
        print("config ok")
        return 0
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # `kill -USR1 <pid>` prints every thread's stack to stderr: how to see where a stuck
    # collector is waiting without stopping it.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # chDB imports numpy, whose OpenBLAS starts a thread per core that spins after use; the
    # collector does no linear algebra, and on a small machine those spins take CPU from it.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if args.no_kafka:
        return _run_embedded(cfg)
    return _run_kafka(cfg, args.role)


def _judge(cfg: dict[str, Any]) -> Any:
    from ..judge.service.worker import load_judge
    from .errors import CliError

    try:
        return load_judge(cfg["judge"]["judge"], cfg["judge"]["settings"])
    except ImportError as exc:
        raise CliError(f"judge {cfg['judge']['judge']!r} unavailable: {exc}") from None


def _run_kafka(cfg: dict[str, Any], role: str) -> int:
    from ..core.metrics import Metrics
    from ..core.variants import VariantLabels
    from ..judge.service.evaluation_events import EvaluationEvents
    from ..judge.service.kafka_loop import KafkaJudgeService
    from ..kafka.collector import KafkaCollector
    from ..kafka.topics import ensure_topics, quiet_missing_topics
    from ..serve.alertmanager import start_from_config
    from ..serve.server import MetricsServer
    from ..storage.clickhouse import Storage

    quiet_missing_topics(cfg)
    ensure_topics(cfg)
    st = cfg["storage"]
    metrics = Metrics(VariantLabels.from_config(cfg.get("variants")))
    # One Storage (one client, serialized by its lock) for everything in this process:
    # a chDB path can only be owned once.
    storage = Storage(st["dsn"], st["database"], st["ttl_days"])
    judges: list[KafkaJudgeService] = []
    events = None
    if (role == "all" and cfg["judge"]["enabled"]) or role == "judge":
        judge = _judge(cfg)
        if role == "judge":
            storage.apply_schema()
        events = EvaluationEvents.from_config(cfg, metrics)
        judges = [
            KafkaJudgeService(cfg, judge, storage, metrics, events).start()
            for _ in range(cfg["judge"]["workers"])
        ]
    if role == "judge":
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        server = MetricsServer(
            metrics,
            cfg["metrics"]["host"],
            cfg["metrics"]["port"],
            ready=lambda: all(j.alive() for j in judges),
            stall_s=cfg["metrics"]["stall_s"],
        ).start()
        while not stop.wait(0.5):
            if not any(j.alive() for j in judges):
                print("ragpulse collect: error: judge workers stopped", file=sys.stderr)
                return 1
        for j in judges:
            j.stop()
        if events is not None:
            events.shutdown()
        server.stop()
        return 0
    collector = KafkaCollector(cfg, storage=storage, metrics=metrics)
    collector.install_signal_handlers()  # before anything slow; run() re-installs after chDB opens
    receivers = _kafka_receivers(cfg, metrics)
    alerts = start_from_config(cfg, storage)
    try:
        rc = collector.run()
    finally:
        for receiver in receivers:
            receiver.stop()
        if alerts is not None:
            alerts.stop()
        for j in judges:
            j.stop()
        if events is not None:
            events.shutdown()
    logging.getLogger("ragpulse.collect").info("collector stopped (exit status %d)", rc)
    return rc


def _kafka_receivers(cfg: dict[str, Any], metrics: Any) -> list[Any]:
    """OTLP/HTTP (``receiver.enabled``) and OTLP/gRPC (``receiver.grpc_enabled``) in Kafka mode: each
    request is forwarded to the spans topic, one record per trace, before it is answered."""
    r = cfg["receiver"]
    if not (r["enabled"] or r["grpc_enabled"]):
        return []
    from kafka import KafkaProducer

    from ..core.bearer import token_from_config
    from ..ingest.otlp import Limits, split_by_trace
    from ..kafka.clients import kafka_client_settings
    from ..serve.otlp_http import OtlpHttpReceiver
    from ..serve.otlp_request import OtlpIntake

    producer = KafkaProducer(**kafka_client_settings(cfg), acks="all", linger_ms=5, max_request_size=8 << 20)
    topic = cfg["kafka"]["spans_topic"]

    def forward(body: bytes, kind: str) -> bool:
        try:
            if kind == "proto":
                futures = [producer.send(topic, key=k.encode(), value=v) for k, v in split_by_trace(body)]
            else:
                futures = [producer.send(topic, value=body)]
            for f in futures:
                f.get(timeout=10)  # acknowledged before the client gets its 200
            return True
        except Exception:  # noqa: BLE001 - the client is told to retry (503)
            logging.getLogger("ragpulse.collect").exception("forwarding OTLP to Kafka failed")
            return False

    intake = OtlpIntake(
        lambda spans: True,
        Limits(**cfg["limits"]),
        metrics,
        raw_submit=forward,
        auth_token=token_from_config(r),
    )
    receivers: list[Any] = []
    if r["grpc_enabled"]:
        from ..serve.otlp_grpc import OtlpGrpcReceiver

        grpc_receiver = OtlpGrpcReceiver(intake, r["host"], r["grpc_port"], int(r["grpc_workers"])).start()
        receivers.append(grpc_receiver)
        logging.getLogger("ragpulse.collect").info("OTLP/gRPC receiver on %s", grpc_receiver.url)
    if not r["enabled"]:
        return receivers
    receiver = OtlpHttpReceiver(
        intake, r["host"], r["port"], float(r["read_timeout_s"]), int(r["max_inflight_bytes"])
    ).start()
    logging.getLogger("ragpulse.collect").info("OTLP/HTTP receiver on %s/v1/traces", receiver.url)
    return [*receivers, receiver]


def _run_embedded(cfg: dict[str, Any]) -> int:
    from ..embedded.collector import EmbeddedCollector
    from ..serve.alertmanager import start_from_config

    dsn = cfg["storage"]["dsn"]
    from .errors import CliError

    if not dsn.startswith("chdb://"):
        raise CliError("--no-kafka needs storage.dsn = chdb:///path (an embedded database)")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    collector = EmbeddedCollector(
        dsn[len("chdb://") :],
        config={k: v for k, v in cfg.items() if k != "storage"}
        | {"storage": {k: v for k, v in cfg["storage"].items() if k != "dsn"}},
        metrics_port=cfg["metrics"]["port"],
        metrics_host=cfg["metrics"]["host"],
        judge=cfg["judge"]["judge"] if cfg["judge"]["enabled"] else None,
        receiver_port=cfg["receiver"]["port"],
        install_sink=False,
        grpc_port=cfg["receiver"]["grpc_port"] if cfg["receiver"]["grpc_enabled"] else None,
    )
    try:
        collector.start()
    except Exception as exc:  # noqa: BLE001 - reported as one line
        raise CliError(f"cannot start: {str(exc).splitlines()[0]}") from None
    for sig in (signal.SIGTERM, signal.SIGINT):  # again: opening chDB installs its own handlers
        signal.signal(sig, lambda *_: stop.set())
    alerts = start_from_config(cfg, collector.storage)
    grpc = f" and {collector.grpc_url}" if collector.grpc_url else ""
    print(
        f"collecting on {collector.receiver_url}/v1/traces{grpc}; metrics on {collector.metrics_url}/metrics",
        flush=True,
    )
    stop.wait()
    if alerts is not None:
        alerts.stop()
    collector.stop(timeout=float(cfg["shutdown"]["grace_s"]))
    return 0
