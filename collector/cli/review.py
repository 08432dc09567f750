"""``ragpulse review``: the browser review queues (docs/review.md), and ``review export-labels``.

``ragpulse review --db DSN --evalset PATH`` serves the review app on
127.0.0.1:8470 (``--host``/``--port``); any other address needs a token
(``--token`` or RAGPULSE_REVIEW_TOKEN), checked on every request. Requests must
name the bound address, localhost, 127.0.0.1 or [::1] as their Host, or a name
given with ``--allowed-host`` (repeatable); writes must come from the page's own
origin (docs/review.md#security). Ctrl-C stops it.
``ragpulse review export-labels -o labels.jsonl`` writes the reviewers' labels
in the labels-file format ``ragpulse calibrate`` and ``ragpulse judge refit --labels`` read;
``--traces FILE`` also writes the labelled traces (``judge refit --traces``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from ..review.slices import DEFAULT_POOL
from .errors import CliError, storage_errors
from .export import open_storage, parse_time

__all__ = ["register", "add_scope_options", "review_rows", "review_scope"]

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def add_scope_options(p: argparse.ArgumentParser) -> None:
    """``--db``, ``--config``, ``--service``, ``--since``, ``--judge``: which judged traces and labels."""
    p.add_argument("--db", help="chdb:///path, a database directory, or http://user:pass@host:8123/db")
    p.add_argument("--config", help="collector YAML config (its storage section; --db overrides)")
    p.add_argument("--service", help="only this service's traces")
    p.add_argument("--since", help="only traces since: 7d, 24h or an ISO time (default: all)")
    p.add_argument("--judge", help="judge id (default: the judge with the most labels, else judgments)")


def review_scope(args: argparse.Namespace, store: Any) -> Any:
    """The :class:`~ragpulse.collector.review.store.Scope` of the scope options."""
    from ..review.dataset import NoLabels, resolve_scope

    since = parse_time(args.since, time.time_ns()) if args.since else None
    try:
        return resolve_scope(store, args.judge, args.service, since)
    except NoLabels as exc:
        raise CliError(str(exc)) from None


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "review",
        help="review eval cases and label judgments in the browser",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "action", nargs="?", choices=["serve", "export-labels"], default="serve", help="default: serve"
    )
    add_scope_options(p)
    p.add_argument("--evalset", help="serve: the eval-set JSONL whose proposed cases are reviewed")
    p.add_argument("--host", default="127.0.0.1", help="serve: address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8470, help="serve: port (default 8470; 0 = any free port)")
    p.add_argument("--token", help="serve: required on every request (default $RAGPULSE_REVIEW_TOKEN)")
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="serve: a Host name the server answers besides its address and loopback "
        "(repeatable; *.example.com matches subdomains)",
    )
    p.add_argument("--reviewer", help="serve: default reviewer name (default $USER; the page can change it)")
    p.add_argument("--threshold", type=float, help="serve: the judge's claim verdict threshold")
    p.add_argument(
        "--agreement-window", type=int, default=200, help="serve: claim labels behind the agreement gauge"
    )
    p.add_argument(
        "--random-pool",
        type=float,
        default=DEFAULT_POOL,
        help=f"serve: share of the judged traces in the judgments queue's random slice (default {DEFAULT_POOL})",
    )
    p.add_argument("-o", "--output", help="export-labels: the labels JSONL to write")
    p.add_argument(
        "--traces",
        help="export-labels: also write the labelled traces here (`ragpulse judge refit --traces`)",
    )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..storage.clickhouse import StorageUnavailable

    if args.action == "export-labels":
        if not args.output:
            raise CliError("export-labels needs -o FILE")
        return _guard(_export_labels, args, StorageUnavailable)
    return _guard(_serve, args, StorageUnavailable)


def _guard(fn: Any, args: argparse.Namespace, unavailable: type[Exception]) -> int:
    try:
        return int(fn(args))
    except unavailable as exc:
        raise CliError(str(exc).splitlines()[0]) from None


def review_rows(args: argparse.Namespace) -> tuple[Any, list[dict[str, Any]], str]:
    """The scope the scope options name, the labels-file rows of its review labels (what
    ``review export-labels`` writes and ``calibrate --from-reviews`` reads) and the store's DSN
    (without its password)."""
    from ..review.dataset import NoLabels, calibration_dataset
    from ..review.store import ReviewStore

    storage = open_storage(args)
    with storage_errors(storage, NoLabels):
        storage.apply_schema()
        store = ReviewStore(storage)
        scope = review_scope(args, store)
        rows = calibration_dataset(store, scope)
    return scope, rows, storage._safe_dsn()


def _export_labels(args: argparse.Namespace) -> int:
    scope, rows, _dsn = review_rows(args)
    out = Path(args.output)
    with out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    labelled = sum(1 for r in rows if "human" in r)
    print(
        f"wrote {out}: {labelled} labelled and {len(rows) - labelled} unlabelled judged traces, judge {scope.judge_id}"
    )
    if args.traces:
        from .refit_labels import write_traces

        print(f"wrote {args.traces}: {write_traces(args, rows, scope.judge_id, args.traces)} labelled traces")
    return 0


def _checked_evalset(path_text: str | None) -> Path:
    from ..eval.files import EvalInputError
    from ..review.cases import read_cases

    if not path_text:
        raise CliError("serving needs --evalset PATH (the eval set whose proposed cases are reviewed)")
    path = Path(path_text)
    if not path.is_file():
        raise CliError(f"no such eval set: {path}")
    if path.stat().st_size:
        try:
            read_cases(path)
        except EvalInputError as exc:
            raise CliError(f"eval set fails docs/evalset.schema.json: {exc}") from None
    return path


def _mean_below(judge_id: str) -> float | None:
    """The local judge's response rule threshold (the queue's response-boundary class); None
    for a judge without one."""
    if not judge_id.startswith("local"):
        return None
    from ..judge.local.response import load_response_rule

    return load_response_rule().mean_below


def _threshold(args: argparse.Namespace, judge_id: str) -> float:
    if args.threshold is not None:
        if not 0.0 < args.threshold < 1.0:
            raise CliError("--threshold must lie strictly between 0 and 1")
        return float(args.threshold)
    if judge_id.startswith("local"):
        from ..judge.local.claim_model import load_claim_model

        return load_claim_model().threshold
    return 0.5


def _allowed_hosts(args: argparse.Namespace) -> tuple[str, ...]:
    """The Host names the server answers (:func:`..review.guard.allowed_hosts`); on a wildcard
    address, a reminder that clients' names must be listed."""
    from ..review.guard import allowed_hosts

    try:
        hosts = tuple(allowed_hosts(args.host, args.allowed_host))
    except ValueError as exc:
        raise CliError(f"--allowed-host: {exc}") from None
    if args.host in ("0.0.0.0", "::") and not args.allowed_host:
        print(
            f"ragpulse review: answering only requests for {', '.join(hosts)}: "
            "add --allowed-host NAME for each name clients use to reach this machine",
            file=sys.stderr,
        )
    return hosts


