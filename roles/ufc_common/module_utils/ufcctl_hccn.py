"""An NPU node's fabric (the chips' RoCE ports) through hccn_tool: configure, check, report.

Node-side (ansible.module_utils.ufcctl_hccn): standard library only, the node's python3. Used by
roles/ascend_driver's module (tier 1 admission, `ufcctl npu check`). The plan of each chip (device
IP, netmask, gateway, the switch and port its cable must reach) is decided on the controller
(ufcctl/domain/npu/fabric_plan.py, filter ufcctl_ascend_driver_fabric_plan); here it is applied and compared
with what the chip reports.

hccn_tool's commands and output keywords (Ascend/mind-cluster
component/ascend-common/devmanager/hccn/hccn_tool.go; the multi-node pre-run checks published in
vllm-project/vllm-ascend docs/source/tutorials/features/pd_disaggregation_mooncake_*):
`-i N -ip -g` -> `ipaddr:A` and `netmask:M`; `-gateway -g`; `-netdetect -g`; `-link -g` ->
`link status: UP|DOWN`; `-net_health -g` -> `net health status: Success` (else a fault such as
`Socket failed`, `Receive timeout`, `Unreachable`, `Detect ip set`, `Init`); `-lldp -g` -> the
switch's port as `Ifname: <port>` and its system name; `-ping -g address A` -> `N packets
transmitted, M received, X% packet loss`. /etc/hccn.conf holds `address_N`, `netmask_N`,
`netdetect_N` and `gateway_N` per device N (the HCCL rank table's device_ip is address_N).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

CONF_KEYS = ("address", "netmask", "netdetect", "gateway")
HEALTH_OK = "Success"
# The textfile collector file (node exporter) with the fabric metrics of the last check.
METRICS_FILE = "ufcctl_npu_fabric.prom"


def field(text, key):
    """The value after `key:` on a line of hccn_tool's output ('' when absent); keys ignore case."""
    match = re.search(r"(?mi)^\s*" + re.escape(key) + r"\s*:\s*(\S+)", text or "")
    return match.group(1) if match else ""


def parse_ip(text):
    return field(text, "ipaddr"), field(text, "netmask")


def parse_address(text):
    """The one address of `-gateway -g` / `-netdetect -g` ('default gateway:G', 'netdetect address:A')."""
    match = re.search(r"(\d{1,3}(?:\.\d{1,3}){3})", text or "")
    return match.group(1) if match else ""


def parse_link(text):
    match = re.search(r"(?i)link status\s*:\s*(\w+)", text or "")
    return match.group(1).upper() if match else ""


def parse_health(text):
    match = re.search(r"(?i)net health status\s*:\s*([^\r\n]+)", text or "")
    return match.group(1).strip() if match else ""


def parse_lldp(text):
    """(switch system name, port) of `-lldp -g`: `Ifname: <port>`, and the system name from a
    `SysName:`/`System Name:` line or the line under the `System Name TLV` header."""
    port = field(text, "Ifname")
    switch = ""
    lines = (text or "").splitlines()
    for index, line in enumerate(lines):
        match = re.match(r"(?i)\s*(?:SysName|System Name)\s*:\s*(\S.*)$", line)
        if match:
            switch = match.group(1).strip()
            break
        if re.match(r"(?i)\s*System Name TLV\s*$", line) and index + 1 < len(lines):
            switch = re.sub(r"(?i)^\s*(?:SysName|System Name)\s*:\s*", "", lines[index + 1]).strip()
            break
    return switch, port


def parse_ping(text):
    """(sent, received, loss percent, average ms or None) of `-ping -g`; None when unreadable."""
    match = re.search(r"(\d+) packets transmitted,\s*(\d+) received,\s*([\d.]+)% packet loss", text or "")
    if not match:
        return None
    rtt = re.search(r"=\s*[\d.]+/([\d.]+)/[\d.]+\s*ms", text)
    average = float(rtt.group(1)) if rtt else None
    return int(match.group(1)), int(match.group(2)), float(match.group(3)), average


def conf_values(plan):
    """{key_N: value} /etc/hccn.conf must hold for the plan (the detect address is the gateway)."""
    values = {}
    for chip in plan:
        n = chip["chip"]
        values[f"address_{n}"] = chip["address"]
        values[f"netmask_{n}"] = chip["netmask"]
        values[f"netdetect_{n}"] = chip["gateway"]
        values[f"gateway_{n}"] = chip["gateway"]
    return values


