#!/usr/bin/python
"""Node side of roles/ascend_driver: probe, run user, download, install and health gate in one run."""

from __future__ import annotations

import grp
import json
import os
import pwd
import re
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ufcctl_ascend_fabric import FabricStep
from ansible.module_utils.ufcctl_ascend_packages import Failure, Packages, lock
from ansible.module_utils.ufcctl_files import read_text, write_atomically, write_text_if_changed
from ansible.module_utils.ufcctl_kernel_build import MODES, BuildFailure, ensure

DOCUMENTATION = r"""
module: ufc_ascend_driver
short_description: Install or upgrade the Ascend NPU driver and firmware on one node in one module run
description:
  - Called by the C(ufc_ascend_driver) action plugin (roles/ascend_driver/action_plugins), which
    checks the settings on the controller first; the role calls the action, not this module.
  - The action decides the installs (I(plan), from ufcctl/domain/npu/driver_plan.py) for each state
    the node can be in; this module reads the state and runs that state's steps.
  - Holds the node's install lock (I(lock)) for the whole run. Reads the installed versions, refuses
    a run user or group whose IDs differ from the fleet's, creates them when missing, downloads the
    packages that are needed and verifies their sha256, runs the installers in the order of the CANN
    install guide, writes I(install_path)/ufcctl-install.json, and runs the health gate unless a
    reboot must come first (I(reboot)=auto and an installer asked for one).
  - >-
    Each installer runs in its own session under C(timeout -k 30 install_timeout), with the lock's
    file descriptor inherited and its output in a log file beside the package: an installer
    orphaned by a dropped SSH session keeps the lock and finishes, and a resumed run waits for it.
  - I(mode)=health runs the health gate only (after the role rebooted the node, or before a joined
    node is admitted); I(check_version)=false checks the chips only, not the driver's version.
  - Check mode reads, decides and reports the packages it would install; it changes nothing.
  - >-
    I(undrained) says the node was not drained (the rollout engine found its Node labels at target): a
    node that needs a package then installs nothing, changes nothing and returns I(drain_needed) (the
    role drains it in the play and runs the module again), so no installer runs under running pods.
  - I(admission_flag) records that the node's NPU health taint was removed since the node last
    registered (its content names the taint and the kubelet.conf kubeadm join wrote, so a node that
    joins again is not taken for admitted). With it, I(mode)=install and I(mode)=probe return
    I(admission_needed); I(mode)=admitted writes the flag after the taint was removed. A node at
    target whose flag is current needs no admission call (one module run is its whole no-op).
  - >-
    I(fabric) (the controller's plan of each chip: device IP, netmask, gateway, switch, port; empty - no
    fabric plan, nothing here runs) makes a run whose health gate passed (I(mode)=health, or
    I(mode)=install when it installed something or the node is not admitted) also set each chip's
    device IP, gateway and detect address with hccn_tool where they differ, write
    their keys into I(hccn_conf), and check each chip (tier 1: link UP, net health Success, device IP
    and LLDP neighbour as planned). I(mode)=fabric checks only (and pings I(fabric_peers) with
    I(fabric_ping_count) packets when given: tier 2). Fabric problems do not fail the module: they are
    returned (I(fabric_problems)) for the role to hold the node and fail it.
  - >-
    The action also takes I(version_pattern), I(accelerator_type) and I(known_types), which only its
    checks read (they are not passed here), and adds I(plan) and I(package_names) for I(mode)=install.
options:
  mode:
    description:
      - >-
        install: probe, lock, download, install, health gate; health: the health gate only; probe:
        read the state; admitted: write the admission flag; fabric: check the fabric only.
    type: str
    choices: [install, health, probe, admitted, fabric]
    default: install
  version:
    description: Target driver version.
    type: str
    required: true
  check_version:
    description: The health gate also checks the driver's version (false - the chips only).
    type: bool
    default: true
  firmware_version:
    description: Target firmware version.
    type: str
    default: ""
  firmware_enabled:
    description: Install the firmware too (physical hosts only).
    type: bool
    default: true
  chip:
    description: Chip token in the package names (read by the action's plan; required for I(mode)=install).
    type: str
  arch:
    description: Architecture in the driver package name; empty - the node's C(uname -m).
    type: str
    default: ""
  artifact_url:
    description: HTTP(S) base URL the packages are downloaded from (required for I(mode)=install).
    type: str
  checksums:
    description: sha256 per package file name; others come from I(checksum_file).
    type: dict
    default: {}
  checksum_file:
    description: sha256sum-format file at I(artifact_url).
    type: str
    default: SHA256SUMS
  download_dir:
    description: Package cache on the node (required for I(mode)=install).
    type: path
  install_path:
    description: Install prefix, driver in C(<install_path>/driver) (required for I(mode)=install).
    type: path
  user:
    description: The driver's run user, created when missing (required for I(mode)=install).
    type: str
  group:
    description: The driver's run group, created when missing (required for I(mode)=install).
    type: str
  uid:
    description: UID of the run user, equal on every node (required for I(mode)=install).
    type: int
  gid:
    description: GID of the run group, equal on every node (required for I(mode)=install).
    type: int
  reboot:
    description: >-
      auto - the role reboots when an installer asks, and the health gate runs after that reboot;
      never - the reboot is left to the operator.
    type: str
    choices: [auto, never]
    default: auto
  install_timeout:
    description: >-
      Seconds one installer may run before it is killed and the node fails; also how long the run
      waits for the lock (required for I(mode)=install).
    type: int
  build_toolchain:
    description: >-
      auto - before a driver install on a kernel not in I(prebuilt_kernels), install what is missing of
      I(build_packages) (DKMS, gcc, make, the running kernel's headers: the driver builds its modules with
      DKMS there); always - on every kernel; never - leave them to the site.
    type: str
    choices: [auto, always, never]
    default: auto
  prebuilt_kernels:
    description: Kernels (C(uname -r)) the driver package carries prebuilt modules for.
    type: list
    elements: str
    default: []
  build_packages:
    description: Per OS family (Debian, RedHat), the toolchain's package names; C({kernel}) is C(uname -r).
    type: dict
    default: {}
  force:
    description: Reinstall even at the target versions (read by the action's plan).
    type: bool
    default: false
  undrained:
    description: >-
      The node was not drained (its Node labels were at target): a node that needs a package
      returns I(drain_needed) and changes nothing.
    type: bool
    default: false
  health_gate:
    description: Fail the node unless npu-smi shows every chip OK and the target version.
    type: bool
    default: true
  expected_chips:
    description: Chips npu-smi must list for the health gate to pass.
    type: int
    default: 0
  lock:
    description: The node's install lock file (required for I(mode)=install).
    type: path
  npu_smi:
    description: Path of npu-smi on the node.
    type: path
    required: true
  admission_flag:
    description: >-
      File recording that the NPU health taint was removed for the node's current registration
      (required for I(mode)=admitted).
    type: path
  admission_taint:
    description: The taint the admission removes (required for I(mode)=admitted).
    type: str
    default: ""
  kubelet_conf:
    description: The kubelet.conf kubeadm join wrote (the node registered when it exists).
    type: path
    default: /etc/kubernetes/kubelet.conf
  fabric:
    description: >-
      The controller's fabric plan, one entry per chip (device IP, netmask, gateway, switch, port);
      empty - no fabric step.
    type: list
    elements: dict
    default: []
  hccn_tool:
    description: Path of hccn_tool on the node.
    type: path
    default: /usr/local/Ascend/driver/tools/hccn_tool
  hccn_conf:
    description: The hccn configuration file the chips' keys are written to.
    type: path
    default: /etc/hccn.conf
  fabric_peers:
    description: I(mode)=fabric - per chip, the addresses it pings (tier 2); empty - no pings.
    type: dict
    default: {}
  fabric_ping_count:
    description: Packets per ping pair (tier 2).
    type: int
    default: 3
  fabric_max_loss:
    description: Percent loss a ping pair may show before it is a problem (tier 2).
    type: float
    default: 0.0
  textfile_dir:
    description: Node exporter textfile directory for the fabric metrics; empty - no file.
    type: path
    default: ""
  plan:
    description: >-
      The action's install plan, per state of the node's driver and firmware, the steps to run
      (required for I(mode)=install).
    type: dict
  package_names:
    description: The action's installer file name per kind (driver, firmware) (required for I(mode)=install).
    type: dict
"""

