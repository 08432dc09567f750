"""``ragpulse dashboards push``: provision the dashboards (and optionally the alerts) in Grafana."""

from __future__ import annotations

import argparse
import sys

from .errors import CliError

__all__ = ["register", "run_push"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("dashboards", help="Grafana dashboards of the monitoring mixin")
    sub = p.add_subparsers(dest="dashboards_command", metavar="SUBCOMMAND", required=True)
    push = sub.add_parser(
        "push",
        help="create or update the ragpulse folder and dashboards in Grafana (idempotent)",
        description=(
            "Create or update the folder and every ragpulse dashboard by uid through Grafana's HTTP API. "
            "A second run changes nothing and says so. --alerts also provisions the alert rules as "
            "Grafana-managed rules (alerting provisioning API), for teams without Prometheus alerting."
        ),
    )
    push.add_argument("--url", required=True, help="Grafana base URL, e.g. http://grafana:3000")
    auth = push.add_mutually_exclusive_group(required=True)
    auth.add_argument("--token", help="service-account token (Bearer)")
    auth.add_argument("--basic-auth", metavar="USER:PASSWORD", help="basic auth credentials")
    push.add_argument("--folder", default="ragpulse", help="folder title (default ragpulse; uid ragpulse)")
    push.add_argument(
        "--alerts", action="store_true", help="also provision the alert rules as Grafana-managed rules"
    )
    push.add_argument(
        "--prometheus-uid", help="Prometheus datasource uid for --alerts (default: Grafana's default)"
    )
    push.add_argument(
        "--config", help="objectives YAML to render from (default: the packaged objectives.yaml)"
    )
    push.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    push.set_defaults(func=run_push)


def run_push(args: argparse.Namespace) -> int:
    from ..monitoring.config import ObjectivesError, load_objectives
    from ..monitoring.dashboards import dashboard_documents
    from ..monitoring.push import PushError, connect, push
    from ..monitoring.rules import rule_documents

    basic = None
    if args.basic_auth:
        user, sep, password = args.basic_auth.partition(":")
        if not sep or not user:
            raise CliError("--basic-auth must be USER:PASSWORD")
        basic = (user, password)
    try:
        config = load_objectives(args.config)
    except (ObjectivesError, OSError) as exc:
        raise CliError(str(exc)) from None
    try:
        api = connect(args.url, token=args.token, basic_auth=basic)
        result = push(
            api,
            dashboard_documents(config),
            folder=args.folder,
            rule_docs=rule_documents(config) if args.alerts else None,
            prometheus_uid=args.prometheus_uid,
            dry_run=args.dry_run,
        )
    except PushError as exc:
        raise CliError(str(exc)) from None
    verb = (
        {"created": "would create", "updated": "would update", "unchanged": "unchanged"}
        if args.dry_run
        else {}
    )
    for kind, uid, action in result.changes:
        print(f"{kind} {uid}: {verb.get(action, action)}")
    counts = {a: sum(1 for *_, x in result.changes if x == a) for a in ("created", "updated", "unchanged")}
    if not result.changed:
        print(f"Nothing to change: {len(result.changes)} objects already up to date in {args.url}.")
    else:
        lead = "Dry run, nothing written: would create" if args.dry_run else "Created"
        print(f"{lead} {counts['created']}, {'would update' if args.dry_run else 'updated'} {counts['updated']}, "
              f"{counts['unchanged']} unchanged.")  # fmt: skip
    sys.stdout.flush()
    return 0
