"""A scale rehearsal on the REAL control plane (issue 46, first slice): kwok nodes shaped like ufcctl's NPU
workers against the real kube-apiserver on ufcctl's flags and three real etcd clusters, and ufcctl's own
API operations over them, at growing sizes.

The control plane is tests/helpers/real_control_plane.py (loopback, no container: kube-apiserver v1.34.4
with the command kubeadm makes of the sample inventory's rendered configuration, etcd 3.6.17 core /
events+leases / pods). kwok v0.8.0 (sigs.k8s.io/kwok, built by tests/lab_build with the module's own
default Stages, `kwok-stages`) keeps every fake Node Ready with a Lease, as a kubelet would, and nothing
else runs: no kube-controller-manager or scheduler (so no DaemonSet pod, eviction or node lifecycle yet).

For each size N (grown in one cluster: 500, then 1,000, then 2,000 by default):
  inventory    a generated N-node inventory (tests/helpers/gen_inventory.py, Atlas A3 16-chip super pod
               nodes, 16 per ToR) read by ufcctl (`load_inventory`: ansible-inventory, resolve, validate)
  register     the new Nodes created as their kubelets would register them (hostname, os/arch, the
               labels a kubelet may set: ufcctl's ToR label; capacity 16 huawei.com/Ascend910), 4
               clients of 250 Nodes per request, then until kwok has made every one Ready
  labels       ufcctl's MindCluster label plan (ufcctl/domain/addons/labels.py plan_labels: nodes with
               the same labels grouped, at most 500 names per `kubectl label` call) applied with the real
               kubectl; the baseline in the same run: one `kubectl label` per node, timed on
               BASELINE_SAMPLE nodes and scaled to N
  readiness    `ufcctl health`'s and deploy's API read (ufcctl/app/readiness.py read_readiness: one Node
               list and one workload list), which must find N Nodes Ready
and, around each API phase, the apiserver's own request latencies (apiserver_request_duration_seconds,
the difference of two /metrics reads) as p99 per verb class against SIG Scalability's SLOs (mutating
and single reads <= 1 s, LISTs <= 30 s); after each size the etcd db size per cluster and the
apiserver's peak RSS.

    python tests/benchmarks/bench_scale.py [--nodes 500,1000,2000] [--json tests/benchmarks/results]

Exits 1 when an operation does not do its work (a Node not Ready, a label missing, the readiness read
finding fewer Nodes); never on a duration. The machine: 2 cores; kwok renews each Node's Lease every
40 s with jitter (its default Stage), so N nodes cost ~N/40 Lease writes per second into the events
cluster: 2,000 nodes are ~50 writes/s on top of the operations measured.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.benchlib import take_record  # noqa: E402
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory  # noqa: E402
from tests.helpers.real_control_plane import control_plane, wait  # noqa: E402
from tests.lab_build.build import build  # noqa: E402
from tests.lab_build.components import KWOK  # noqa: E402
from ufcctl.app.inventory import load_inventory  # noqa: E402
from ufcctl.app.readiness import read_readiness  # noqa: E402
from ufcctl.domain.addons.labels import plan_labels  # noqa: E402
from ufcctl.domain.controlplane.join import registration_labels  # noqa: E402
from ufcctl.domain.inventory.model import KUBE_NODE  # noqa: E402
from ufcctl.domain.readiness import Readiness, addon_namespaces  # noqa: E402
from ufcctl.engine.kubectl import Kubectl  # noqa: E402

SIZES = "500,1000,2000"
CHUNK = 250  # Nodes per create request
CLIENTS = 4
BASELINE_SAMPLE = 100  # nodes labelled one kubectl call each, the baseline scaled to N
TOR_LABEL = "npu-tor-id"  # roles/kube_node's default kube_node_tor_label
CHIPS = "16"  # Atlas A3 16-chip nodes (ClusterShape's default accelerator type)
SLO = {"mutating": 1.0, "get": 1.0, "list": 30.0}  # seconds, p99 (SIG Scalability)
VERBS = {"POST": "mutating", "PUT": "mutating", "PATCH": "mutating", "DELETE": "mutating",
         "APPLY": "mutating", "GET": "get", "LIST": "list"}
BUCKET = re.compile(r'^apiserver_request_duration_seconds_bucket\{([^}]*)\} (\S+)$')


def kubectl_run(kubectl: list[str], *args: str, stdin: str | None = None, timeout: int = 600) -> str:
    proc = subprocess.run([*kubectl, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args[:3])}: {proc.stderr.strip()[-1000:]}")
    return proc.stdout


def buckets(kubectl: list[str]) -> dict[tuple[str, float], float]:
    """(verb class, le) -> cumulative count, summed over resources, from the apiserver's /metrics."""
    found: dict[tuple[str, float], float] = {}
    for line in kubectl_run(kubectl, "get", "--raw", "/metrics").splitlines():
        match = BUCKET.match(line)
        if not match:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
        verb = VERBS.get(labels.get("verb", ""))
        if verb is None or labels.get("dry_run"):
            continue
        key = (verb, float("inf") if labels["le"] == "+Inf" else float(labels["le"]))
        found[key] = found.get(key, 0.0) + float(match.group(2))
    return found