RETURN = r"""
before:
  description: Versions found (driver, firmware; empty when not installed) and the arch.
  type: dict
  returned: always
packages: {description: Packages needed per the probe (driver first)., type: list, returned: always}
installed: {description: Packages whose installer ran (check mode - would run)., type: list, returned: always}
user_created:
  description: The run user or group was created (check mode - would be).
  type: bool
  returned: always
reboot_requested: {description: An installer printed "Reboot needed"., type: bool, returned: always}
health: {description: "checked (bool) and problems (list of str).", type: dict, returned: always}
admission_needed:
  description: >-
    The node registered with Kubernetes (I(kubelet_conf) exists) and the admission flag does not
    record the taint's removal for this registration (always true without I(admission_flag)).
  type: bool
  returned: always
registered: {description: I(kubelet_conf) exists (the node joined)., type: bool, returned: mode install}
npu_smi: {description: npu-smi exists (mode probe)., type: bool, returned: mode probe}
fabric:
  description: >-
    planned (chips), changes (list), chips (what each reported, with its problems), pings (tier 2).
  type: dict
  returned: with I(fabric)
drain_needed:
  description: With I(undrained) - the node needs a package, so nothing ran (drain it, then run again).
  type: bool
  returned: always
toolchain:
  description: >-
    kernel, needed (the driver may build its modules here), family, packages (the missing ones),
    installed (check mode - would be).
  type: dict
  returned: when a driver install is planned
fabric_problems:
  description: One line naming every failing chip and fault; empty when none.
  type: str
  returned: always
"""

