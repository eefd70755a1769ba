"""Command line of the lab NPU emulator: `python -m tests.lab.npu_emulator build DIR` (from the repo root)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.lab.npu_emulator.packages import RELEASES, build


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.lab.npu_emulator")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the emulated packages and SHA256SUMS into DIR")
    b.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    if args.command == "build":
        sums = build(args.directory, list(RELEASES))
        for name in sorted(sums):
            print(f"{sums[name]}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
