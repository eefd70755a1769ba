"""The checkout's lab emulators (`tests/lab_standins/` of the checkout), run as processes: ufcctl never
imports them.

They exist only in a source checkout; an installed wheel has no `tests/` directory, and callers then
skip the emulator and say so.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ufcctl.errors import InputError, RunFailed

log = logging.getLogger(__name__)

# The checkout this package was imported from: ufcctl/lab/emulators.py -> <checkout>.
CHECKOUT = Path(__file__).resolve().parents[2]
NPU_EMULATOR = "tests.lab_standins.npu_emulator"
# relative to the checkout; what the "skipped" note names
NPU_EMULATOR_DIR = "tests/lab_standins/npu_emulator"


def npu_emulator_present(checkout: Path = CHECKOUT) -> bool:
    return (checkout / NPU_EMULATOR_DIR / "__main__.py").is_file()


# What a lab's deploy downloads (the kube emulator's kubeadm/kubelet, the etcd and kubectl tests/lab_build
# builds, the NPU driver packages) is served by the NPU emulator's mirror, which runs from a checkout with
# the test extra installed.
INSTALL_HINT = ("install ufcctl from its source checkout with the test extra: `pip install -e '.[test]'` "
                "(a plain `pip install .` carries no tests/lab_standins, so nothing would serve the packages "
                "the lab's deploy downloads); or, for nodes that only `deploy --check` and the roles' own "
                "checks will use, `ufcctl lab up --allow-no-mirror`")
# What `lab up --allow-no-mirror` says when it went on without the mirror
NO_MIRROR_NOTE = ("no package mirror (this install has no lab NPU emulator): `ufcctl deploy --check` works "
                  "on this lab, a deploy cannot download its packages; `pip install -e '.[test]'` from a "
                  "source checkout serves them")


def require_npu_emulator(allow_no_mirror: bool = False, checkout: Path | None = None) -> bool:
    """Whether this install can serve what the lab's deploy downloads. Without it: an InputError before
    the lab is touched, unless the caller accepts a lab without a mirror (`lab up --allow-no-mirror`:
    an installed wheel's lab for check mode), then False."""
    checkout = CHECKOUT if checkout is None else checkout
    if npu_emulator_present(checkout):
        return True
    if allow_no_mirror:
        return False
    raise InputError(f"ufcctl lab up: this ufcctl ({checkout}) has no lab NPU emulator "
                     f"({NPU_EMULATOR_DIR}), so the lab's deploy would fail to download its packages",
                     INSTALL_HINT)


# `setup` builds etcd and Kubernetes from their Go modules when this machine has not yet (tests/lab_build:
# about 11 min cold on 2 cores, seconds once cached; scripts/setup.sh builds them first)
SETUP_TIMEOUT = 1800.0


def run_npu_emulator(args: Sequence[str], checkout: Path = CHECKOUT,
                     timeout: float = SETUP_TIMEOUT) -> dict[str, Any]:
    """`python -m tests.lab_standins.npu_emulator ARGS --json` from the checkout root; its JSON output,
    parsed."""
    argv = [sys.executable, "-m", NPU_EMULATOR, *args]
    log.debug("run (cwd %s): %s", checkout, " ".join(argv))
    by_hand = f"cd {checkout} && {' '.join(argv)}"
    try:
        proc = subprocess.run(argv, cwd=checkout, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"the lab NPU emulator did not finish within {timeout:.0f}s",
                        f"run it by hand to see where it waits: {by_hand}") from None
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        raise RunFailed(
            f"the lab NPU emulator ({NPU_EMULATOR_DIR}) failed (exit {proc.returncode}): "
            f"{lines[-1] if lines else '(no output)'}",
            f"run it by hand: {by_hand}",
            details=lines[-15:],
        )
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise RunFailed(f"the lab NPU emulator printed no JSON: {proc.stdout.strip()[-200:]!r}",
                        f"run it by hand: {by_hand}") from None
    if not isinstance(data, dict):
        raise RunFailed(f"the lab NPU emulator printed {type(data).__name__}, not a JSON object")
    return data
