"""Real services for ragpulse's tests and for local use by hand.

Each service is a small class that owns one child process: it starts it on
loopback with free ports, waits until it answers, and stops it by PID (the
whole process group, SIGTERM then SIGKILL). Test fixtures (tests/conftest.py)
wrap these; by hand::

    .venv/bin/python -m tests.services kafka        # runs until Ctrl-C
    .venv/bin/python -m tests.services prometheus --config prometheus.yml

Binaries come from ``scripts/provision.sh`` (cached under ``.cache/``). A
service that cannot start raises :class:`ServiceError` with the reason and
the tail of its log, so a test fails with something a person can act on.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "ROOT",
    "ServiceError",
    "ManagedProcess",
    "KafkaBroker",
    "Prometheus",
    "Alertmanager",
    "free_port",
    "helm_binary",
    "promtool_binary",
    "chromium_binary",
    "process_alive",
]

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache"
KAFKA_LIBS = CACHE / "kafka" / "libs"
PROVISION = ROOT / "scripts" / "provision.sh"


class ServiceError(RuntimeError):
    """A real service could not be provisioned, started or reached."""


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_alive(pid: int) -> bool:
    """True when a process with this PID exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@contextlib.contextmanager
def chdb_holder(db: Path) -> Iterator[subprocess.Popen]:
    """A child process that holds the chDB database at ``db`` until its stdin is closed.

    chDB allows one process per path, so while it runs every other open fails: how tests
    make storage unavailable. Yields once the child holds the path; always reaped.
    """
    code = (
        f"import clickhouse_connect,sys; c=clickhouse_connect.get_client(dsn='chdb://{db}'); "
        "c.command('SELECT 1'); print('held', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)


def release(holder: subprocess.Popen) -> None:
    """Let a :func:`chdb_holder` child go and wait for it to exit."""
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(30)


@contextlib.contextmanager
def reaped(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """Run the block with ``proc``; kill it afterwards if the block did not end it."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float) -> str:
    """Read the process's stdout until a line contains ``needle``; returns what was read."""
    seen = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise AssertionError(f"{needle!r} not seen:\n{''.join(seen)}")


def post_otlp(
    url: str,
    body: bytes,
    ctype: str = "application/x-protobuf",
    encoding: str | None = None,
    timeout: float = 10,
) -> tuple[int, bytes]:
    """POST an OTLP/HTTP request; returns the status and the body, error statuses included."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": ctype})
    if encoding:
        req.add_header("Content-Encoding", encoding)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@contextlib.contextmanager
def collect_no_kafka(
    cfg: dict[str, Any],
    path: Path,
    stop_s: float = 30.0,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[tuple[subprocess.Popen, str]]:
    """``ragpulse collect --no-kafka`` with ``cfg`` (written to ``path``; run in ``cwd`` with
    ``env`` added to the environment): yields the process and the first line it printed. A block
    that ends normally stops it with SIGTERM and checks the exit status is 0; whatever happens,
    it is killed if still running."""
    import yaml

    path.write_text(yaml.safe_dump(cfg))
    ragpulse = str(Path(sys.executable).parent / "ragpulse")
    proc = subprocess.Popen([ragpulse, "collect", "--no-kafka", "--config", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, cwd=cwd,
                            env={**os.environ, **env} if env else None)  # fmt: skip
    try:
        assert proc.stdout is not None
        yield proc, proc.stdout.readline()
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(stop_s) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _provision(what: str) -> None:
    result = subprocess.run(["bash", str(PROVISION), what], capture_output=True, text=True)
    if result.returncode != 0:
        raise ServiceError(f"provisioning {what} failed: {(result.stderr or result.stdout).strip()[-2000:]}")


def _tail(path: Path, limit: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return "(no log)"


def _cluster_id() -> str:
    """A random Kafka cluster id (URL-safe base64 UUID) that does not start with '-'.

    Kafka's own generator avoids a leading '-' because command-line parsers read
    such an id as a flag; StorageTool would refuse to format with it.
    """
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not candidate.startswith("-"):
            return candidate


class ManagedProcess:
    """One child process in its own process group, stopped by PID."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it for its lifetime
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
            )
        finally:
            log.close()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self) -> str:
        return _tail(self.log_path)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the process group, wait, then SIGKILL whatever is left."""
        if self.proc is None:
            return
        pid = self.proc.pid
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                continue
        # Reap anything else left in the group (e.g. a forked helper).
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc = None


class _ManagedService:
    """A service run as one :class:`ManagedProcess` in its own working directory."""

    workdir: Path
    process: ManagedProcess | None

    def stop(self) -> None:
        if self.process:
            self.process.stop()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


class KafkaBroker(_ManagedService):
    """A single-node Apache Kafka 4.x broker in KRaft mode on loopback.

    ``start()`` formats a fresh log directory with ``kafka.tools.StorageTool``
    and runs ``kafka.Kafka server.properties``; it returns once a client can
    fetch metadata. ``stop()`` + ``start()`` again keeps the data (same
    directory and ports), which tests use to simulate a broker outage.
    """

    def __init__(self, workdir: Path | None = None, partitions: int = 1, heap: str = "768m"):
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="ragpulse-kafka-"))
        self.port = free_port()
        self.controller_port = free_port()
        self.partitions = partitions
        self.heap = heap
        self.cluster_id = _cluster_id()
        self.process: ManagedProcess | None = None
        self._formatted = False

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def _java(self) -> str:
        java = shutil.which("java")
        if not java:
            raise ServiceError("java not found on PATH; Kafka needs a JDK 17+")
        return java

    def _classpath(self) -> str:
        if not list(KAFKA_LIBS.glob("kafka_2.13-*.jar")):
            _provision("kafka")
        return str(KAFKA_LIBS / "*")

    def _write_config(self) -> Path:
        logs = self.workdir / "data"
        props = self.workdir / "server.properties"
        props.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
                    f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    f"log.dirs={logs}",
                    f"num.partitions={self.partitions}",
                    "auto.create.topics.enable=true",
                    "offsets.topic.replication.factor=1",
                    "offsets.topic.num.partitions=4",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "share.coordinator.state.topic.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    "log.flush.interval.messages=100000",
                    "message.max.bytes=1048588",
                ]
            )
            + "\n"
        )
        log4j = self.workdir / "log4j2.properties"
        log4j.write_text(
            "status = warn\n"
            "appender.console.type = Console\n"
            "appender.console.name = STDOUT\n"
            "appender.console.layout.type = PatternLayout\n"
            "appender.console.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = WARN\n"
            "rootLogger.appenderRef.stdout.ref = STDOUT\n"
            "logger.kafka.name = kafka.server.KafkaRaftServer\n"
            "logger.kafka.level = INFO\n"
        )
        return props

    def _jvm(self, main: str, *args: str) -> list[str]:
        return [
            self._java(),
            f"-Xmx{self.heap}",
            "-Xms128m",
            "-XX:+UseG1GC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            "-cp",
            self._classpath(),
            main,
            *args,
        ]

    def start(self, timeout: float = 90.0) -> KafkaBroker:
        props = self._write_config()
        if not self._formatted:
            fmt = subprocess.run(
                self._jvm(
                    "kafka.tools.StorageTool",
                    "format",
                    f"--cluster-id={self.cluster_id}",
                    "-c",
                    str(props),
                    "--ignore-formatted",
                ),
                capture_output=True,
                text=True,
                timeout=120,
            )
            if fmt.returncode != 0:
                raise ServiceError(f"kafka storage format failed: {(fmt.stderr or fmt.stdout)[-2000:]}")
            self._formatted = True
        self.process = ManagedProcess(
            "kafka", self._jvm("kafka.Kafka", str(props)), self.workdir / "kafka.log"
        )
        self.process.start()
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        from kafka import KafkaAdminClient  # imported late: only tests need it

        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            assert self.process is not None
            if not self.process.running():
                raise ServiceError(f"kafka exited during start-up:\n{self.process.log_tail()}")
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=3000)
                try:
                    admin.list_topics()
                    if admin.describe_cluster().get("brokers"):
                        return
                finally:
                    admin.close()
            except Exception as exc:  # noqa: BLE001 - any failure means "not ready yet"
                last_error = exc
            time.sleep(0.5)
        self.stop()
        raise ServiceError(
            f"kafka not ready after {timeout:.0f}s ({last_error}):\n{_tail(self.workdir / 'kafka.log')}"
        )

    def create_topic(self, name: str, partitions: int | None = None) -> None:
        """Create a topic and wait until every partition has a leader."""
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic
        from kafka.errors import TopicAlreadyExistsError

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            try:
                admin.create_topics([NewTopic(name, partitions or self.partitions, 1)])
            except TopicAlreadyExistsError:
                pass
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                meta = admin.describe_topics([name])
                parts = meta[0].get("partitions", []) if meta else []
                if parts and all(p.get("leader_id", -1) >= 0 for p in parts):
                    return
                time.sleep(0.2)
            raise ServiceError(f"topic {name} has no leader after 30s")
        finally:
            admin.close()


def _provisioned(name: str, find: Any) -> str:
    """``find()``'s path of a tool, provisioning ``name`` (scripts/provision.sh) when it finds none."""
    if not find():
        _provision(name)
    path = find()
    if not path:
        raise ServiceError(f"{name} not found after provisioning")
    return str(path)


