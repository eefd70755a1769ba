"""The lab's NPU emulator step of `lab up`: packages, a mirror container on the lab network, npu_node vars.

The emulator lives in the checkout (`tests/lab_standins/npu_emulator`, not Huawei software) and runs as
a process
(ufcctl/lab/emulators.py); this module decides what to ask of it and what the lab keeps: the mirror
carries the lab's labels (so `lab down` removes it) and the vars go into the lab inventory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ufcctl.domain.npu.fabric_plan import host_plan
from ufcctl.errors import RunFailed
from ufcctl.lab.emulators import NPU_EMULATOR_DIR, npu_emulator_present, run_npu_emulator
from ufcctl.lab.inventory import host_entry
from ufcctl.lab.layout import DEFAULT_KUBE, ROLE_NPU_MIRROR, LabLayout
from ufcctl.lab.nodes import LABEL_LAB, LABEL_NAME, LABEL_ROLE
from ufcctl.lab.podman import Podman

SKIPPED = f"skipped (needs a source checkout: {NPU_EMULATOR_DIR})"


@dataclass(frozen=True)
class NpuEmulator:
    """What the step did. `node_vars` is None when there is nothing to write (skipped or failed)."""

    status: str  # "ready", "skipped" or "failed"
    mirror: str | None = None
    url: str | None = None
    changed: bool = False  # the mirror was (re)started
    node_vars: Mapping[str, Any] | None = None
    all_vars: Mapping[str, Any] | None = None  # every host's: the mirror as the artifact source
    error: RunFailed | None = field(default=None, compare=False)

    def describe(self) -> str:
        if self.status == "ready":
            return f"mirror {self.mirror} serves {self.url}"
        if self.status == "failed" and self.error is not None:
            return f"failed: {self.error.message}"
        return SKIPPED


def setup_args(lab: str, layout: LabLayout, workdir: Path, image: str, kube: str = DEFAULT_KUBE) -> list[str]:
    """`python -m tests.lab_standins.npu_emulator` arguments: the lab's network, address plan, image and
    labels."""
    labels = {LABEL_LAB: "1", LABEL_NAME: lab, LABEL_ROLE: ROLE_NPU_MIRROR}
    return [
        "setup", "--lab", lab, "--network", layout.network, "--ip", layout.npu_mirror.ip,
        "--name", layout.npu_mirror.name, "--image", image, "--workdir", str(workdir),
        *(arg for key, value in labels.items() for arg in ("--label", f"{key}={value}")),
        "--kube", kube, "--no-inventory", "--json",
    ]


def prepare_npu_emulator(lab: str, layout: LabLayout, workdir: Path, image: str, kube: str = DEFAULT_KUBE,
                         present: Callable[[], bool] = npu_emulator_present,
                         run: Callable[[list[str]], dict[str, Any]] = run_npu_emulator) -> NpuEmulator:
    """Build the packages and start (or keep) the mirror; a failure is returned, not raised, so that
    `lab up` still writes the inventory of the nodes it started before it reports the failure."""
    if not present():
        return NpuEmulator("skipped")  # `lab up` refused first unless --allow-no-mirror
    try:
        data = run(setup_args(lab, layout, workdir, image, kube))
        mirror, node_vars = data["mirror"], data["npu_node_vars"]
        return NpuEmulator("ready", mirror["name"], mirror["url"], bool(mirror["changed"]), dict(node_vars),
                           dict(data.get("all_vars") or {}))
    except RunFailed as err:
        return NpuEmulator("failed", error=err)
    except (KeyError, TypeError) as err:
        return NpuEmulator("failed", error=RunFailed(f"the lab NPU emulator's JSON lacks {err}"))


# Where the lab NPU emulator's hccn_tool reads what each chip's cable reaches (its LLDP neighbour).
WIRING_FILE = "/etc/ufc-npu-emulator/wiring.json"


def npu_wiring(layout: LabLayout) -> dict[str, str]:
    """Each NPU worker's wiring file: every chip cabled to the switch and port its fabric plan expects
    (from the same host vars the lab inventory gets), so a healthy lab passes tier 1 and a test's fault
    (tests/lab_standins/npu_emulator: a miscabled chip) is the only difference."""
    wiring = {}
    for node in layout.workers:
        plan = host_plan(node.name, host_entry(node))
        if plan:
            chips = {str(c.chip): {"switch": str(c.switch), "port": str(c.port)} for c in plan}
            wiring[node.name] = json.dumps({"chips": chips}, sort_keys=True) + "\n"
    return wiring


def write_npu_wiring(podman: Podman, layout: LabLayout) -> int:
    """Write every NPU worker's wiring file (rewritten on each `lab up`: the inventory may have changed)."""
    files = npu_wiring(layout)
    for name, text in files.items():
        podman.exec(name, ["sh", "-c", f"mkdir -p {os.path.dirname(WIRING_FILE)} && cat > {WIRING_FILE}"],
                    input_text=text)
    return len(files)
