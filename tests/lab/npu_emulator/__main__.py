"""Command line of the lab NPU emulator, run from the repo root: `python -m tests.lab.npu_emulator ...`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.lab.npu_emulator.lab import setup_lab
from tests.lab.npu_emulator.packages import RELEASES, build


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.lab.npu_emulator")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the emulated packages and SHA256SUMS into DIR")
    b.add_argument("directory", type=Path)
    s = sub.add_parser("setup", help="packages + mirror container on a running lab + npu_node group_vars")
    s.add_argument("--lab", default="ufc", help="lab name as in `ufcctl lab up --lab` (default ufc)")
    s.add_argument("--inventory", type=Path, default=None, help="lab inventory dir (default: the lab's)")
    s.add_argument("--workdir", type=Path, default=Path(".ufc/lab/npu-emulator"))
    args = parser.parse_args(argv)
    if args.command == "setup":
        network = "ufcctl-lab" if args.lab == "ufc" else f"ufcctl-lab-{args.lab}"
        mirror, written = setup_lab(network, args.workdir, f"{args.lab}-hdk-mirror", args.inventory)
        print(f"mirror {mirror.name} serves {mirror.url}; wrote {written}")
        return 0
    if args.command == "build":
        sums = build(args.directory, list(RELEASES))
        for name in sorted(sums):
            print(f"{sums[name]}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
