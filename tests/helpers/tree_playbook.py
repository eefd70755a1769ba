"""A stand-in `ansible-playbook` with the process tree of ansible-core 2.19, for the stop tests.

Started by the real ansible-runner (engine/runner.py puts the directory holding it first on PATH),
it forks `--forks` workers that each call setsid() as Ansible's workers do
(ansible/executor/process/worker.py `_detach`); a worker takes its share of the inventory's hosts
(round robin, in order), asks the real rollout gate for each when the engine gave one (the client
function of playbooks/action_plugins/ufc_gate.py), and on go starts a grandchild in a new session,
as the ssh connection plugin starts ssh (start_new_session=True), and waits on it: a node in
flight for ever. With no gate (a single run such as deploy's cluster phase) every host is in flight.

Every process appends `<role> <pid>` to $TREE_OUT/pids, and a worker writes
$TREE_OUT/admitted-<host> once its grandchild is ready: started, its SIGTERM disposition set, and
that said on a pipe. With TREE_STUBBORN=1 the grandchildren ignore SIGTERM (writing
$TREE_OUT/term-<pid> when it comes), so only SIGKILL ends them. Without the wait on the pipe, a
SIGTERM sent once the admitted file is there could reach a grandchild still starting Python (on a
loaded machine that takes seconds) and end it at once, never noted. TREE_SLOW_START=<seconds> makes
every grandchild take that long before it sets its disposition, as such a machine would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GATE_ENV = "UFC_ROLLOUT_GATE"

# A grandchild: sleeps; when stubborn, notes a SIGTERM and goes on sleeping. Once its disposition
# is set it writes one byte on the pipe whose end it got (argv[3]).
_SLEEPER = """
import os, signal, sys, time
out, stubborn, ready = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
time.sleep(float(os.environ.get("TREE_SLOW_START", "0")))
if stubborn:
    def noted(signum, frame):
        open(os.path.join(out, f"term-{os.getpid()}"), "w").close()
    signal.signal(signal.SIGTERM, noted)
os.write(ready, b"1")
os.close(ready)
while True:
    time.sleep(600)
"""


def _note(out: Path, role: str) -> None:
    with open(out / "pids", "a", encoding="utf-8") as fh:
        fh.write(f"{role} {os.getpid()}\n")


def _args(argv: list[str]) -> tuple[Path, int, set[str], set[str]]:
    """-i, --forks, and --limit as (names excluded with `!`, names listed: none means all)."""
    inventory, forks, excluded, listed = None, 5, set(), set()
    for i, arg in enumerate(argv):
        value = argv[i + 1] if i + 1 < len(argv) else ""
        if arg in ("-i", "--inventory", "--inventory-file"):
            inventory = Path(value)
        elif arg in ("-f", "--forks"):
            forks = int(value)
        elif arg in ("-l", "--limit"):
            excluded = {p[1:] for p in value.split(",") if p.startswith("!")}
            listed = {p for p in value.split(",") if p and p != "all" and not p.startswith("!")}
    assert inventory is not None, argv
    return inventory, forks, excluded, listed


def _worker(hosts: list[str], out: Path, ask: object) -> None:
    os.setsid()
    _note(out, "worker")
    gate = os.environ.get(GATE_ENV)
    stubborn = os.environ.get("TREE_STUBBORN", "0")
    for host in hosts:
        if gate:
            answer = ask(gate, host)["answer"]  # type: ignore[operator]
            if answer != "go":
                continue
        ready, ready_end = os.pipe()
        child = subprocess.Popen([sys.executable, "-c", _SLEEPER, str(out), stubborn, str(ready_end)],
                                 start_new_session=True, pass_fds=(ready_end,))
        os.close(ready_end)
        with open(out / "pids", "a", encoding="utf-8") as fh:
            fh.write(f"grandchild {child.pid}\n")
        if os.read(ready, 1) == b"1":  # b"" if it died first: never admitted
            (out / f"admitted-{host}").touch()
        os.close(ready)
        child.wait()


def main() -> None:
    out = Path(os.environ["TREE_OUT"])
    _note(out, "main")
    inventory, forks, excluded, listed = _args(sys.argv[1:])
    names = [h for h in json.loads(inventory.read_text())["all"]["hosts"]
             if h not in excluded and (not listed or h in listed)]
    ask = None
    if os.environ.get(GATE_ENV):
        sys.path.insert(0, str(ROOT))
        from tests.helpers.pyimports import load_file

        ask = load_file(ROOT / "playbooks" / "action_plugins" / "ufc_gate.py", "ufc_gate_action").ask
    workers = []
    count = max(1, min(forks, len(names)))
    for w in range(count):
        pid = os.fork()
        if pid == 0:
            try:
                _worker(names[w::count], out, ask)
            finally:
                os._exit(0)
        workers.append(pid)
    for pid in workers:
        os.waitpid(pid, 0)
    time.sleep(0.1)


if __name__ == "__main__":
    main()
