"""Generators of big inventory directories for tests and benchmarks (`tests.helpers.gen_inventory`).

- `write_cluster_inventory`: a valid ufcctl inventory of N NPU nodes in the topology scheme of
  inventories/sample/README.md (ranges in hosts.yml; ToR, super pod, rack and slice groups),
  either with ranges ("ranges") or with every host listed with inline vars ("explicit").
- `write_messy_inventory`: a seeded, deliberately tangled Ansible inventory (nested and shared
  groups, every range form, vars with conflicting keys at every precedence level, several
  inventory files, group_vars/host_vars as files and directories) for the differential test.
"""

from __future__ import annotations

import ipaddress
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ufcctl.domain.inventory.values import UnsafeText


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(UnsafeText, lambda d, v: d.represent_scalar("!unsafe", str(v)))


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# A realistic cluster


@dataclass(frozen=True)
class ClusterShape:
    npu_nodes: int = 16000
    nodes_per_tor: int = 16
    tors_per_super_pod: int = 3  # 48 nodes: the default super-pod-size (docs/reference/ascend.md §1.5)
    nodes_per_rack: int = 8
    accelerator_type: str = "module-a3-16-super-pod"
    # Set: each ToR gets `npu_fabric_subnet`, the ToR's t-th subnet of this prefix length from
    # 10.128.0.0 (domain/npu/fabric_plan.py); None: no NPU fabric plan.
    fabric_prefix: int | None = None

    def fabric_subnet(self, tor: int) -> str:  # tor index from 0
        assert self.fabric_prefix is not None
        size = 2 ** (32 - self.fabric_prefix)
        first = int(ipaddress.IPv4Address("10.128.0.0")) + tor * size
        return str(ipaddress.IPv4Network((first, self.fabric_prefix)))

    @property
    def width(self) -> int:
        return max(5, len(str(self.npu_nodes)))

    def node(self, index: int) -> str:  # index from 1
        return f"npu{index:0{self.width}d}"

    def span(self, first: int, last: int, step: int = 1) -> str:
        w = self.width
        return f"npu[{first:0{w}d}:{last:0{w}d}" + (f":{step}]" if step > 1 else "]")


def _core_groups(vip: str) -> dict[str, Any]:
    control = {f"cp{i}": {"ansible_host": f"10.0.0.{10 + i}"} for i in (1, 2, 3)}
    return {
        "kube_control_plane": {"hosts": control},
        "apiserver_lb": {"children": {"kube_control_plane": None}},
        "etcd_core": {"children": {"kube_control_plane": None}},
        "etcd_events": {"children": {"kube_control_plane": None}},
        "etcd_pods": {"hosts": {"etcd-pods[1:3]": None}},
        "nfs_server": {"hosts": {"nfs1": {"ansible_host": "10.0.0.30"}}},
    }


def _address(index: int) -> str:
    return f"10.{16 + index // 65536}.{index // 256 % 256}.{index % 256}"


