#!/usr/bin/python3
"""LAB NPU EMULATOR's npu-smi -- NOT Huawei's tool. Prints the `npu-smi info` table layout of an
Atlas 800T A2 (910B) node for the chip count in /etc/ufc-npu-emulator.json (default 8), and the
`npu-smi info -t board -i N` fields ufcctl reads (Software Version, Firmware Version;
docs/reference/ascend.md §6). Chips listed in "unhealthy_chips" report health Critical.
"""

import json
import sys

FAULTS = "/etc/ufc-npu-emulator.json"
PREFIX = "/usr/local/Ascend"


def _version(kind):
    try:
        with open(f"{PREFIX}/{kind}/version.info") as fh:
            for line in fh:
                if line.startswith("Version="):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


def _faults():
    try:
        with open(FAULTS) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def info(chips, name, bad, version):
    rule = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * 52 + "+"
    double = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * 52 + "+"
    head = f"npu-smi {version}".ljust(33) + f"Version: {version}"
    print("+" + "-" * 96 + "+")
    print(f"| {head:<95}|")
    print(rule)
    power = "Power(W)    Temp(C)           Hugepages-Usage(page)"
    print(f"| {'NPU   Name':<26}| {'Health':<14}| {power:<51}|")
    print(f"| {'Chip':<26}| {'Bus-Id':<14}| {'AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)':<51}|")
    print(double)
    for i in range(chips):
        health = "Critical" if i in bad else "OK"
        bus = f"0000:{0xC1 + i * 0x10 & 0xFF:02X}:00.0"
        print(f"| {f'{i:<6}{name}':<26}| {health:<14}| {'93.6        36                0    / 0':<51}|")
        print(f"| {'0':<26}| {bus:<14}| {'0           0    / 0          3162 / 65536':<51}|")
        print(double if i < chips - 1 else rule)
    process = "Process name             | Process memory(MB)"
    print(f"| {'NPU     Chip':<26}| {'Process id':<14}| {process:<51}|")
    print(double)
    for i in range(chips):
        print(f"| {f'No running processes found in NPU {i}':<95}|")
        print(double if i < chips - 1 else "+" + "-" * 96 + "+")


def board(index, chips):
    if not 0 <= index < chips:
        print(f"Error: the NPU ID {index} is invalid.", file=sys.stderr)
        return 1
    print(f"        {'NPU ID':<31}: {index}")
    print(f"        {'Product Name':<31}: EMULATED-910B")
    print(f"        {'Manufacturer':<31}: ufcctl lab emulator")
    print(f"        {'Software Version':<31}: {_version('driver')}")
    print(f"        {'Firmware Version':<31}: {_version('firmware')}")
    print(f"        {'Compatibility':<31}: OK")
    return 0


def main(argv):
    faults = _faults()
    chips = int(faults.get("chips", 8))
    name = str(faults.get("chip_name", "910B3"))
    bad = {int(k) for k in faults.get("unhealthy_chips", [])}
    version = _version("driver")
    if not version:
        print("dcmi module initialize failed. ret is -8005", file=sys.stderr)
        return 1
    if argv == ["info"]:
        info(chips, name, bad, version)
        return 0
    if len(argv) == 5 and argv[:3] == ["info", "-t", "board"] and argv[3] == "-i" and argv[4].isdigit():
        return board(int(argv[4]), chips)
    print(f"Usage: npu-smi info [-t board -i ID]  (lab emulator; got: {' '.join(argv)})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
