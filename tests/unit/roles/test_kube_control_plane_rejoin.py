"""D17: a control plane that joins long after init. kubeadm deletes the kubeadm-certs Secret 2 h after it
uploaded it and the token cleaner the init token after 24 h; before a control-plane join that does not
follow init in the same run, the role uploads the certificates again under kubeadm.yaml's certificate key
and makes kubeadm.yaml's token again when the cluster no longer lists it valid for an hour."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from tests.helpers.pyimports import load_file
from ufcctl.domain.controlplane import kubeadm

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "kube_control_plane"
filters = load_file(ROLE / "filter_plugins" / "ufcctl_kube_control_plane.py", "ufcctl_kcp_filters_rejoin")
NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
TOKEN = "abcdef.0123456789abcdef"


def _listing(*tokens: tuple[str, str | None]) -> str:
    """`kubeadm token list -o json` as kubeadm prints it: indented objects, one after the other."""
    out = []
    for token, expires in tokens:
        obj = {"kind": "BootstrapToken", "apiVersion": "output.kubeadm.k8s.io/v1alpha3", "token": token,
               "usages": ["authentication", "signing"],
               "groups": ["system:bootstrappers:kubeadm:default-node-token"]}
        if expires:
            obj["expires"] = expires
        out.append(json.dumps(obj, indent=4))
    return "\n".join(out) + "\n"


def test_the_token_state_comes_from_kubeadms_listing() -> None:
    later = (NOW + timedelta(hours=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    soon = (NOW + timedelta(minutes=10)).isoformat()
    gone = (NOW - timedelta(minutes=1)).isoformat()
    other = ("zzzzzz.0123456789abcdef", later)
    assert kubeadm.token_state(_listing(other, (TOKEN, later)), TOKEN, NOW, 3600) == "valid"
    assert kubeadm.token_state(_listing((TOKEN, None)), TOKEN, NOW, 3600) == "valid"  # ttl 0: never expires
    assert kubeadm.token_state(_listing(other, (TOKEN, soon)), TOKEN, NOW, 3600) == "expiring"
    assert kubeadm.token_state(_listing((TOKEN, gone)), TOKEN, NOW, 3600) == "expiring"
    assert kubeadm.token_state(_listing(other), TOKEN, NOW, 3600) == "missing"  # the token cleaner took it
    assert kubeadm.token_state("", TOKEN, NOW, 3600) == "missing"
    one_line = "\n".join(json.dumps(json.loads(x)) for x in [json.dumps({"token": TOKEN, "expires": later})])
    assert kubeadm.token_state(one_line, TOKEN, NOW, 3600) == "valid"  # the lab emulator prints one per line
    assert kubeadm.token_state(_listing((TOKEN, later)) + "W1206 warning: ...", TOKEN, NOW, 3600) == "valid"


def test_only_control_planes_of_the_run_without_kubelet_conf_join() -> None:
    hostvars = {"cp1": {"__kube_control_plane_probe": {"joined": False}},
                "cp2": {"__kube_control_plane_probe": {"joined": True}},
                "cp3": {"__kube_control_plane_probe": {"joined": False}},
                "cp4": {"__kube_control_plane_probe": {"joined": False}}}
    hosts = ["cp1", "cp2", "cp3", "cp4"]
    assert filters.ufcctl_kcp_joining(hosts, hostvars, ["cp1", "cp2", "cp3"], "cp1") == ["cp3"]
    assert filters.ufcctl_kcp_joining(hosts, hostvars, ["cp2"], "cp1") == []


def _tasks() -> list[dict]:
    doc = yaml.safe_load((ROLE / "tasks" / "bootstrap.yml").read_text())
    return doc[0]["block"]


def test_the_role_refreshes_certificates_and_token_before_the_control_plane_joins() -> None:
    tasks = _tasks()
    names = [t["name"] for t in tasks]
    refresh = next(i for i, n in enumerate(names)
                   if n.startswith("Refresh what control-plane joins download"))
    join = next(i for i, n in enumerate(names) if n.startswith("Join the other control-plane hosts"))
    init = next(i for i, n in enumerate(names) if n.startswith("Initialise the first control-plane host"))
    assert init < refresh < join
    block = tasks[refresh]
    assert block["run_once"] is True and "__kube_control_plane_first" in block["delegate_to"]
    assert "__kube_control_plane_joining | length > 0" in block["when"]
    assert "__kube_control_plane_init is not changed" in block["when"]
    argvs = [t.get("ansible.builtin.command", {}).get("argv") for t in block["block"]]
    upload = next(a for a in argvs if a and a[:4] == ["kubeadm", "init", "phase", "upload-certs"])
    assert "--upload-certs" in upload and "{{ __kube_control_plane_config }}" in upload  # its certificateKey
    create = next(a for a in argvs if a and a[:3] == ["kubeadm", "token", "create"])
    assert create[3] == "{{ __kube_control_plane_token }}"  # the token kubeadm.yaml's join carries
    for task in block["block"]:
        if "ansible.builtin.command" in task:
            assert task.get("no_log") is True


def test_the_probe_reports_whether_kubeadm_already_ran_here() -> None:
    main = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    probe = next(t for t in main if "kube_control_plane_probe" in t)
    assert probe["kube_control_plane_probe"]["joined_mark"] == "/etc/kubernetes/kubelet.conf"


def test_the_first_control_planes_admin_conf_is_kept_on_the_controller_0600() -> None:
    """D19: deploy's readiness wait and `ufcctl health` read the cluster with this copy; a renewal of the
    first control plane's certificates refreshes it, so the next deploy changes nothing."""
    doc = yaml.safe_load((ROLE / "tasks" / "bootstrap.yml").read_text())
    keep = next(t for t in doc if t["name"].startswith("Keep the first control plane's admin.conf"))
    assert keep["ansible.builtin.include_tasks"] == "admin_conf.yml"
    assert "not ansible_check_mode" in keep["when"]
    renew = yaml.safe_load((ROLE / "tasks" / "certs_renew.yml").read_text())
    again = next(t for t in renew if t["name"].startswith("Keep the renewed admin.conf"))
    assert again["ansible.builtin.include_tasks"] == "admin_conf.yml"
    assert any("kube_control_plane_renewed_first" in w for w in again["when"])
    assert again["vars"]["__kube_control_plane_admin_conf_from"] == "{{ inventory_hostname }}"
    read, write = yaml.safe_load((ROLE / "tasks" / "admin_conf.yml").read_text())
    assert read["ansible.builtin.slurp"]["src"] == "/etc/kubernetes/admin.conf" and read["run_once"] is True
    source = "{{ __kube_control_plane_admin_conf_from | default(__kube_control_plane_first) }}"
    assert read["delegate_to"] == source
    copy = write["ansible.builtin.copy"]
    assert copy["dest"] == "{{ kube_control_plane_pki_controller_dir }}/admin.conf" and copy["mode"] == "0600"
    assert write["delegate_to"] == "localhost" and read["no_log"] is True and write["no_log"] is True