def write_cluster_inventory(root: Path, shape: ClusterShape = ClusterShape(), style: str = "ranges") -> Path:
    """A valid inventory of `shape.npu_nodes` NPU nodes; returns `root`.

    "ranges": hosts.yml holds `npu[00001:16000]`-style entries; topology comes from group vars of
    per-ToR/super-pod/rack/slice groups (the scheme documented in inventories/sample/README.md).
    "explicit": every NPU host is listed with ansible_host and its topology as inline host vars.
    """
    n, per_tor = shape.npu_nodes, shape.nodes_per_tor
    children = _core_groups("10.0.0.10")
    if style == "explicit":
        hosts = {}
        for i in range(1, n + 1):
            tor = (i - 1) // per_tor
            hosts[shape.node(i)] = {
                "ansible_host": _address(i),
                "npu_tor_id": f"tor-{tor + 1:04d}",
                "npu_super_pod_id": tor // shape.tors_per_super_pod,
                "npu_slice_id": (i - 1) % per_tor,
                "rack": f"r{(i - 1) // shape.nodes_per_rack + 1:04d}",
            }
            if shape.fabric_prefix is not None:
                hosts[shape.node(i)]["npu_fabric_subnet"] = shape.fabric_subnet(tor)
        children["kube_node"] = {
            "children": {
                "npu_node": {"hosts": hosts, "vars": {"npu_accelerator_type": shape.accelerator_type}}
            }
        }
    elif style == "ranges":
        children["kube_node"] = {
            "children": {
                "npu_node": {
                    "hosts": {shape.span(1, n): None},
                    "vars": {"npu_accelerator_type": shape.accelerator_type},
                }
            }
        }
        tors = {}
        for t in range((n + per_tor - 1) // per_tor):
            first, last = t * per_tor + 1, min(n, (t + 1) * per_tor)
            tors[f"tor_{t + 1:04d}"] = {
                "hosts": {shape.span(first, last): None},
                "vars": {"npu_tor_id": f"tor-{t + 1:04d}"},
            }
            if shape.fabric_prefix is not None:
                tors[f"tor_{t + 1:04d}"]["vars"]["npu_fabric_subnet"] = shape.fabric_subnet(t)
        names = list(tors)
        pods = {}
        for p in range(0, len(names), shape.tors_per_super_pod):
            pods[f"super_pod_{p // shape.tors_per_super_pod:04d}"] = {
                "vars": {"npu_super_pod_id": p // shape.tors_per_super_pod},
                "children": {name: None for name in names[p : p + shape.tors_per_super_pod]},
            }
        racks = {}
        for r in range((n + shape.nodes_per_rack - 1) // shape.nodes_per_rack):
            first, last = r * shape.nodes_per_rack + 1, min(n, (r + 1) * shape.nodes_per_rack)
            racks[f"rack_{r + 1:04d}"] = {
                "hosts": {shape.span(first, last): None},
                "vars": {"rack": f"r{r + 1:04d}"},
            }
        slices = {
            f"slice_{s:02d}": {"hosts": {shape.span(s + 1, n, per_tor): None}, "vars": {"npu_slice_id": s}}
            for s in range(min(per_tor, n))
        }
        children.update(
            npu_super_pods={"children": pods},
            npu_tors={"children": tors},
            npu_racks={"children": racks},
            npu_slices={"children": slices},
        )
    else:
        raise ValueError(f"unknown style {style!r}")
    _write(root / "hosts.yml", dump_yaml({"all": {"children": children}}))
    _write(
        root / "group_vars" / "all.yml",
        dump_yaml(
            {
                "ufc_vip": "10.0.0.10",
                "ufc_vip_interface": "eth0",
                "ufc_allow_single_etcd": False,
                "ufc_kube_version": "1.34.4",
                "ufc_etcd_version": "3.6.17",
                "ufc_npu_driver_version": "25.5.0",
                "ufc_npu_firmware_version": "25.5.0",
                "ufc_artifact_url": "http://artifacts.example.com/ufc",
                "ansible_user": "root",
                **_bgp_peers((n + per_tor - 1) // per_tor),
            }
        ),
    )
    return root


def _bgp_peers(tors: int) -> dict[str, Any]:
    """Calico tor mode's peers (ufcctl/domain/inventory/bgp_peers.py): one per ToR, one for the control
    planes, on documentation-style private addresses."""
    return {
        "cni_calico_tor_peers": {
            f"tor-{t + 1:04d}": {"ip": f"10.255.{t // 256}.{t % 256}", "as_number": 65001 + t % 1000}
            for t in range(tors)
        },
        "cni_calico_extra_peers": [{"name": "spine-cp", "ip": "10.254.0.1", "as_number": 65000,
                                    "node_selector": "has(node-role.kubernetes.io/control-plane)"}],
    }


# ---------------------------------------------------------------------------------------------
# A tangled inventory for the differential test

KEYS = [f"k{i}" for i in range(12)]


def _value(rng: random.Random, tag: str) -> Any:
    kind = rng.randrange(9)
    if kind == 0:
        return rng.randrange(-5, 1000)
    if kind == 1:
        return {"from": tag, "n": rng.randrange(10), "nested": {"x": [1, tag]}}
    if kind == 2:
        return [tag, rng.randrange(5), None]
    if kind == 3:
        return None
    if kind == 4:
        return rng.random() < 0.5
    if kind == 5:
        return "{{ templated_" + tag.replace("/", "_").replace(".", "_").replace("-", "_") + " }}"
    if kind == 6:
        return UnsafeText("{{ unsafe " + tag + " }}")
    if kind == 7:
        return f"{tag} with: colon and 'quotes'"
    return tag


def _vars(rng: random.Random, tag: str, count: int) -> dict[str, Any]:
    return {key: _value(rng, f"{tag}.{key}") for key in rng.sample(KEYS, count)}


def _host_patterns(rng: random.Random, index: int, budget: int) -> tuple[dict[str, Any], int, list[str]]:
    """A `hosts:` mapping mixing every entry form; returns it, how many hosts it makes, and a few names."""
    hosts: dict[str, Any] = {}
    made, samples = 0, []
    forms = ["padded", "alpha_multi", "stride", "plain", "port", "unpadded"]
    while made < budget:
        form = rng.choice(forms)
        base = f"g{index}{form[:2]}{len(hosts)}"
        if form == "padded":
            count = rng.randrange(5, 120)
            entry, made_now, sample = (
                f"{base}-[{1:04d}:{count:04d}]",
                count,
                [f"{base}-0001", f"{base}-{count:04d}"],
            )
        elif form == "alpha_multi":
            letters = rng.randrange(2, 6)
            nums = rng.randrange(2, 9)
            entry, made_now = f"{base}[a:{'abcdefg'[letters - 1]}]-n[1:{nums}]", letters * nums
            sample = [f"{base}a-n1", f"{base}b-n{nums}"]
        elif form == "stride":
            step = rng.randrange(2, 5)
            entry, made_now, sample = f"{base}s[1:60:{step}]", len(range(1, 61, step)), [f"{base}s{1 + step}"]
        elif form == "port":
            entry, made_now, sample = f"{base}p[1:4]:{rng.randrange(2200, 2299)}", 4, [f"{base}p2"]
        elif form == "unpadded":
            entry, made_now, sample = f"{base}u[8:12]", 5, [f"{base}u9", f"{base}u10"]
        else:
            entry, made_now = f"{base}.example.com", 1
            sample = [entry]
        hosts[entry] = _vars(rng, entry, rng.randrange(0, 3)) or None
        made += made_now
        samples.extend(sample)
    return hosts, made, samples


def _shared_hosts(rng: random.Random, known: list[str], group: str) -> dict[str, Any]:
    """Hosts already defined elsewhere, added to one more group, sometimes with conflicting vars."""
    picked = rng.sample(known, min(len(known), rng.randrange(1, 15)))
    return {
        h: (_vars(rng, f"{group}/{h}", rng.randrange(1, 3)) if rng.random() < 0.5 else None) for h in picked
    }


def write_messy_inventory(root: Path, seed: int = 1, hosts: int = 2000) -> Path:
    """A seeded tangle of ~`hosts` hosts that only Ansible's exact rules resolve correctly; returns `root`."""
    rng = random.Random(seed)
    group_names = [f"grp{i:02d}" for i in range(36)]
    bodies: dict[str, dict[str, Any]] = {name: {} for name in group_names}
    made, simple_names = 0, []
    per_group = hosts // 24
    for i, name in enumerate(group_names[:24]):
        entries, count, samples = _host_patterns(rng, i, per_group)
        bodies[name]["hosts"] = entries
        made += count
        simple_names.extend(samples)
    # Nesting: a random DAG, parents always earlier than children in the name order (no loops);
    # some groups get several parents, so depth (longest path) matters.
    for i, name in enumerate(group_names[1:], start=1):
        for parent in rng.sample(group_names[:i], min(i, rng.choice([0, 1, 1, 2, 3]))):
            bodies[parent].setdefault("children", {})[name] = None
    for name in group_names:
        if rng.random() < 0.7:
            bodies[name]["vars"] = _vars(rng, name, rng.randrange(1, 6))
        if rng.random() < 0.3:
            bodies[name].setdefault("vars", {})["ansible_group_priority"] = rng.randrange(1, 20)
        if rng.random() < 0.3 and simple_names:
            bodies[name].setdefault("hosts", {}).update(_shared_hosts(rng, simple_names, name))
    # Reorder keys randomly: Ansible walks them in file order, which changes host/group order.
    for name in group_names:
        keys = list(bodies[name])
        rng.shuffle(keys)
        bodies[name] = {k: bodies[name][k] for k in keys}
    top = {
        "all": {
            "vars": _vars(rng, "all", 8),
            "hosts": {"lonely1": None, "lonely2": {"k0": "lonely"}},
            "children": {name: bodies[name] for name in group_names[:8]},
        }
    }
    for name in group_names[8:30]:  # defined at top level: Ansible hangs them under `all`
        top[name] = bodies[name]
    top["ungrouped"] = {"hosts": {"explicitly-ungrouped": None, simple_names[0]: {"k1": "was ungrouped"}}}
    top["emptygroup"] = None
    top["shorthand"] = {"hosts": simple_names[1], "children": group_names[3]}
    _write(root / "hosts.yml", dump_yaml(top))
    # A second inventory file and one in a subdirectory: read in sorted order, after hosts.yml.
    extra = {name: bodies[name] for name in group_names[30:]}
    extra[group_names[2]] = {
        "vars": _vars(rng, "extra-redefinition", 4),
        "hosts": _shared_hosts(rng, simple_names, "x"),
    }
    _write(root / "more.yaml", dump_yaml(extra))
    _write(
        root / "sub" / "late.yml",
        dump_yaml(
            {"latecomers": {"hosts": {"late[1:3]": {"k2": "late"}}, "children": {group_names[5]: None}}}
        ),
    )
    _write(root / "README.md", "not an inventory: ignored by extension\n")
    _write_vars_dirs(root, rng, group_names + ["all", "ungrouped", "latecomers"], simple_names)
    return root


def _write_vars_dirs(root: Path, rng: random.Random, groups: list[str], hosts: list[str]) -> None:
    gv, hv = root / "group_vars", root / "host_vars"
    _write(gv / "all" / "10-base.yml", dump_yaml(_vars(rng, "gv/all/10", 6)))
    _write(gv / "all" / "20-over.yaml", dump_yaml(_vars(rng, "gv/all/20", 4)))
    _write(gv / "all" / "nested" / "30.json", json.dumps({"k3": "from json", "k4": [1, 2]}))
    _write(gv / "all" / "notes.txt", "k5: never read (extension)\n")
    _write(gv / "all" / ".hidden.yml", "k5: never read (hidden)\n")
    _write(gv / "all" / "empty.yml", "# only a comment\n")
    _write(gv / "all.yml", dump_yaml({"k6": "shadowed by group_vars/all/"}))
    for i, name in enumerate(groups):
        roll = rng.random()
        data = _vars(rng, f"gv/{name}", rng.randrange(1, 5))
        if roll < 0.3:
            _write(gv / f"{name}.yml", dump_yaml(data))
        elif roll < 0.45:
            _write(gv / f"{name}.yaml", dump_yaml(data))
        elif roll < 0.55:
            _write(
                gv / f"{name}.json",
                json.dumps({k: v for k, v in data.items() if not isinstance(v, UnsafeText)}),
            )
        elif roll < 0.7:
            _write(gv / name / "a.yml", dump_yaml(data))
            _write(gv / name / "b.yml", dump_yaml(_vars(rng, f"gv/{name}/b", 3)))
        if i % 7 == 0:  # priority from a vars file is an ordinary var, not a priority
            _write(gv / f"{name}.yml", dump_yaml({"ansible_group_priority": 99, **data}))
    _write(gv / "no_such_group.yml", dump_yaml({"k0": "orphan"}))
    for i, name in enumerate(hosts[: len(hosts) // 2]):
        data = _vars(rng, f"hv/{name}", rng.randrange(1, 4))
        if i % 5 == 0:
            _write(hv / name / "main.yml", dump_yaml(data))
        else:
            _write(hv / f"{name}.yml" if i % 2 else hv / name, dump_yaml(data))
    _write(hv / "lonely1.yaml", dump_yaml({"k7": "lonely host_vars"}))
