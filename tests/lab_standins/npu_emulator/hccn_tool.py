#!/usr/bin/python3
"""LAB NPU EMULATOR's hccn_tool -- NOT Huawei's tool. Installed by the emulated driver package at
/usr/local/Ascend/driver/tools/hccn_tool, where the real one lives (Ascend/mind-cluster
component/ascend-common/devmanager/hccn/hccn_tool.go). It keeps each chip's device IP, netmask,
gateway and detect address in a state file it owns and answers the queries ufcctl makes with the
output keywords of the real tool (`ipaddr:`, `netmask:`, `link status: UP`, `net health status:
Success`, `Ifname:`, `... packets transmitted, ... received, X% packet loss`; the same sources as
docs/reference/ascend.md).

What a chip sees on the fabric comes from two lab files, never from what was set here:
- the lab's wiring (/etc/ufc-npu-emulator/wiring.json, written by the lab from the inventory): the
  switch and port each chip's cable goes to, i.e. what LLDP reports;
- the node's fault file (/etc/ufc-npu-emulator.json, shared with npu-smi): "link_down" [chips],
  "net_health" {chip: status}, "lldp" {chip: {"switch", "port"}} (a miscabled chip), "duplicate_ip"
  {chip: address} (another device holds the chip's address: setting it fails and the chip keeps
  that address), "ping_loss" {address: percent}.

Usage: hccn_tool -i ID <-ip|-gateway|-netdetect|-link|-net_health|-lldp|-ping> <-g|-s ...>
"""

import ipaddress
import json
import os
import sys

# UFC_NPU_EMULATOR_ROOT moves all three under a directory (unit tests run the tool on this machine).
ROOT = os.environ.get("UFC_NPU_EMULATOR_ROOT", "")
FAULTS = ROOT + "/etc/ufc-npu-emulator.json"
WIRING = ROOT + "/etc/ufc-npu-emulator/wiring.json"
STATE = ROOT + "/var/lib/ufc-npu-emulator/hccn.json"


def _load(path):
    try:
        with open(path) as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(state):
    os.makedirs(os.path.dirname(STATE), exist_ok=True)
    tmp = STATE + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(state, fh, sort_keys=True)
    os.replace(tmp, STATE)


def _err(text, rc=1):
    print(text, file=sys.stderr)
    return rc


def _ipv4(value):
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        return None


def _mask(value):
    if _ipv4(value) is None:
        return None
    try:
        ipaddress.IPv4Network(f"0.0.0.0/{value}")
    except ValueError:
        return None  # not a contiguous mask
    return value


def _pairs(args):
    """`address A netmask M` -> {"address": A, "netmask": M}; None on an odd count."""
    if len(args) % 2:
        return None
    return dict(zip(args[0::2], args[1::2], strict=True))