def merge_conf(existing, plan):
    """/etc/hccn.conf with the plan's keys set: other keys (send_arp_status_N, tls_enable_N, arp_N, ...)
    and their order are kept, a planned key is replaced where it stands, missing ones are appended in
    device order."""
    wanted = conf_values(plan)
    out, seen = [], set()
    for line in (existing or "").splitlines():
        key = line.split("=", 1)[0].strip() if "=" in line else None
        if key in wanted:
            if key in seen:
                continue  # a key given twice: one line, the plan's
            seen.add(key)
            out.append(f"{key}={wanted[key]}")
        else:
            out.append(line)
    out.extend(f"{key}={value}" for key, value in wanted.items() if key not in seen)
    return "\n".join(out) + "\n"


def chip_problems(planned, seen, addresses_of_others):
    """What fails tier 1 on one chip: [] when its fabric is as planned.

    planned: the chip's plan (address, netmask, gateway, switch, port); seen: what hccn_tool said
    (address, netmask, link, health, switch, port, error); addresses_of_others: {address: chip} of the
    node's other chips (planned), to name a duplicate."""
    problems = []
    if seen.get("link") != "UP":
        problems.append(f"link {seen.get('link') or 'unknown'}")
    if seen.get("health") != HEALTH_OK:
        problems.append(f"net health {seen.get('health') or 'unknown'}")
    address = seen.get("address", "")
    if (address, seen.get("netmask", "")) != (planned["address"], planned["netmask"]):
        other = addresses_of_others.get(address)
        what = f"duplicate of chip {other}'s " if other is not None else ""
        problems.append(f"device ip {address or 'unset'}/{seen.get('netmask') or '-'} ({what}planned "
                        f"{planned['address']}/{planned['netmask']})"
                        + (f": {seen['ip_error']}" if seen.get("ip_error") else ""))
    lldp = (seen.get("switch"), seen.get("port"))
    if seen.get("link") == "UP" and lldp != (str(planned["switch"]), str(planned["port"])):  # down: no LLDP
        got = f"{seen.get('switch') or '?'} port {seen.get('port') or '?'}" if seen.get("port") else \
            (seen.get("lldp_error") or "no LLDP neighbour")
        problems.append(f"LLDP neighbour {got} (expected {planned['switch']} port {planned['port']})")
    return problems


def summary(chips):
    """One line for a node: every chip's problems, or how many chips passed."""
    bad = [f"chip {c['chip']}: {', '.join(c['problems'])}" for c in chips if c["problems"]]
    if bad:
        return "NPU fabric: " + "; ".join(bad)
    return f"NPU fabric: {len(chips)} chip(s) as planned (link UP, net health Success, device ip, LLDP)"


def ping_line(pings):
    """'; ping: N pair(s), worst loss X%, max avg Y ms' of a deep check ('' without one)."""
    if pings is None:
        return ""
    if not pings:
        return "; ping: no ToR peer to ping"
    worst = max(p["loss"] for p in pings)
    slowest = max((p["avg_ms"] for p in pings if p.get("avg_ms") is not None), default=None)
    rtt = f", max avg {slowest:g} ms" if slowest is not None else ""
    return f"; ping: {len(pings)} pair(s), worst loss {worst:g}%{rtt}"


def metrics(chips, pings=None):
    """The textfile collector's text: per chip link, health, address and neighbour as planned, and
    (deep check) each pair's loss."""
    lines = [
        "# HELP ufcctl_npu_fabric_link_up Chip port link status from hccn_tool (1 UP, 0 DOWN).",
        "# TYPE ufcctl_npu_fabric_link_up gauge",
    ]
    lines += [f'ufcctl_npu_fabric_link_up{{chip="{c["chip"]}"}} {int(c.get("link") == "UP")}' for c in chips]
    lines += [
        "# HELP ufcctl_npu_fabric_as_planned Chip net health Success, device ip and LLDP neighbour as "
        "planned (1) or not (0).",
        "# TYPE ufcctl_npu_fabric_as_planned gauge",
    ]
    lines += [f'ufcctl_npu_fabric_as_planned{{chip="{c["chip"]}"}} {int(not c["problems"])}' for c in chips]
    if pings is not None:
        lines += ["# HELP ufcctl_npu_fabric_ping_loss_ratio Packet loss from a chip to a ToR peer's chip.",
                  "# TYPE ufcctl_npu_fabric_ping_loss_ratio gauge"]
        lines += [f'ufcctl_npu_fabric_ping_loss_ratio{{chip="{p["chip"]}",peer="{p["peer"]}"}} '
                  f'{p["loss"] / 100.0:.4f}' for p in pings]
    return "\n".join(lines) + "\n"