def _serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ..review.app import ReviewSettings, build_app
    except ImportError as exc:
        raise CliError(
            f"needs the review extra ({exc.name} is missing): pip install 'ragpulse[review]'"
        ) from None
    from ..review.store import ReviewStore

    evalset = _checked_evalset(args.evalset)
    token = args.token or os.environ.get("RAGPULSE_REVIEW_TOKEN") or None
    if args.host not in _LOCAL_HOSTS and not token:
        raise CliError(f"binding {args.host} needs a token: --token T or RAGPULSE_REVIEW_TOKEN")
    if args.agreement_window < 1:
        raise CliError("--agreement-window must be at least 1")
    if not 0.0 < args.random_pool < 1.0:
        raise CliError("--random-pool must lie strictly between 0 and 1")
    hosts = _allowed_hosts(args)
    storage = open_storage(args)
    try:
        storage.apply_schema()
        store = ReviewStore(storage)
        scope = review_scope(args, store)
        settings = ReviewSettings(
            evalset=evalset, reviewer=args.reviewer or os.environ.get("USER") or "reviewer",
            judge_id=scope.judge_id, threshold=_threshold(args, scope.judge_id), token=token,
            service=scope.service, since_ns=scope.since_ns, last_n=args.agreement_window, allowed_hosts=hosts,
            random_pool=args.random_pool, mean_below=_mean_below(scope.judge_id),
        )  # fmt: skip
        app = build_app(store, settings)
        try:
            sock = socket.create_server(
                (args.host, args.port), family=socket.AF_INET6 if ":" in args.host else socket.AF_INET
            )
        except OSError as exc:
            raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
        port = sock.getsockname()[1]
        host = f"[{args.host}]" if ":" in args.host else args.host
        url = f"http://{host}:{port}/" + (f"?token={token}" if token else "")
        print(
            f"ragpulse review: {url}  (eval set {evalset}, judge {scope.judge_id}; Ctrl-C stops)", flush=True
        )
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False))
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:
            pass  # uvicorn shuts down gracefully on Ctrl-C, then re-raises the signal
        print("ragpulse review: stopped", file=sys.stderr)
    finally:
        storage.close()
    return 0
