"""roles/ascend_driver's NPU fabric step on a node (docs/architecture.md decision 19): the planned chips
configured and checked with hccn_tool (roles/ufc_common's ufcctl_hccn), hccn.conf merged, the result as
the node exporter's textfile.

Node-side (ansible.module_utils.ufcctl_ascend_fabric, shipped with ufc_ascend_driver): standard library
and ansible.module_utils only, the node's python3.
"""

from __future__ import annotations

import os

from ansible.module_utils.ufcctl_files import read_text, write_text_if_changed
from ansible.module_utils.ufcctl_hccn import METRICS_FILE, Fabric, merge_conf, metrics, ping_line, summary


class FabricStep:
    """Node's fabric step (ufc_ascend_driver.Node): `module`, its params `p`, `check` (check mode)."""

    def fabric(self, configure, result):
        """Configure (unless not `configure`) and check the planned chips; result's fabric and
        fabric_problems. Returns whether anything changed (or would, in check mode)."""
        p = self.p
        plan = p["fabric"] or []
        if not plan:
            return False
        report = {"planned": len(plan), "changes": [], "chips": [], "pings": None}
        result["fabric"] = report
        if not os.access(p["hccn_tool"], os.X_OK):
            report["chips"] = [{"chip": c["chip"], "problems": [f"{p['hccn_tool']} missing"]} for c in plan]
            result["fabric_problems"] = result["fabric_summary"] = summary(report["chips"])
            return False
        fabric = Fabric(self.module.run_command, p["hccn_tool"], plan)
        errors = {}
        if configure:
            report["changes"], errors = fabric.configure(self.check)
            if self.conf(plan):
                report["changes"].append(p["hccn_conf"])
        report["chips"] = fabric.check(errors)
        if p["fabric_peers"]:
            report["pings"] = fabric.ping(p["fabric_peers"], p["fabric_ping_count"])
        bad = [c for c in report["chips"] if c["problems"]]
        lossy = [x for x in report["pings"] or [] if x["loss"] > p["fabric_max_loss"]]
        problems = summary(report["chips"]) if bad else ""
        if lossy:
            pairs = ", ".join(f"chip {x['chip']} -> {x['peer']} " + (
                f"ping failed twice: {x['error']}" if x.get("error") else f"{x['loss']:g}% loss")
                for x in lossy[:8])
            problems = (problems + "; " if problems else "NPU fabric: ") + f"ping: {pairs}" + (
                f" and {len(lossy) - 8} more" if len(lossy) > 8 else "")
        result["fabric_problems"] = problems
        if problems and p.get("admission_flag") and not self.check and os.path.exists(p["admission_flag"]):
            os.unlink(p["admission_flag"])  # the node is held: the next run that passes admits it again
        result["fabric_summary"] = problems or summary(report["chips"]) + ping_line(report["pings"])
        self.textfile(report)
        return bool(report["changes"])

    def conf(self, plan):
        """hccn.conf with the plan's keys (others kept); whether it changed (or would)."""
        path = self.p["hccn_conf"]
        existing = read_text(path)
        return write_text_if_changed(path, merge_conf(existing, plan), existing, 0o644, self.check)

    def textfile(self, report):
        """The node exporter's textfile with this check's metrics (when a directory is given and exists)."""
        directory = self.p["textfile_dir"]
        if self.check or not directory or not os.path.isdir(directory):
            return
        path = os.path.join(directory, METRICS_FILE)
        write_text_if_changed(path, metrics(report["chips"], report["pings"]), read_text(path), 0o644, False)