def promtool_binary() -> str:
    """Path to promtool, installing Debian's prometheus package if missing."""
    return _provisioned("prometheus", lambda: shutil.which("promtool"))


def chromium_binary() -> str:
    """Path to headless Chromium (for report checks), installing Debian's chromium package if missing."""
    return _provisioned("chromium", lambda: shutil.which("chromium"))


def helm_binary() -> str:
    """Path to the cached helm binary, building it if missing."""
    helm = CACHE / "bin" / "helm"
    return _provisioned("helm", lambda: helm if helm.exists() else None)


def _wait_ready(service: Any, process: ManagedProcess, url: str, timeout: float) -> None:
    """Poll ``url`` until it answers 200; stop ``service`` and raise with its log tail otherwise."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.running():
            raise ServiceError(f"{process.name} exited during start-up:\n{process.log_tail()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    service.stop()
    raise ServiceError(f"{process.name} not ready after {timeout:.0f}s:\n{_tail(process.log_path)}")


class _LoopbackServer(_ManagedService):
    """One server from a Debian package on a free loopback port, with a config file the caller writes."""

    command = ""  # the binary on PATH
    provision = ""  # the scripts/provision.sh target that installs it
    config_name = ""

    def __init__(self, config_text: str, workdir: Path | None = None):
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"ragpulse-{self.command}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.config_text = config_text
        self.process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    storage_flag = ""  # the flag naming its data directory ...
    storage_dir = ""  # ... under workdir

    def _argv(self, binary: str, config: Path) -> list[str]:
        return [
            binary,
            f"--config.file={config}",
            f"{self.storage_flag}={self.workdir / self.storage_dir}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            *self._extra_argv(),
        ]

    def _extra_argv(self) -> list[str]:
        return []

    def start(self, timeout: float = 30.0) -> Any:
        """Start and wait until ``/-/ready`` answers; returns self."""
        if not shutil.which(self.command):
            _provision(self.provision)
        binary = shutil.which(self.command)
        if not binary:
            raise ServiceError(f"{self.command} not found after provisioning")
        config = self.workdir / self.config_name
        config.write_text(self.config_text)
        self.process = ManagedProcess(
            self.command, self._argv(binary, config), self.workdir / f"{self.command}.log"
        )
        self.process.start()
        _wait_ready(self, self.process, f"{self.url}/-/ready", timeout)
        return self


class Prometheus(_LoopbackServer):
    """A real Prometheus server on loopback with a config the caller writes."""

    command, provision, config_name = "prometheus", "prometheus", "prometheus.yml"
    storage_flag, storage_dir = "--storage.tsdb.path", "tsdb"

    def __init__(
        self,
        config_text: str,
        workdir: Path | None = None,
        rule_files: list[Path] | None = None,
        extra_args: list[str] | None = None,
    ):
        super().__init__(config_text, workdir)
        self.rule_files = rule_files or []
        self.extra_args = extra_args or []

    def _extra_argv(self) -> list[str]:
        return ["--web.enable-lifecycle", *self.extra_args]


class Alertmanager(_LoopbackServer):
    """A real Alertmanager (Debian's prometheus-alertmanager) on loopback, clustering off."""

    command, provision, config_name = "prometheus-alertmanager", "alertmanager", "alertmanager.yml"
    storage_flag, storage_dir = "--storage.path", "data"

    def _extra_argv(self) -> list[str]:
        return ["--cluster.listen-address="]


def main() -> None:
    """Run one service in the foreground until Ctrl-C (by-hand use)."""
    parser = argparse.ArgumentParser(prog="python -m tests.services", description=__doc__.splitlines()[0])
    parser.add_argument("service", choices=["kafka", "prometheus"])
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--config", type=Path, help="prometheus.yml to run with (prometheus only)")
    args = parser.parse_args()
    if args.service == "kafka":
        svc: KafkaBroker | Prometheus = KafkaBroker(partitions=args.partitions).start()
        print(f"kafka ready at {svc.bootstrap} (pid {svc.pid}); Ctrl-C stops it", flush=True)
    else:
        text = args.config.read_text() if args.config else "global:\n  scrape_interval: 15s\n"
        svc = Prometheus(text).start()
        print(
            f"prometheus ready at {svc.url} (pid {svc.process.pid if svc.process else '?'}); Ctrl-C stops it",
            flush=True,
        )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        svc.cleanup()


if __name__ == "__main__":
    main()