def p99(before: dict[tuple[str, float], float], after: dict[tuple[str, float], float]) -> dict[str, object]:
    """Per verb class: requests in between and the p99 bucket bound (the smallest `le` holding 99%)."""
    out: dict[str, object] = {}
    for verb in ("mutating", "get", "list"):
        delta = sorted((le, after.get((v, le), 0.0) - before.get((v, le), 0.0))
                       for (v, le) in after if v == verb)
        total = delta[-1][1] if delta else 0.0
        if total <= 0:
            continue
        bound = next(le for le, count in delta if count >= 0.99 * total)
        out[verb] = {"requests": int(total), "p99_le_s": bound, "slo_s": SLO[verb],
                     "within_slo": bound <= SLO[verb]}
    return out


@contextmanager
def kwok(kubeconfig: Path, tmp: Path) -> Iterator[None]:
    built = build(KWOK, say=lambda line: print(line, flush=True))
    stages = subprocess.run([str(built.binary("kwok-stages"))], capture_output=True, text=True, check=True)
    (tmp / "kwok.yaml").write_text(stages.stdout)
    log = (tmp / "kwok.log").open("ab")
    proc = subprocess.Popen([str(built.binary("kwok")), "--config", str(tmp / "kwok.yaml"), "--kubeconfig",
                             str(kubeconfig), "--manage-all-nodes=false",
                             "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                             "--cidr=10.96.0.0/12", "--node-lease-duration-seconds=40"],
                            stdout=log, stderr=log)
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def node_object(name: str, hostvars: dict) -> dict:
    """A Node as its kubelet registers it, kwok's annotation added (kwok manages only those)."""
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64",
              **registration_labels({TOR_LABEL: str(hostvars["npu_tor_id"])})}
    resources = {"cpu": "192", "memory": "1536Gi", "pods": "110", "huawei.com/Ascend910": CHIPS}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "status": {"capacity": resources, "allocatable": resources}}


def ready_count(kubectl: list[str]) -> int:
    nodes = json.loads(kubectl_run(kubectl, "get", "nodes", "-o", "json", "--chunk-size=1000"))["items"]
    return sum(1 for n in nodes if any(c.get("type") == "Ready" and c.get("status") == "True"
                                       for c in (n.get("status") or {}).get("conditions") or []))


def phase(kubectl: list[str], work) -> tuple[float, dict[str, object], object]:  # type: ignore[no-untyped-def]
    before = buckets(kubectl)
    start = time.monotonic()
    result = work()
    seconds = time.monotonic() - start
    return seconds, p99(before, buckets(kubectl)), result


