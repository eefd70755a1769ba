"""What Ansible itself costs on the controller per host-task, one setting at a time (issue 29).

A play of K tasks over H hosts with `ansible_connection: local` (no SSH: what is left is Ansible's
own per-host-task cost, a forked worker, the task's templating, the result's way back, the
callbacks), run for two task counts; the difference divided by H x (K2 - K1) is the cost of one
host-task, and the K1 run's remainder is the fixed part (process start, inventory, play load).
Controller CPU is counted in a cgroup (benchlib.measured: the process and every descendant).

Variants, each against `ufcctl`, ufcctl's ansible.cfg as ufcctl runs it:
  defaults           an empty ansible.cfg (Ansible's defaults: forks 5, poll 0.001, default callback)
  ufcctl cfg         ansible.cfg of this checkout, plain ansible-playbook
  no callbacks       ufcctl cfg without profile_tasks (callbacks_enabled empty)
  json result format ufcctl cfg with callback_result_format json instead of yaml
  poll 0.001         ufcctl cfg with Ansible's default internal_poll_interval
  facts              ufcctl cfg, the play gathering facts (gather_facts: true): per host, not per task
  ufcctl runner      ufcctl's own adapter (ufcctl.engine.runner.run_playbook: ansible-runner with
                     the events ufcctl asks for, folded by engine/run_events.py); also printed: the
                     CPU of ufcctl's own process (reading the events: pexpect, runner, the sink)
  awx_display        ufcctl cfg, plain ansible-playbook with ansible-runner's event callback as
                     ansible-runner sets it (per-event partial files, base64 framed stdout) but
                     nobody reading the events: the callback's cost inside ansible-playbook
  runner ok hidden   ufcctl runner with display_ok_hosts off (the default callback under
                     awx_display renders no ok result; ufcctl never shows that text)
  runner @ DIR       with --baseline DIR: ufcctl runner of another checkout (e.g. main's), same run
Tasks are `ansible.builtin.debug` (no module run: the worker's cost alone) or, with
`--task command`, `ansible.builtin.command: /bin/true` (a module run too; with a local connection
the module runs on this machine, so this counts the node's side as well).

    python tests/benchmarks/bench_ansible_overhead.py [--hosts 10] [--tasks 2,12] [--task debug|command]
        [--repeat 1] [--only VARIANT,...] [--baseline DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import check, machine, measured, take_record  # noqa: E402

BIN = Path(sys.executable).parent
TASKS = {
    "debug": {"ansible.builtin.debug": {"msg": "{{ inventory_hostname }} {{ item_n }}"}},
    "command": {"ansible.builtin.command": {"argv": ["/bin/true"]}, "changed_when": False},
}

RUNNER_DRIVER = """
import sys, yaml
from pathlib import Path
from ufcctl.domain.inventory.model import Host
from ufcctl.engine.runner import RunOptions, run_playbook
inv = yaml.safe_load(Path(sys.argv[2]).read_text())
hosts = [Host(name=n, vars=v, groups=frozenset({"all", "bench"})) for n, v in inv["all"]["hosts"].items()]
result = run_playbook(Path(sys.argv[1]), hosts, RunOptions(forks=int(sys.argv[3])))
import resource
own = resource.getrusage(resource.RUSAGE_SELF)
print(f"ufcctl process CPU {own.ru_utime + own.ru_stime:.4f}")
sys.exit(0 if result.rc == 0 else 1)
"""
OWN_CPU = "ufcctl process CPU "


def _play(tmp: Path, tasks: int, task: str, facts: bool) -> Path:
    body = [{"name": f"task {n}", **TASKS[task], "vars": {"item_n": n}} for n in range(tasks)]
    play = [{"name": "bench", "hosts": "all", "gather_facts": facts, "tasks": body}]
    path = tmp / f"play-{task}-{tasks}-{int(facts)}.yml"
    path.write_text(yaml.safe_dump(play, sort_keys=False))
    return path


def main() -> None:
    record = take_record("bench_ansible_overhead")
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--tasks", default="2,12", help="two task counts K1,K2")
    parser.add_argument("--task", choices=sorted(TASKS), default="debug")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", help="comma-separated variant names (default: all)")
    parser.add_argument("--baseline", type=Path, help="a checkout whose ufcctl runner runs as a variant too")
    args = parser.parse_args()
    k1, k2 = (int(k) for k in args.tasks.split(","))
    print(machine(), flush=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
        inventory = tmp / "hosts.yml"
        hosts = {f"h{i:03d}": local for i in range(args.hosts)}
        inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
        (tmp / "empty.cfg").write_text("[defaults]\n")
        base = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
        base["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        ufc = {**base, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_FORKS": str(args.hosts)}
        # an empty ANSIBLE_CALLBACKS_ENABLED makes ansible-core 2.19 fail: a copy without the line
        cfg = (ROOT / "ansible.cfg").read_text()
        cfg = cfg.replace("roles_path = roles", f"roles_path = {ROOT / 'roles'}")
        (tmp / "no-callbacks.cfg").write_text(
            "\n".join(line for line in cfg.splitlines() if not line.startswith("callbacks_enabled")))
        import ansible_runner  # the callback directory ansible-runner puts on ANSIBLE_CALLBACK_PLUGINS

        callback_dir = Path(ansible_runner.__file__).parent / "display_callback" / "callback"
        (tmp / "events").mkdir()
        awx = {**ufc, "ANSIBLE_STDOUT_CALLBACK": "awx_display", "ANSIBLE_CALLBACK_PLUGINS": str(callback_dir),
               "AWX_ISOLATED_DATA_DIR": str(tmp / "events"), "RUNNER_OMIT_EVENTS": "False",
               "RUNNER_ONLY_FAILED_EVENTS": "False"}
        runner_env = {**base, "UFC_STATE_DIR": str(tmp / "state")}
        variants: dict[str, tuple[dict[str, str], bool, str]] = {
            "defaults": ({**base, "ANSIBLE_CONFIG": str(tmp / "empty.cfg"), "ANSIBLE_FORKS": str(args.hosts)},
                         False, "playbook"),
            "ufcctl cfg": (ufc, False, "playbook"),
            "no callbacks": ({**ufc, "ANSIBLE_CONFIG": str(tmp / "no-callbacks.cfg")}, False, "playbook"),
            "json result format": ({**ufc, "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}, False, "playbook"),
            "poll 0.001": ({**ufc, "ANSIBLE_INTERNAL_POLL_INTERVAL": "0.001"}, False, "playbook"),
            "facts": (ufc, True, "playbook"),
            "ufcctl runner": (runner_env, False, "runner"),
            "awx_display": (awx, False, "playbook"),
            "runner ok hidden": ({**runner_env, "ANSIBLE_DISPLAY_OK_HOSTS": "False"}, False, "runner"),
        }
        if args.baseline:
            path = (str(args.baseline.resolve()), os.environ.get("PYTHONPATH"))
            other = {**runner_env, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
            variants[f"runner @ {args.baseline.name}"] = (other, False, "runner")
        if args.only:
            wanted = {"ufcctl cfg", *args.only.split(",")}  # the reference of every ratio
            variants = {k: v for k, v in variants.items() if k in wanted}
        rows: dict[str, tuple[float, float, float, float]] = {}
        own_rows: dict[str, float] = {}
        cpus: dict[str, dict[int, list[float]]] = {name: {k1: [], k2: []} for name in variants}
        walls: dict[str, dict[int, list[float]]] = {name: {k1: [], k2: []} for name in variants}
        owns: dict[str, dict[int, list[float]]] = {name: {k1: [], k2: []} for name in variants}
        # rounds over every variant: a load that changes during the run weighs on each alike
        for _ in range(args.repeat):
            for name, (env, facts, how) in variants.items():
                for k in (k1, k2):
                    play = _play(tmp, k, args.task, facts)
                    if how == "runner":
                        cmd = [sys.executable, "-c", RUNNER_DRIVER, str(play), str(inventory),
                               str(args.hosts)]
                    else:
                        cmd = [str(BIN / "ansible-playbook"), "-i", str(inventory), str(play)]
                    run = measured(cmd, env, ROOT)
                    check(f"{name} K={k}", run.proc)
                    cpus[name][k].append(run.cpu)
                    walls[name][k].append(run.wall)
                    own = [ln for ln in run.proc.stdout.splitlines() if ln.startswith(OWN_CPU)]
                    if own:
                        owns[name][k].append(float(own[-1][len(OWN_CPU):]))
            print(f"  round done, load {os.getloadavg()[0]:.1f}", flush=True)
        for name in variants:
            c1, c2 = statistics.median(cpus[name][k1]), statistics.median(cpus[name][k2])
            per = (c2 - c1) / (args.hosts * (k2 - k1))
            fixed = c1 - per * args.hosts * k1
            rows[name] = (per, fixed, c1, c2)
            extra = ""
            if owns[name][k1] and owns[name][k2]:
                own_per = (statistics.median(owns[name][k2]) - statistics.median(owns[name][k1])) / (
                    args.hosts * (k2 - k1))
                own_rows[name] = own_per
                extra = f", ufcctl's own process {own_per * 1000:.1f} ms of it"
            print(f"  {name:<20} per host-task {per * 1000:7.1f} ms CPU{extra}, fixed {fixed:5.2f} CPU-s "
                  f"(K={k1}: {c1:.2f}, K={k2}: {c2:.2f} CPU-s; "
                  f"wall {statistics.median(walls[name][k2]):.1f} s)", flush=True)
    print(machine())
    print(f"{args.hosts} local hosts, '{args.task}' tasks, K = {k1} and {k2}, repeat {args.repeat}")
    ref = rows["ufcctl cfg"][0]
    for name, (per, fixed, _c1, _c2) in rows.items():
        print(f"  {name:<20} {per * 1000:7.1f} ms per host-task ({per / ref:4.2f}x ufcctl cfg), "
              f"fixed {fixed:.2f}")
        record.figure(f"{args.task} {name} per host-task", per * 1000, "ms CPU")
        record.figure(f"{args.task} {name} fixed", fixed, "CPU-s")
        if name != "ufcctl cfg":
            record.ratio(f"{args.task} {name} / ufcctl cfg per host-task", per / ref)
        if name in own_rows:
            record.figure(f"{args.task} {name} ufcctl process per host-task", own_rows[name] * 1000, "ms CPU")
    if "facts" in rows:
        facts_per_host = (rows["facts"][1] - rows["ufcctl cfg"][1]) / args.hosts
        print(f"  fact gathering: {facts_per_host:.3f} CPU-s per host "
              "(facts fixed - ufcctl cfg fixed, / hosts)")
        record.figure("fact gathering per host", facts_per_host, "CPU-s")
    record.note = (f"{args.hosts} local-connection hosts, {args.task} tasks, K={k1},{k2}, "
                   f"repeat {args.repeat}" + (f", baseline {args.baseline}" if args.baseline else ""))
    record.write()


if __name__ == "__main__":
    main()