# The installers' request for a reboot (docs/reference/ascend.md §6).
REBOOT_TEXT = "Reboot needed"
# GNU timeout: 124 after TERM, 128+9 when -k had to KILL.
KILLED = (124, 137)
# Lines of an installer's output returned on failure.
TAIL_LINES = 20


# --- pure parts (tests/unit/roles/test_ascend_driver_module.py) -----------------------------------


def admission_record(taint, kubelet_conf_mtime_ns):
    """The admission flag's content: the taint removed and the registration it was removed for."""
    return f"removed {taint} for the registration of kubelet.conf {kubelet_conf_mtime_ns}\n"


def admission_needed(flag_text, taint, kubelet_conf_mtime_ns):
    """Whether the admission (taint removal) must run: the node registered (kubelet.conf's mtime is
    known) and the flag does not record this taint's removal for this registration."""
    if kubelet_conf_mtime_ns is None:  # not joined: no Node object, so no taint to remove
        return False
    return flag_text != admission_record(taint, kubelet_conf_mtime_ns)


def version_info(text):
    """Version= of a version.info file, or ''."""
    for line in text.splitlines():
        if line.startswith("Version="):
            return line[len("Version="):].strip()
    return ""


def firmware_version(board):
    """'Firmware Version : X' of `npu-smi info -t board -i 0`, or ''."""
    match = re.search(r"(?m)^[ \t]*Firmware Version[ \t]*:[ \t]*(\S*)", board)
    return match.group(1) if match else ""


def chips(info):
    """(chip id, health) of every chip of `npu-smi info`: a chip block's first line is
    "| <id>  <name> | <health> | ..." (docs/reference/ascend.md §6)."""
    return re.findall(r"(?m)^\|\s+(\d+)\s+\S+\s+\|\s+(\w+)\s+\|", info)


def smi_version(info):
    match = re.search(r"Version:\s*(\S+)", info)
    return match.group(1) if match else ""


def health_problems(rc, out, err, expected, version, version_deferred):
    """What fails the health gate in `npu-smi info`'s answer; [] when healthy."""
    if rc != 0:
        return [f"npu-smi info failed (rc {rc}): {err.strip()}"]
    listed = chips(out)
    problems = []
    if len(listed) != expected:
        problems.append(f"{len(listed)} chip(s) listed, {expected} expected")
    bad = [f"{chip} {health}" for chip, health in listed if health != "OK"]
    if bad:
        problems.append("chips not OK: " + ", ".join(bad))
    found = smi_version(out)
    if not version_deferred and found != version:
        problems.append(f"driver version {found}, expected {version}")
    return problems