def db_sizes(etcd: dict) -> dict[str, int]:
    sizes = {}
    for name, member in etcd.items():
        out = subprocess.run([str(member.etcdctl), "--endpoints", member.url, "endpoint", "status", "-w",
                              "json"], capture_output=True, text=True, check=True, timeout=30).stdout
        sizes[name] = int(json.loads(out)[0]["Status"]["dbSize"])
    return sizes


def peak_rss_mib(tmp: Path) -> float:
    pid = subprocess.run(["pgrep", "-f", f"kube-apiserver.*{tmp}"], capture_output=True, text=True,
                         check=False).stdout.split()
    if not pid:
        return 0.0
    status = Path(f"/proc/{pid[0]}/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else 0.0


def main() -> int:
    record = take_record("bench_scale")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default=SIZES, help=f"sizes, grown in one cluster (default {SIZES})")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.nodes.split(",") if s.strip()})
    failures: list[str] = []
    rows = []
    with tempfile.TemporaryDirectory(prefix="ufc-bench-scale-") as scratch:
        tmp = Path(scratch)
        started = time.monotonic()
        with control_plane(tmp / "cp") as (cp_dir, etcd, kubectl):
            print(f"real control plane ready in {time.monotonic() - started:.1f} s", flush=True)
            engine = Kubectl(kubectl[0], cp_dir / "super-admin.conf")
            registered = 0
            with kwok(cp_dir / "super-admin.conf", cp_dir):
                for size in sizes:
                    row: dict[str, object] = {"nodes": size}
                    inv_dir = write_cluster_inventory(tmp / f"inventory-{size}", ClusterShape(npu_nodes=size))
                    began = time.monotonic()
                    inventory = load_inventory(inv_dir)
                    row["inventory_s"] = round(time.monotonic() - began, 2)
                    workers = inventory.group_hosts(KUBE_NODE)
                    hostvars = {h: dict(inventory.hosts[h].vars) for h in workers}
                    new = [node_object(h, hostvars[h]) for h in workers[registered:]]

                    def register(new: list[dict] = new, size: int = size) -> None:
                        batches = [new[i:i + CHUNK] for i in range(0, len(new), CHUNK)]
                        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
                            list(pool.map(lambda items: kubectl_run(
                                kubectl, "create", "-f", "-",
                                stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items})),
                                batches))
                        wait(f"{size} Nodes Ready (kwok)", lambda: ready_count(kubectl) >= size, 900)

                    row["register_s"], row["register_api"], _ = phase(kubectl, register)
                    registered = size

                    plan, problems = plan_labels([], workers, hostvars)
                    if problems:
                        failures.append(f"{size}: label plan: {problems[:3]}")

                    def apply_plan(plan=plan) -> int:  # type: ignore[no-untyped-def]
                        for group in plan.groups:
                            kubectl_run(kubectl, *group.kubectl_args())
                        return len(plan.groups)

                    row["labels_s"], row["labels_api"], row["label_calls"] = phase(kubectl, apply_plan)
                    sample = workers[:BASELINE_SAMPLE]

                    def per_node(sample: list[str] = sample) -> None:
                        for host in sample:
                            kubectl_run(kubectl, "label", "nodes", "--overwrite", host,
                                        "ufcctl.io/bench=per-node")

                    seconds, _, _ = phase(kubectl, per_node)
                    row["labels_per_node_baseline_s"] = round(seconds / len(sample) * size, 1)
                    labelled = json.loads(kubectl_run(kubectl, "get", "nodes", "-o", "json", "--selector",
                                                      "workerselector=dls-worker-node,accelerator-type"))["items"]
                    if len(labelled) != size:
                        failures.append(f"{size}: {len(labelled)} Nodes carry the plan's labels")

                    row["readiness_s"], row["readiness_api"], seen = phase(
                        kubectl, lambda: read_readiness(engine, addon_namespaces(None)))
                    if not isinstance(seen, Readiness) or seen.nodes != size or seen.not_ready:
                        failures.append(f"{size}: the readiness read found {seen}")
                    row["etcd_db_bytes"] = db_sizes(etcd)
                    row["apiserver_peak_rss_mib"] = round(peak_rss_mib(cp_dir), 1)
                    rows.append(row)
                    report(row)
    summary(rows, record)
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


