"""The defrag agent's command line: what the `ufcctl-etcd-defrag@<cluster>` timer runs on a member.

`python3 -m ufcctl.nodeside.etcd_agent --config FILE` reads the config roles/etcd wrote, runs the
defrag procedure (ufcctl.nodeside.etcd_defrag) on its own member only, logs one line per step and
the result as JSON on stdout (the journal), and writes the last run as node exporter textfile
metrics. `--check-rule RULE` parses a rule and says whether it is valid.

Runs on the nodes: imports follow the rule in ufcctl/nodeside/__init__.py.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Callable

from ufcctl.domain.etcd import defrag_metrics
from ufcctl.domain.etcd.rule import RuleError, parse_rule
from ufcctl.engine.etcd_client import ClusterClient, EtcdError
from ufcctl.nodeside.etcd_defrag import DefragRun, Log
from ufcctl.nodeside.etcd_defrag_config import AgentConfig, load_config
from ufcctl.nodeside.files import read_text_if_readable, write_atomic


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ufcctl-etcd-defrag", description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="agent config (JSON) written by roles/etcd")
    parser.add_argument("--dry-run", action="store_true", help="decide and report, change nothing")
    parser.add_argument("--check-rule", metavar="RULE", help="parse RULE, print it, exit 0 if valid")
    args = parser.parse_args(argv)
    if args.check_rule is not None:
        try:
            print(f"valid rule: {parse_rule(args.check_rule).text}")
            return 0
        except RuleError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    if not args.config:
        parser.error("--config is required")
    cfg = load_config(args.config, args.dry_run)

    def log(line: str) -> None:  # stdout: systemd puts it in the journal
        print(line, flush=True)

    client = ClusterClient(cfg.cluster, cfg.endpoints, cfg.tls)
    return run_agent(cfg, client, log)


def run_agent(
    cfg: AgentConfig,
    client: ClusterClient,
    log: Log,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> int:
    """One run and its exit code (0 ok, 1 a member failed or the run was aborted), then the metrics.

    An unexpected exception (a bug) writes no metrics: the last run time then ages and the Overdue
    alert fires, which is the point of it."""
    started = clock()
    # the duration from a monotonic clock: a wall-clock step during a run that can last two hours
    # must not show as a negative or huge duration
    began = monotonic()
    try:
        report = DefragRun(cfg, client, log, clock=clock, sleep=sleep).run()
    except EtcdError as err:
        log(f"cluster={cfg.cluster} action=aborted error={err}")
        code = 1
    else:
        log("result " + json.dumps(report.to_json(), sort_keys=True))
        code = 1 if report.failed else 0
    duration = monotonic() - began
    write_metrics(cfg, started, duration, code == 0, log)
    return code


def write_metrics(cfg: AgentConfig, started: float, duration: float, ok: bool, log: Log) -> None:
    """Replace <textfile_dir>/ufcctl-etcd-defrag-<cluster>.prom whole (nodeside/files.py); never
    raises. Metrics are a side channel: a missing directory or a full disk is one log line and leaves
    the exit code alone. A dry run changed nothing, so it reports nothing either. An unreadable
    previous file restarts the success time from the next success rather than blocking the write."""
    if not cfg.textfile_dir or cfg.dry_run:
        return
    path = os.path.join(cfg.textfile_dir, defrag_metrics.file_name(cfg.cluster))
    try:
        member = cfg.member or socket.gethostname()
        text = defrag_metrics.render(cfg.cluster, member, started, duration, ok, read_text_if_readable(path))
        write_atomic(path, text)
    except OSError as err:
        log(f"cluster={cfg.cluster} action=metrics-not-written path={path} error={err}")


if __name__ == "__main__":
    sys.exit(main())