class Chip:
    def __init__(self, chip, faults, wiring, state):
        self.id = chip
        self.key = str(chip)
        self.faults = faults
        self.wiring = wiring
        self.state = state
        self.own = state.setdefault(self.key, {})

    def fault(self, name):
        value = self.faults.get(name) or {}
        if isinstance(value, list):
            return self.id in [int(v) for v in value]
        return value.get(self.key)

    def link_up(self):
        return not self.fault("link_down")

    def health(self):
        if not self.link_up():
            return "Unreachable"
        forced = self.fault("net_health")
        if forced:
            return str(forced)
        if not self.own.get("address"):
            return "Init"
        if not self.own.get("netdetect"):
            return "Detect ip set"  # mind-cluster faultdiag lists it beside the socket/timeout faults
        return "Success"

    def ip(self, args):
        if args == ["-g"]:
            address = self.fault("duplicate_ip") or self.own.get("address")
            if not address:
                return _err(f"device {self.id} get ip info failed: no ip address configured")
            print(f"ipaddr:{address}")
            print(f"netmask:{self.own.get('netmask', '')}")
            return 0
        given = _pairs(args[1:]) if args[:1] == ["-s"] else None
        if given is None or set(given) != {"address", "netmask"}:
            return _err("usage: hccn_tool -i ID -ip -s address A netmask M | -ip -g", 2)
        address, netmask = _ipv4(given["address"]), _mask(given["netmask"])
        if address is None:
            return _err(f"Error: invalid ip address {given['address']}")
        if netmask is None:
            return _err(f"Error: invalid netmask {given['netmask']}")
        network = ipaddress.IPv4Network(f"{address}/{netmask}", strict=False)
        if address in (str(network.network_address), str(network.broadcast_address)):
            return _err(f"Error: invalid ip address {address} for netmask {netmask}")
        if self.fault("duplicate_ip"):
            return _err(f"device {self.id} set ip failed: address {address} conflicts (lab emulator fault)")
        self.own.update(address=address, netmask=netmask)
        return None

    def single(self, args, name, label):
        if args == ["-g"]:
            value = self.own.get(name)
            if not value:
                return _err(f"device {self.id} get {name} failed: not configured")
            print(f"{label}:{value}")
            return 0
        given = _pairs(args[1:]) if args[:1] == ["-s"] else None
        key = "gateway" if name == "gateway" else "address"
        if given is None or set(given) != {key}:
            return _err(f"usage: hccn_tool -i ID -{name} -s {key} A | -{name} -g", 2)
        value = _ipv4(given[key])
        if value is None:
            return _err(f"Error: invalid ip address {given[key]}")
        self.own[name] = value
        return None

    def lldp(self):
        if not self.link_up():
            return _err(f"device {self.id} get lldp info failed: link down")
        wired = (self.wiring.get("chips") or {}).get(self.key)
        neighbour = self.fault("lldp") or wired
        if not neighbour:
            return _err(f"device {self.id} get lldp info failed: no neighbour")
        print("Chassis ID TLV")
        print(f"\tMAC: 00:e0:fc:00:{int(self.id) % 256:02x}:01")
        print("Port ID TLV")
        print(f"\tIfname: {neighbour['port']}")
        print("System Name TLV")
        print(f"\tSysName: {neighbour['switch']}")
        print("Time To Live TLV")
        print("\tTTL: 121")
        return 0

    def ping(self, args):
        given = _pairs(args[1:]) if args[:1] == ["-g"] else None
        if given is None or "address" not in given or set(given) - {"address", "pkt"}:
            return _err("usage: hccn_tool -i ID -ping -g address A [pkt N]", 2)
        target = _ipv4(given["address"])
        if target is None:
            return _err(f"Error: invalid ip address {given['address']}")
        count = int(given.get("pkt", "3")) if str(given.get("pkt", "3")).isdigit() else 0
        if not 1 <= count <= 1000:
            return _err(f"Error: invalid packet count {given.get('pkt')}")
        if not self.own.get("address"):
            return _err(f"device {self.id} ping failed: no ip address configured")
        loss = 0.0
        own = f"{self.own['address']}/{self.own.get('netmask', '32')}"
        network = ipaddress.IPv4Network(own, strict=False)
        if not self.link_up() or self.health() != "Success":
            loss = 100.0
        elif ipaddress.IPv4Address(target) not in network and not self.own.get("gateway"):
            loss = 100.0
        else:
            loss = float((self.faults.get("ping_loss") or {}).get(target, 0.0))
        received = count - round(count * loss / 100.0)
        print(f"device {self.id} PING {target}")
        print(f"{count} packets transmitted, {received} received, {loss:.2f}% packet loss")
        if received:
            print("rtt min/avg/max = 0.041/0.058/0.093 ms")
        return 0


def main(argv):
    if len(argv) < 3 or argv[0] != "-i":
        return _err("usage: hccn_tool -i ID <-ip|-gateway|-netdetect|-link|-net_health|-lldp|-ping> ...", 2)
    faults = _load(FAULTS)
    chips = int(faults.get("chips", 8))
    if not argv[1].isdigit() or not 0 <= int(argv[1]) < chips:
        return _err(f"Error: invalid device id {argv[1]} (valid: 0-{chips - 1})")
    state = _load(STATE)
    chip = Chip(int(argv[1]), faults, _load(WIRING), state)
    command, args = argv[2], argv[3:]
    if command == "-ip":
        rc = chip.ip(args)
    elif command == "-gateway":
        rc = chip.single(args, "gateway", "default gateway")
    elif command == "-netdetect":
        rc = chip.single(args, "netdetect", "netdetect address")
    elif command == "-link" and args == ["-g"]:
        print(f"link status: {'UP' if chip.link_up() else 'DOWN'}")
        return 0
    elif command == "-net_health" and args == ["-g"]:
        print(f"net health status: {chip.health()}")
        return 0
    elif command == "-lldp" and args == ["-g"]:
        return chip.lldp()
    elif command == "-ping":
        return chip.ping(args)
    else:
        return _err(f"Error: unsupported command {' '.join(argv[2:])} (lab emulator)", 2)
    if rc is None:  # a set that succeeded
        _save(state)
        return 0
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
