"""Command line of the lab NPU emulator, run from the checkout root: `python -m
tests.lab_standins.npu_emulator ...`.

`ufcctl lab up` runs `setup ... --no-inventory --json` (it writes the inventory's
group_vars/npu_node.yml itself from the JSON); by hand, `setup --lab NAME` on a running lab also
writes that file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.parse
from pathlib import Path

from tests.lab_build import addons as lab_addons
from tests.lab_build import build as lab_build
from tests.lab_build import kube_images as lab_kube_images
from tests.lab_build import mirror as lab_mirror
from tests.lab_standins.npu_emulator.lab import (
    IMAGE,
    LABEL_INVENTORY,
    network_of,
    npu_node_vars,
    prepare,
    write_inventory_vars,
)
from tests.lab_standins.npu_emulator.packages import RELEASES, build
from tests.lab_standins.upstream_registry import registry
from tests.lab_standins.upstream_registry.push import PushError
from ufcctl.lab.layout import DEFAULT_KUBE, KUBE_EMULATED, KUBE_MODES, KUBE_REAL


def _label(value: str) -> tuple[str, str]:
    key, sep, val = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--label {value!r}: expected KEY=VALUE")
    return key, val


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.lab_standins.npu_emulator")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the emulated packages and SHA256SUMS into DIR")
    b.add_argument("directory", type=Path)
    s = sub.add_parser("setup", help="packages + mirror container on a running lab + npu_node group_vars")
    s.add_argument("--lab", default="ufc", help="lab name as in `ufcctl lab up --lab` (default ufc)")
    s.add_argument("--network", default=None, help="podman network of the lab (default: the lab's)")
    s.add_argument("--ip", default=None, help="mirror address (default: the lab subnet + 5)")
    s.add_argument("--name", default=None, help="mirror container name (default: LAB-hdk-mirror)")
    s.add_argument("--image", default=IMAGE, help=f"image of the mirror container (default {IMAGE})")
    s.add_argument("--label", type=_label, action="append", default=[], metavar="KEY=VALUE",
                   help="label for the mirror container (repeatable; default: the lab's, as `ufcctl lab up` "
                        "sets them, so `ufcctl lab down` removes the mirror)")
    s.add_argument("--workdir", type=Path, default=None,
                   help="where the packages go (default: $UFC_STATE_DIR/lab/LAB-npu-emulator, as `lab up`)")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--inventory", type=Path, default=None, help="lab inventory dir (default: the lab's)")
    where.add_argument("--no-inventory", action="store_true", help="write no group_vars file")
    s.add_argument("--json", action="store_true", help="print the mirror and the npu_node vars as JSON")
    s.add_argument("--kube", choices=KUBE_MODES, default=DEFAULT_KUBE,
                   help="what the mirror serves as kubeadm and kubelet: the LAB KUBE EMULATOR's (default), "
                        "or the real ones built from k8s.io/kubernetes with registry.k8s.io's images in "
                        "the LAB UPSTREAM REGISTRY (`ufcctl lab up --kube real`)")
    return parser


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _setup(args: argparse.Namespace) -> int:
    network = args.network or ("ufcctl-lab" if args.lab == "ufc" else f"ufcctl-lab-{args.lab}")
    name = args.name or f"{args.lab}-hdk-mirror"
    # By hand, the same defaults as `ufcctl lab up`: a rerun of either keeps the other's mirror.
    labels = dict(args.label) or {"ufcctl.lab": "1", "ufcctl.lab.name": args.lab,
                                  "ufcctl.lab.role": "npu_mirror"}
    state = Path(os.environ.get("UFC_STATE_DIR", ".ufc"))
    workdir = args.workdir or state / "lab" / f"{args.lab}-npu-emulator"
    # etcd and kubectl built from their Go modules (tests/lab_build; cached, so only a machine's first
    # `lab up` builds) go beside the packages first, in their upstream layouts
    try:
        component_vars = lab_mirror.publish_lab(workdir, say=_progress, kube=args.kube)
    except lab_build.BuildError as err:
        print(f"lab build: {err}", file=sys.stderr)
        return 1
    mirror = prepare(network, workdir, name, RELEASES, args.ip, args.image, labels,
                     kube_emulator=args.kube == KUBE_EMULATED)
    # The mirror container also serves the LAB UPSTREAM REGISTRY (tests/lab_standins/upstream_registry), the
    # upstream of the lab's registry caches: it must answer before a deploy starts them.
    address = urllib.parse.urlsplit(mirror.url).hostname or ""
    registry.ensure_running(name, address)
    # ...and holds the LAB ADD-ON STAND-IN images (tests/lab_build/addons.py) under the add-ons' upstream
    # paths and tags, for a real cluster's add-on Pods; a rerun sends only the manifests (blobs are there)
    try:
        lab_addons.publish(f"http://{address}:{registry.DEFAULT_PORT}", say=_progress)
    except lab_build.BuildError as err:
        print(f"lab build: {err}", file=sys.stderr)
        return 1
    except PushError as err:
        print(f"lab add-on stand-ins: {err}", file=sys.stderr)
        return 1
    # ...and registry.k8s.io's images of the built releases (tests/lab_build/kube_images.py)
    if args.kube == KUBE_REAL:
        try:
            lab_kube_images.publish(f"http://{address}:{registry.DEFAULT_PORT}", say=_progress)
        except (lab_build.BuildError, PushError) as err:
            print(f"lab kube images: {err}", file=sys.stderr)
            return 1
    written = None
    if not args.no_inventory:
        inventory = args.inventory
        if inventory is None:
            _, labels = network_of(network)
            if LABEL_INVENTORY not in labels:
                print(f"network {network} has no {LABEL_INVENTORY} label: pass --inventory", file=sys.stderr)
                return 2
            inventory = Path(labels[LABEL_INVENTORY])
        written = write_inventory_vars(inventory, mirror, RELEASES[0])
    if args.json:
        print(json.dumps({
            "mirror": {"name": mirror.name, "url": mirror.url, "changed": mirror.changed},
            "npu_node_vars": npu_node_vars(mirror, RELEASES[0]),
            "all_vars": {"ufc_artifact_url": mirror.root, **component_vars},
            "group_vars_file": str(written) if written else None,
        }))
    else:
        print(f"mirror {mirror.name} serves {mirror.url}" + (f"; wrote {written}" if written else ""))
    return 0


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.command == "setup":
        return _setup(args)
    sums = build(args.directory, list(RELEASES))
    for name in sorted(sums):
        print(f"{sums[name]}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