def steps_for(plan, driver, firmware, want_driver, want_firmware):
    """The controller's steps (ufcctl/domain/npu/driver_plan.py) for what this node has installed:
    [(kind, target version, installer flags)] in order."""
    def state(installed, want):
        return "none" if not installed else "current" if installed == want else "other"
    return [tuple(step) for step in plan[state(driver, want_driver) + "/" + state(firmware, want_firmware)]]


def install_failure(kind, package, rc, limit, output):
    """None when the installer succeeded, else the one-line message failing the node.
    Firmware exit code 2 is success in some releases; ascend-deployer tolerates it (§6)."""
    if rc == 0 or (kind == "firmware" and rc == 2):
        return None
    if rc in KILLED:
        return f"{kind} installer killed after {limit} s (ascend_driver_install_timeout)"
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    last = " / ".join(lines[-3:]) if lines else "no output"
    return f"{kind} installer {package} failed (rc {rc}): {last[-600:]}"


# --- node work ------------------------------------------------------------------------------------


class Node(Packages, FabricStep):
    """This node: what it has, what it runs; packages (fetch, verify) and the fabric step are the role's
    module_utils (ufcctl_ascend_packages, ufcctl_ascend_fabric)."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.check = module.check_mode

    def read_driver(self):
        try:
            with open(os.path.join(self.p["install_path"], "driver", "version.info")) as fh:
                return version_info(fh.read())
        except (OSError, UnicodeDecodeError):
            return ""

    def read_firmware(self, driver):
        smi = self.p["npu_smi"]
        if not driver or not os.access(smi, os.X_OK):
            return ""
        rc, out, _ = self.module.run_command([smi, "info", "-t", "board", "-i", "0"])
        return firmware_version(out) if rc == 0 else ""

    def ids(self):
        """(uid, gid) of the run user and group as text, '' when missing (the probe's answer)."""
        try:
            uid = str(pwd.getpwnam(self.p["user"]).pw_uid)
        except KeyError:
            uid = ""
        try:
            gid = str(grp.getgrnam(self.p["group"]).gr_gid)
        except KeyError:
            gid = ""
        return uid, gid

    def run_user(self):
        """Refuse IDs that differ from the fleet's; create the group and user when missing."""
        p = self.p
        uid, gid = self.ids()
        if uid not in ("", str(p["uid"])) or gid not in ("", str(p["gid"])):
            raise Failure(
                f"{p['user']} has UID '{uid}' and group {p['group']} GID '{gid}' on this node, but the fleet "
                f"uses {p['uid']}:{p['gid']} (MindCluster needs them equal on every node). Renumber by hand "
                "(usermod -u / groupmod -g, then chown the files they own) or set ascend_driver_uid / "
                "ascend_driver_gid.")
        created = False
        if gid == "":
            created = True
            if not self.check:
                self.command(["groupadd", "-g", str(p["gid"]), p["group"]], "creating group " + p["group"])
        if uid == "":
            created = True
            if not self.check:
                self.command(["useradd", "-u", str(p["uid"]), "-g", p["group"], "-s", "/usr/sbin/nologin",
                              "-M", p["user"]], "creating user " + p["user"])
        return created

    def command(self, argv, what):
        rc, out, err = self.module.run_command(argv)
        if rc != 0:
            raise Failure(f"{what} failed (rc {rc}): {(err or out).strip()}")

    def install(self, kind, installer, flags, lock_fd):
        """Run one installer; (rc, output). Its own session and the inherited lock fd keep it, and the
        lock, alive if this module dies with its SSH session; its output goes to a file for the same
        reason (a closed pipe would kill it)."""
        limit = self.p["install_timeout"]
        log = installer + ".log"
        with open(log, "wb") as out:
            os.chmod(log, 0o600)
            os.set_inheritable(lock_fd, True)
            proc = subprocess.Popen(
                ["timeout", "-k", "30", str(limit), installer] + list(flags),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                pass_fds=(lock_fd,), start_new_session=True, cwd="/",
            )
            rc = proc.wait()
        with open(log, "rb") as fh:
            return rc, fh.read().decode("utf-8", "replace")

    def health(self, version_deferred):
        p = self.p
        rc, out, err = self.module.run_command([p["npu_smi"], "info"])
        return health_problems(rc, out, err, p["expected_chips"], p["version"], version_deferred)

    def registration(self):
        """kubelet.conf's mtime (ns) when the node joined, else None."""
        try:
            return os.stat(self.p.get("kubelet_conf") or "/etc/kubernetes/kubelet.conf").st_mtime_ns
        except FileNotFoundError:
            return None

    def admission_needed(self):
        p = self.p
        if not p.get("admission_flag"):
            return True  # nothing recorded: the caller decides as before
        return admission_needed(read_text(p["admission_flag"]), p["admission_taint"], self.registration())

    def admitted(self):
        """Write the admission flag for the current registration; whether it changed."""
        p = self.p
        mtime = self.registration()
        if mtime is None:
            return False
        want = admission_record(p["admission_taint"], mtime)
        flag = p["admission_flag"]
        return write_text_if_changed(flag, want, read_text(flag), 0o644, self.check)

    def record(self, packages, sums):
        p = self.p
        data = {
            "managed_by": "ufcctl role ascend_driver",
            "driver_version": p["version"],
            "firmware_version": p["firmware_version"] if p["firmware_enabled"] else None,
            "installed_packages": packages,
            "artifact_url": p["artifact_url"],
            "verified_against": dict((package, sums[package][1]) for package in packages),
            "run_user": f"{p['user']}:{p['group']} ({p['uid']}:{p['gid']})",
        }
        os.makedirs(p["install_path"], mode=0o755, exist_ok=True)
        path = os.path.join(p["install_path"], "ufcctl-install.json")
        write_atomically(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode(), 0o644)


def converge(node, result):
    p = node.p
    if p["mode"] == "probe":
        result["npu_smi"] = os.path.exists(p["npu_smi"])
        result["admission_needed"] = node.admission_needed()
        return
    if p["mode"] == "admitted":
        result["flag_written"] = node.admitted()
        return
    if p["mode"] == "health":
        problems = node.health(version_deferred=not p["check_version"])
        result["health"] = {"checked": True, "problems": problems}
        if problems:
            raise Failure("health gate: " + "; ".join(problems))
        result["fabric_changed"] = node.fabric(True, result)
        return
    if p["mode"] == "fabric":  # `ufcctl npu check`: read only, chips then fabric, never fails here
        chips = node.health(version_deferred=True) if os.path.exists(p["npu_smi"]) else [
            f"{p['npu_smi']} missing (no NPU driver)"]
        result["health"] = {"checked": True, "problems": chips}
        result["fabric_changed"] = node.fabric(False, result)
        if chips:
            result["fabric_problems"] = "; ".join(filter(None, ["NPU chips: " + "; ".join(chips),
                                                                 result["fabric_problems"]]))
        result["ufc_node_report"] = result["fabric_problems"] or result["fabric_summary"] or (
            "NPU chips OK; no NPU fabric plan for this host (npu_fabric_subnet or npu_device_ips)")
        return
    result["admission_needed"] = node.admission_needed()
    result["registered"] = node.registration() is not None
    lock_fd = lock(p["lock"], p["install_timeout"])
    try:
        converge_locked(node, result, lock_fd)
    finally:
        os.close(lock_fd)


def converge_locked(node, result, lock_fd):
    p = node.p
    driver = node.read_driver()
    firmware = node.read_firmware(driver)
    arch = p["arch"] or os.uname()[4]
    result["before"] = {"driver": driver, "firmware": firmware, "arch": arch}
    steps = steps_for(p["plan"], driver, firmware, p["version"], p["firmware_version"])
    names = dict((kind, name.replace("{arch}", arch)) for kind, name in p["package_names"].items())
    packages = [names[kind] for kind in ("driver", "firmware") if kind in [s[0] for s in steps]]
    result["packages"] = packages
    if packages and p.get("undrained"):  # never install under running pods: the play drains first
        result["drain_needed"] = True
        return
    if "driver" in [step[0] for step in steps]:  # a kernel without prebuilt modules: DKMS builds them (D18)
        result["toolchain"] = ensure(node.module, p, node.check)
    result["user_created"] = node.run_user()
    if node.check:
        result["installed"] = packages
        return
    if packages:
        sums = node.expected_sums(packages)
        paths = dict((package, node.download(package, sums[package][0])) for package in packages)
    outputs = []
    # The versions were read under the lock, which this run holds until it ends: an earlier run's
    # installer that outlived its SSH session had finished before, so they are current.
    for kind, _target, flags in steps:
        rc, output = node.install(kind, paths[names[kind]], flags, lock_fd)
        outputs.append(output)
        failed = install_failure(kind, names[kind], rc, p["install_timeout"], output)
        if failed:
            raise Failure(failed, installer_output=output.splitlines()[-TAIL_LINES:], rc=rc)
        result["installed"].append(names[kind])
    result["reboot_requested"] = any(REBOOT_TEXT in output for output in outputs)
    if packages:
        node.record(packages, sums)
    if p["health_gate"] and not (result["reboot_requested"] and p["reboot"] == "auto"):
        problems = node.health(version_deferred=result["reboot_requested"])
        result["health"] = {"checked": True, "problems": problems}
        if problems:
            raise Failure("health gate: " + "; ".join(problems))
        # The fabric with an install or an admission: a node at target and admitted skips it (its no-op
        # stays one module run of a few commands; `ufcctl npu check` is the sweep that finds a drift).
        if packages or result["admission_needed"]:
            result["fabric_changed"] = node.fabric(True, result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", default="install",
                      choices=["install", "health", "probe", "admitted", "fabric"]),
            version=dict(type="str", required=True),
            check_version=dict(type="bool", default=True),
            firmware_version=dict(type="str", default=""),
            firmware_enabled=dict(type="bool", default=True),
            chip=dict(type="str"),
            arch=dict(type="str", default=""),
            artifact_url=dict(type="str"),
            checksums=dict(type="dict", default={}),
            checksum_file=dict(type="str", default="SHA256SUMS"),
            download_dir=dict(type="path"),
            install_path=dict(type="path"),
            user=dict(type="str"),
            group=dict(type="str"),
            uid=dict(type="int"),
            gid=dict(type="int"),
            reboot=dict(type="str", default="auto", choices=["auto", "never"]),
            install_timeout=dict(type="int"),
            force=dict(type="bool", default=False),
            build_toolchain=dict(type="str", default="auto", choices=list(MODES)),
            prebuilt_kernels=dict(type="list", elements="str", default=[]),
            build_packages=dict(type="dict", default={}),
            undrained=dict(type="bool", default=False),
            health_gate=dict(type="bool", default=True),
            expected_chips=dict(type="int", default=0),
            lock=dict(type="path"),
            npu_smi=dict(type="path", required=True),
            admission_flag=dict(type="path"),
            admission_taint=dict(type="str", default=""),
            kubelet_conf=dict(type="path", default="/etc/kubernetes/kubelet.conf"),
            # the fabric (the controller's plan, filter ufcctl_ascend_driver_fabric_plan; [] - no plan)
            fabric=dict(type="list", elements="dict", default=[]),
            hccn_tool=dict(type="path", default="/usr/local/Ascend/driver/tools/hccn_tool"),
            hccn_conf=dict(type="path", default="/etc/hccn.conf"),
            fabric_peers=dict(type="dict", default={}),
            fabric_ping_count=dict(type="int", default=3),
            fabric_max_loss=dict(type="float", default=0.0),
            textfile_dir=dict(type="path", default=""),
            # the controller's decisions (the action plugin, ufcctl/domain/npu/driver_plan.py)
            plan=dict(type="dict"),
            package_names=dict(type="dict"),
        ),
        required_if=[("mode", "install", ["chip", "artifact_url", "download_dir", "install_path", "user",
                                          "group", "uid", "gid", "install_timeout", "lock", "plan",
                                          "package_names"]),
                     ("mode", "admitted", ["admission_flag", "admission_taint"])],
        supports_check_mode=True,
    )
    result = {"changed": False, "before": {}, "packages": [], "installed": [],
              "user_created": False, "reboot_requested": False, "health": {"checked": False, "problems": []},
              "admission_needed": True, "fabric_problems": "", "fabric_summary": "", "fabric_changed": False,
              "drain_needed": False}
    try:
        converge(Node(module), result)
    except (Failure, BuildFailure) as exc:
        result.update(exc.extra)
        result["changed"] = bool(result["installed"] or result["user_created"]
                                 or result.get("toolchain", {}).get("installed"))
        module.fail_json(msg=exc.msg, **result)
    result["changed"] = bool(result["installed"] or result["user_created"] or result["fabric_changed"]
                             or result.get("toolchain", {}).get("installed"))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