def _p99s(api: object) -> str:
    parts = []
    for verb, figures in dict(api or {}).items():  # type: ignore[call-overload]
        parts.append(f"{verb} {figures['requests']} req p99<={figures['p99_le_s']} s")
    return ", ".join(parts) or "no request"


def report(row: dict[str, object]) -> None:
    n = row["nodes"]
    print(f"--- {n} nodes", flush=True)
    print(f"inventory read {row['inventory_s']} s; registered (until Ready) {row['register_s']:.1f} s: "  # type: ignore[str-format]
          f"{_p99s(row['register_api'])}")
    print(f"labels: {row['label_calls']} kubectl call(s) in {row['labels_s']:.1f} s: "  # type: ignore[str-format]
          f"{_p99s(row['labels_api'])}; one call per node (baseline, scaled from {BASELINE_SAMPLE}): "
          f"{row['labels_per_node_baseline_s']} s")
    print(f"readiness read {row['readiness_s']:.2f} s: {_p99s(row['readiness_api'])}")  # type: ignore[str-format]
    print(f"etcd db bytes {row['etcd_db_bytes']}; apiserver peak RSS {row['apiserver_peak_rss_mib']} MiB",
          flush=True)


def summary(rows: list[dict[str, object]], record) -> None:  # type: ignore[no-untyped-def]
    if not rows:
        return
    largest = rows[-1]
    n = int(largest["nodes"])  # type: ignore[call-overload]
    for row in rows:
        size = row["nodes"]
        record.figure(f"register_s_{size}", float(row["register_s"]), "s")  # type: ignore[arg-type]
        record.figure(f"labels_s_{size}", float(row["labels_s"]), "s")  # type: ignore[arg-type]
        record.figure(f"label_calls_{size}", float(row["label_calls"]), "calls")  # type: ignore[arg-type]
        record.figure(f"readiness_read_s_{size}", float(row["readiness_s"]), "s")  # type: ignore[arg-type]
        record.figure(f"apiserver_peak_rss_mib_{size}", float(row["apiserver_peak_rss_mib"]), "MiB")  # type: ignore[arg-type]
        for cluster, size_bytes in dict(row["etcd_db_bytes"]).items():  # type: ignore[call-overload]
            record.figure(f"etcd_{cluster}_db_bytes_{size}", float(size_bytes), "bytes")
        for name in ("register_api", "labels_api", "readiness_api"):
            for verb, figures in dict(row[name]).items():  # type: ignore[call-overload]
                record.figure(f"{name}_{verb}_p99_le_s_{size}", float(figures["p99_le_s"]), "s")
    baseline = float(largest["labels_per_node_baseline_s"])  # type: ignore[arg-type]
    ours = max(float(largest["labels_s"]), 1e-3)  # type: ignore[arg-type]
    print(f"labels at {n} nodes: one call per node / ufcctl's plan: {baseline / ours:.1f}x "
          f"({baseline:.1f} s vs {ours:.1f} s)")
    record.ratio(f"labels_per_node_over_plan_{n}", baseline / ours)
    slo = [f"{row['nodes']} {name} {verb}" for row in rows
           for name in ("register_api", "labels_api", "readiness_api")
           for verb, figures in dict(row[name]).items()  # type: ignore[call-overload]
           if not figures["within_slo"]]
    print("SLO (p99: mutating and get <= 1 s, list <= 30 s): " + ("all within" if not slo else
                                                                  "outside: " + ", ".join(slo)))
    record.note = (f"loopback real control plane (kube-apiserver v1.34.4, etcd 3.6.17 x3) + kwok v0.8.0; "
                   f"sizes {[r['nodes'] for r in rows]}")
    record.write()


if __name__ == "__main__":
    sys.exit(main())
