#!/usr/bin/python
"""Read-only probe of one node for ufcctl's preflight role: OS, listeners, disk, swap, clock."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.facts.system.distribution import DistributionFactCollector
from ansible.module_utils.facts.virtual.linux import LinuxVirtualCollector
from ansible.module_utils.ufcctl_systemd import unit_states

DOCUMENTATION = r"""
module: preflight_probe
short_description: Check one node against ufcctl's preflight requirements, changing nothing
description:
  - Reads the machine (uname), /proc, statvfs and the kernel clock state in one module run (one SSH
    round trip per host instead of one per check) and returns every problem found, each naming its fix.
  - Gathers the distribution and virtualization facts itself (the same collectors and names as
    setup's C(distribution) and C(virtual) subsets) and returns them as facts, so preflight needs
    no separate setup run and later plays of the same run read them.
  - In a container, conditions that belong to the container host (swap, clock) are returned as
    warnings instead of problems.
options:
  allowed_distributions: {type: list, elements: str, required: true, description: Accepted distributions.}
  supported_os_families:
    type: list
    elements: dict
    default: []
    description: "{family, distributions}: OS families the roles can install on (as ansible_os_family)."
  npu_distributions:
    type: list
    elements: str
    default: []
    description: "'Name Version' an npu_node host must run (Huawei's OS list for the NPU driver); [] - any."
  host_groups: {type: list, elements: str, default: [], description: The host's group_names.}
  require_time_sync: {type: bool, default: true, description: Check time sync service and clock.}
  time_sync_services: {type: list, elements: str, default: [], description: Units, one must be active.}
  require_swap_off: {type: bool, default: true, description: No active swap allowed.}
  disk_requirements: {type: list, elements: dict, default: [], description: "path, min_free_gib, groups"}
  ports: {type: list, elements: dict, default: [], description: "port, name, groups, owners"}
"""

RETURN = r"""
problems:
  description: One line per failed requirement, naming the fix.
  type: list
  returned: always
notes:
  description: Requirements downgraded to warnings (conditions of a container's host).
  type: list
  returned: always
probe:
  description: What was measured (machine as uname -m, clock, services, swap, filesystems, listeners).
  type: dict
  returned: always
ansible_facts:
  description: ansible_distribution*, ansible_os_family and ansible_virtualization_* as setup returns them.
  type: dict
  returned: always
"""

GIB = 1024**3
# systemd's ntp_synced() (src/basic/clock-util.c, what `timedatectl` shows as NTPSynchronized)
# calls the clock synchronized when the kernel's maximum error is below 16 s. Reading it with
# adjtimex() needs neither D-Bus nor timedatectl, and works inside containers.
SYNCED_MAX_ERROR_US = 16_000_000
TCP_LISTEN = "0A"


def applies(entry: dict, host_groups: list[str]) -> bool:
    """An entry without `groups` applies to every host, else to members of any listed group."""
    groups = entry.get("groups") or []
    return not groups or bool(set(groups) & set(host_groups))


# ---- listeners ---------------------------------------------------------------------------------


def parse_listeners(text: str) -> list[tuple[int, int]]:
    """(port, socket inode) of every LISTEN socket in a /proc/net/tcp or tcp6 table."""
    found = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != TCP_LISTEN:
            continue
        port = int(fields[1].rsplit(":", 1)[1], 16)
        found.append((port, int(fields[9])))
    return found


def read_listeners(proc: str) -> dict[int, set[int]]:
    ports: dict[int, set[int]] = {}
    for table in ("net/tcp", "net/tcp6"):
        try:
            with open(os.path.join(proc, table)) as handle:
                text = handle.read()
        except OSError:
            continue
        for port, inode in parse_listeners(text):
            ports.setdefault(port, set()).add(inode)
    return ports


def systemd_unit(cgroup_text: str) -> str:
    """The .service a process runs in, from /proc/PID/cgroup (v1 or v2), or ''."""
    for line in cgroup_text.splitlines():
        for part in reversed(line.rsplit(":", 1)[-1].split("/")):
            if part.endswith(".service"):
                return part[: -len(".service")]
    return ""


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def process_identity(proc: str, pid: str) -> dict:
    """Program (basename of the executable, not the 15-char comm) and systemd unit of a pid."""
    try:
        program = os.path.basename(os.readlink(os.path.join(proc, pid, "exe")))
    except OSError:
        argv0 = _read(os.path.join(proc, pid, "cmdline")).split("\0", 1)[0]
        program = os.path.basename(argv0) or _read(os.path.join(proc, pid, "comm")).strip()
    if program.endswith(" (deleted)"):  # binary replaced on disk (an upgrade) while running
        program = program[: -len(" (deleted)")]
    unit = systemd_unit(_read(os.path.join(proc, pid, "cgroup")))
    return {"pid": int(pid), "program": program, "unit": unit}


def socket_owners(proc: str, inodes: set[int]) -> dict[int, dict]:
    """Map socket inodes to the process holding them, scanning /proc/*/fd until all are found."""
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    owners: dict[int, dict] = {}
    for pid in (entry for entry in os.listdir(proc) if entry.isdigit()):
        fd_dir = os.path.join(proc, pid, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if target in wanted and wanted[target] not in owners:
                owners[wanted[target]] = process_identity(proc, pid)
        if len(owners) == len(wanted):
            break
    return owners


def check_ports(
    requirements: list[dict], listeners: dict[int, set[int]], owners: dict[int, dict]
) -> list[str]:
    problems = []
    for req in requirements:
        port, name, allowed = int(req["port"]), req.get("name") or "", set(req.get("owners") or [])
        holders = [owners.get(inode) for inode in sorted(listeners.get(port, ()))]
        strangers = [h for h in holders if h is None or not ({h["program"], h["unit"]} & allowed)]
        if not strangers:
            continue
        label = f"TCP port {port}" + (f" ({name})" if name else "")
        known = [h for h in strangers if h is not None]
        if known:
            who = ", ".join(
                f"pid {h['pid']} {h['program']}" + (f" (unit {h['unit']})" if h["unit"] else "")
                for h in known
            )
            fix = f"stop or move it; only {', '.join(sorted(allowed)) or 'nothing'} may hold this port"
            problems.append(f"{label} is in use by {who} -> fix: {fix}")
        else:
            problems.append(
                f"{label} is in use by a process preflight cannot identify -> fix: run with become: true "
                f"to see who holds it (`ss -ltnp 'sport = :{port}'`), then stop or move it"
            )
    return problems


# ---- disk --------------------------------------------------------------------------------------


def nearest_existing(path: str) -> str:
    path = os.path.abspath(path)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def mount_point(path: str) -> str:
    dev = os.stat(path).st_dev
    while path != "/" and os.stat(os.path.dirname(path)).st_dev == dev:
        path = os.path.dirname(path)
    return path


def measure_disks(requirements: list[dict]) -> list[dict]:
    """Group requirements by filesystem; each group: mount, free bytes, needed bytes, paths."""
    groups: dict[int, dict] = {}
    for req in requirements:
        existing = nearest_existing(req["path"])
        dev = os.stat(existing).st_dev
        if dev not in groups:
            fs = os.statvfs(existing)
            groups[dev] = {"mount": mount_point(existing), "free": fs.f_bavail * fs.f_frsize, "needs": []}
        groups[dev]["needs"].append({"path": req["path"], "gib": float(req["min_free_gib"])})
    return list(groups.values())


def check_disks(filesystems: list[dict]) -> list[str]:
    problems = []
    for fs in filesystems:
        needed = sum(n["gib"] for n in fs["needs"])
        free = fs["free"] / GIB
        if free >= needed:
            continue
        parts = " + ".join(f"{n['path']} {n['gib']:.10g}" for n in fs["needs"])
        problems.append(
            f"filesystem {fs['mount']} has {free:.1f} GiB free, needs {needed:.10g} GiB ({parts}) -> fix: "
            f"free or add {needed - free:.1f} GiB there, or lower preflight_disk_requirements"
        )
    return problems


# ---- swap and clock ----------------------------------------------------------------------------


def parse_swaps(text: str) -> list[dict]:
    """Active swap areas from /proc/swaps (header line first)."""
    swaps = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 3:
            swaps.append({"name": fields[0], "size_kib": int(fields[2])})
    return swaps


class Timex(ctypes.Structure):
    """struct timex from <sys/timex.h> (same layout on x86_64 and aarch64)."""

    _fields_ = [
        ("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long), ("status", ctypes.c_int),
        ("constant", ctypes.c_long), ("precision", ctypes.c_long), ("tolerance", ctypes.c_long),
        ("time_sec", ctypes.c_long), ("time_usec", ctypes.c_long), ("tick", ctypes.c_long),
        ("ppsfreq", ctypes.c_long), ("jitter", ctypes.c_long), ("shift", ctypes.c_int),
        ("stabil", ctypes.c_long), ("jitcnt", ctypes.c_long), ("calcnt", ctypes.c_long),
        ("errcnt", ctypes.c_long), ("stbcnt", ctypes.c_long), ("tai", ctypes.c_int),
        ("reserved", ctypes.c_int * 11),
    ]


def clock_max_error_us() -> int | None:
    """The kernel's maximum clock error in microseconds (adjtimex, modes=0 only reads)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        timex = Timex()
        if libc.adjtimex(ctypes.byref(timex)) < 0:
            return None
        return int(timex.maxerror)
    except (OSError, AttributeError):
        return None


def check_time(services: dict[str, str], max_error_us: int | None, wanted: list[str], container: bool):
    """(problems, notes) for the time-sync requirement."""
    problems: list[str] = []
    notes: list[str] = []
    active = [name for name in wanted if services.get(name) == "active"]
    if not active and not container:
        problems.append(
            f"no time sync service is active (looked for {', '.join(wanted)}) -> fix: install and enable "
            "one (e.g. `systemctl enable --now chrony`), or set preflight_require_time_sync: false"
        )
    if max_error_us is None:
        notes.append("could not read the kernel clock state (adjtimex); clock sync not verified")
    elif max_error_us >= SYNCED_MAX_ERROR_US:
        what = f"the clock is not synchronized (kernel maximum error {max_error_us / 1e6:.1f} s)"
        if container:
            notes.append(f"{what}; a container shares its host's clock -> fix time sync on its host")
        else:
            problems.append(
                f"{what} -> fix: check the time sources (`chronyc sources`), wait for the first sync "
                "(`chronyc waitsync`), then rerun"
            )
    return problems, notes


def check_swap(swaps: list[dict], container: bool):
    if not swaps:
        return [], []
    names = ", ".join(f"{s['name']} ({s['size_kib'] // 1024} MiB)" for s in swaps)
    if container:
        return [], [f"swap is on ({names}); it belongs to the container host, a container cannot turn it off"]
    return [
        f"swap is on ({names}) -> fix: `swapoff -a` and remove the swap entries from /etc/fstab (or the "
        "zram/swap units), or set preflight_require_swap_off: false if kubelet allows swap"
    ], []


def check_os_family(name: str, version: str, family: str, supported: list[dict]) -> list[str]:
    """Every package task of the roles is apt/dpkg: an OS of another family would fail mid-deploy."""
    if not supported or family in {entry["family"] for entry in supported}:
        return []
    listed = "; ".join(f"{e['family']} ({', '.join(e.get('distributions') or [])})" for e in supported)
    return [
        f"{name} {version} (OS family {family or 'unknown'}) is not an OS the roles can install on: their "
        f"package tasks use apt and dpkg (supported: {listed}) -> fix: install one of those; RPM "
        "distributions (openEuler, EulerOS, Kylin) need dnf/rpm tasks in the package roles first (README: "
        "supported operating systems)"
    ]


def check_distribution(name: str, version: str, allowed: list[str]) -> list[str]:
    if name in allowed:
        return []
    return [
        f"{name} {version} is not a supported distribution (allowed: {', '.join(allowed)}) -> fix: use one "
        "of those, or add it to preflight_allowed_distributions if you have validated it"
    ]


def check_npu_os(name: str, version: str, allowed: list[str], groups: list[str]) -> list[str]:
    """An NPU node runs an OS Huawei lists for the driver: 'Ubuntu 22.04' matches 22.04 and 22.04.4,
    'Debian 12' matches 12 and 12.5 (docs/reference/ascend.md §8)."""
    if "npu_node" not in groups or not allowed:
        return []
    for entry in allowed:
        want_name, _, want_version = entry.partition(" ")
        if name == want_name and (not want_version or version == want_version
                                  or version.startswith(want_version + ".")):
            return []
    return [
        f"{name} {version} is not on Huawei's OS list for the NPU driver on this NPU node (accepted: "
        f"{', '.join(allowed)}): the driver is neither built nor supported there -> fix: install one of "
        "those, or add it to preflight_npu_distributions if you have validated the driver on it "
        "(README: supported operating systems)"
    ]


def service_states(module: AnsibleModule, names: list[str]) -> dict[str, str]:
    """unit -> its ActiveState ("active", "inactive", "failed", ...; systemd says "inactive" for a
    unit it does not know); {} without systemctl."""
    if not names or not module.get_bin_path("systemctl"):
        return {}
    return {name: state["active"] for name, state in unit_states(module, names).items()}


def node_facts(module: AnsibleModule) -> dict:
    """setup's `distribution` and `virtual` subsets, named as setup names them (ansible_ prefix)."""
    facts: dict = {}
    facts.update(DistributionFactCollector().collect(module=module))
    facts.update(LinuxVirtualCollector().collect(module=module, collected_facts=facts))
    return {f"ansible_{name}": value for name, value in facts.items()}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "allowed_distributions": {"type": "list", "elements": "str", "required": True},
            "supported_os_families": {"type": "list", "elements": "dict", "default": []},
            "npu_distributions": {"type": "list", "elements": "str", "default": []},
            "host_groups": {"type": "list", "elements": "str", "default": []},
            "require_time_sync": {"type": "bool", "default": True},
            "time_sync_services": {"type": "list", "elements": "str", "default": []},
            "require_swap_off": {"type": "bool", "default": True},
            "disk_requirements": {"type": "list", "elements": "dict", "default": []},
            "ports": {"type": "list", "elements": "dict", "default": []},
        },
        supports_check_mode=True,
    )
    p = module.params
    facts = node_facts(module)
    container = "container" in (facts.get("ansible_virtualization_tech_guest") or [])
    groups = p["host_groups"]
    name, version = facts.get("ansible_distribution", ""), facts.get("ansible_distribution_version", "")
    # an OS of a family the roles cannot install on is the one problem worth naming about the OS
    problems = check_os_family(name, version, facts.get("ansible_os_family", ""), p["supported_os_families"])
    if not problems:
        problems = check_distribution(name, version, p["allowed_distributions"])
    if not problems:
        problems = check_npu_os(name, version, p["npu_distributions"], groups)
    notes: list[str] = []
    # the host's architecture as `uname -m` prints it: the role compares the inventory's with it
    probe: dict = {"container": container, "machine": os.uname().machine}

    if p["require_time_sync"]:
        probe["services"] = service_states(module, p["time_sync_services"])
        probe["clock_max_error_us"] = clock_max_error_us()
        found, noted = check_time(
            probe["services"], probe["clock_max_error_us"], p["time_sync_services"], container
        )
        problems += found
        notes += noted

    if p["require_swap_off"]:
        probe["swap"] = parse_swaps(_read("/proc/swaps"))
        found, noted = check_swap(probe["swap"], container)
        problems += found
        notes += noted

    disks = [d for d in p["disk_requirements"] if applies(d, groups)]
    probe["filesystems"] = measure_disks(disks)
    problems += check_disks(probe["filesystems"])

    ports = [entry for entry in p["ports"] if applies(entry, groups)]
    listeners = read_listeners("/proc")
    busy = set().union(*(listeners.get(int(entry["port"]), set()) for entry in ports)) if ports else set()
    owners = socket_owners("/proc", busy) if busy else {}
    probe["listeners"] = {
        str(port): [owners.get(i) for i in sorted(listeners[port])]
        for port in sorted({int(e["port"]) for e in ports} & set(listeners))
    }
    problems += check_ports(ports, listeners, owners)

    for note in notes:
        module.warn(note)
    module.exit_json(changed=False, problems=problems, notes=notes, probe=probe, ansible_facts=facts)


if __name__ == "__main__":
    main()