class Fabric:
    """Configure and check every planned chip with `run(argv) -> (rc, out, err)` (run_command)."""

    def __init__(self, run, hccn_tool, plan):
        self.run = run
        self.tool = hccn_tool
        self.plan = sorted(plan, key=lambda c: int(c["chip"]))

    def tool_call(self, chip, *args):
        rc, out, err = self.run([self.tool, "-i", str(chip), *args])
        return rc, out or "", (err or out or "").strip()

    def configure(self, check_mode):
        """Set each chip's device IP, gateway and detect address where they differ from the plan; the
        list of changes (made or, in check mode, due) and {chip: error} of sets that failed."""
        changes, errors = [], {}
        for chip in self.plan:
            n = chip["chip"]
            _, out, _ = self.tool_call(n, "-ip", "-g")
            if parse_ip(out) != (chip["address"], chip["netmask"]):
                changes.append(f"chip {n} ip {chip['address']}/{chip['netmask']}")
                if not check_mode:
                    rc, _, err = self.tool_call(n, "-ip", "-s", "address", chip["address"],
                                                "netmask", chip["netmask"])
                    if rc != 0:
                        errors[n] = err.splitlines()[-1] if err else f"rc {rc}"
            for what, key in (("gateway", "gateway"), ("netdetect", "address")):
                _, out, _ = self.tool_call(n, f"-{what}", "-g")
                if parse_address(out) != chip["gateway"]:
                    changes.append(f"chip {n} {what} {chip['gateway']}")
                    if not check_mode:
                        rc, _, err = self.tool_call(n, f"-{what}", "-s", key, chip["gateway"])
                        if rc != 0:
                            errors.setdefault(n, err.splitlines()[-1] if err else f"rc {rc}")
        return changes, errors

    def check(self, ip_errors=None):
        """Every planned chip as hccn_tool sees it, with its problems (chip_problems)."""
        ip_errors = ip_errors or {}
        planned = {c["address"]: c["chip"] for c in self.plan}
        chips = []
        for chip in self.plan:
            n = chip["chip"]
            seen = {"chip": n}
            rc, out, err = self.tool_call(n, "-ip", "-g")
            seen["address"], seen["netmask"] = parse_ip(out) if rc == 0 else ("", "")
            if n in ip_errors:
                seen["ip_error"] = ip_errors[n]
            seen["link"] = parse_link(self.tool_call(n, "-link", "-g")[1])
            seen["health"] = parse_health(self.tool_call(n, "-net_health", "-g")[1])
            rc, out, err = self.tool_call(n, "-lldp", "-g")
            seen["switch"], seen["port"] = parse_lldp(out) if rc == 0 else ("", "")
            if rc != 0:
                seen["lldp_error"] = err.splitlines()[-1] if err else f"hccn_tool -lldp rc {rc}"
            others = {a: c for a, c in planned.items() if c != n}
            seen["problems"] = chip_problems(chip, seen, others)
            chips.append(seen)
        return chips

    def ping(self, peers, count):
        """Chip i to every address listed for chip i ({chip: [address]}, the ToR's: this node's own are
        left out): loss and latency per pair, in chip order.

        Each chip pings from its own RoCE port, so the chips ping at the same time, one thread each, and
        each chip's peers one after the other: a node's tier 2 lasts as long as one chip's pings (15
        peers under a ToR of 16 servers, about 3 s each at `pkt 3`), not eight chips' in a row."""
        own = {c["address"] for c in self.plan}

        def one_chip(chip):
            n = chip["chip"]
            pairs = []
            for peer in peers.get(str(n), peers.get(n, [])):
                if peer in own:
                    continue
                argv = (n, "-ping", "-g", "address", peer, "pkt", str(count))
                rc, out, err = self.tool_call(*argv)
                parsed = parse_ping(out) if rc == 0 else None
                if parsed is None:  # the tool failed or printed no count (not a measured loss): once more
                    rc, out, err = self.tool_call(*argv)
                    parsed = parse_ping(out) if rc == 0 else None
                if parsed is None:
                    pairs.append({"chip": n, "peer": peer, "loss": 100.0, "avg_ms": None,
                                  "error": (err.splitlines() or [f"rc {rc}"])[-1]})
                else:
                    pairs.append({"chip": n, "peer": peer, "loss": parsed[2], "avg_ms": parsed[3]})
            return pairs

        if not self.plan:
            return []
        with ThreadPoolExecutor(max_workers=len(self.plan)) as pool:
            return [pair for chunk in pool.map(one_chip, self.plan) for pair in chunk]
