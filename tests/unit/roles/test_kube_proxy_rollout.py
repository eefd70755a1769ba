"""Issue 44, D20: kubeadm's kube-proxy DaemonSet rolls one node at a time (kubeadm writes `updateStrategy:
{type: RollingUpdate}`, the apiserver defaults maxUnavailable 1), so an upgrade at 16,000 nodes spends at
least 13 h on it. roles/kube_control_plane widens it (kube_control_plane_kube_proxy_max_unavailable) after
kubeadm init and after each control plane's kubeadm upgrade, through roles/k8s_manifests' rollout step
(ufcctl_kubectl mode=rollout: read, patch only when different, check mode reads only)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "kube_control_plane"
kubectl = load_file(ROOT / "roles" / "k8s_manifests" / "library" / "ufcctl_kubectl.py")


class Failed(Exception):
    pass


class FakeModule:
    def __init__(self, answers: dict[str, tuple[int, str, str]], check: bool = False, **params: Any):
        self.params = {"kubectl": "kubectl", "kubeconfig": "/k", "daemonset": "kube-system/kube-proxy",
                       "max_unavailable": "10%", **params}
        self.answers, self.check_mode, self.calls = answers, check, []

    def run_command(self, argv: list[str], data: str | None = None) -> tuple[int, str, str]:
        line = " ".join(str(a) for a in argv)
        self.calls.append(line)
        return next((v for k, v in self.answers.items() if line.startswith(k)), (0, "", ""))

    def fail_json(self, **kw: Any) -> None:
        raise Failed(kw["msg"])


GET = "kubectl --kubeconfig=/k get daemonset kube-proxy --namespace=kube-system --output=json"
PATCH = "kubectl --kubeconfig=/k patch daemonset kube-proxy --namespace=kube-system --type=strategic --patch="


def _ds(strategy: dict) -> tuple[int, str, str]:
    return 0, json.dumps({"metadata": {"name": "kube-proxy"}, "spec": {"updateStrategy": strategy}}), ""


KUBEADM = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}


@pytest.mark.parametrize("strategy, was", [
    (KUBEADM, "1"),
    ({"type": "RollingUpdate"}, "1"),  # not defaulted in the answer: the apiserver's 1
    ({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}}, "25%"),
    ({"type": "OnDelete"}, "1"),
], ids=["kubeadm", "undefaulted", "other-window", "on-delete"])
def test_a_window_other_than_the_wanted_one_is_patched_once(strategy: dict, was: str) -> None:
    module = FakeModule({GET: _ds(strategy)})
    assert kubectl.rollout(module) == {"changed": True, "exists": True, "max_unavailable_was": was}
    assert module.calls[0] == GET
    assert module.calls[1].startswith(PATCH) and len(module.calls) == 2
    patch = json.loads(module.calls[1].removeprefix(PATCH))
    assert patch == {"spec": {"updateStrategy": {"type": "RollingUpdate",
                                                 "rollingUpdate": {"maxUnavailable": "10%"}}}}


def test_a_count_is_sent_as_an_integer_and_compared_as_one() -> None:
    module = FakeModule({GET: _ds(KUBEADM)}, max_unavailable="50")
    kubectl.rollout(module)
    assert json.loads(module.calls[1].removeprefix(PATCH))["spec"]["updateStrategy"]["rollingUpdate"] == {
        "maxUnavailable": 50}
    same = FakeModule({GET: _ds({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 50}})},
                      max_unavailable="50")
    assert kubectl.rollout(same)["changed"] is False and same.calls == [GET]


def test_the_wanted_window_changes_nothing_and_check_mode_reads_only() -> None:
    done = FakeModule({GET: _ds({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}})})
    assert kubectl.rollout(done) == {"changed": False, "exists": True, "max_unavailable_was": "10%"}
    assert done.calls == [GET]
    checked = FakeModule({GET: _ds(KUBEADM)}, check=True)
    assert kubectl.rollout(checked)["changed"] is True and checked.calls == [GET]


def test_a_missing_daemonset_is_unchanged_and_other_errors_fail() -> None:
    not_found = 'Error from server (NotFound): daemonsets.apps "kube-proxy" not found'
    missing = FakeModule({GET: (1, "", not_found)})
    assert kubectl.rollout(missing) == {"changed": False, "exists": False, "max_unavailable_was": ""}
    refused = FakeModule({GET: (1, "", "The connection to the server 10.0.0.1:8443 was refused\n")})
    with pytest.raises(Failed, match="get daemonset kube-system/kube-proxy failed .*refused"):
        kubectl.rollout(refused)
    bad_patch = FakeModule({GET: _ds(KUBEADM), PATCH: (1, "", "Invalid value: \"x\"\n")})
    with pytest.raises(Failed, match="patch daemonset kube-system/kube-proxy failed"):
        kubectl.rollout(bad_patch)
    with pytest.raises(Failed, match="needs daemonset"):
        kubectl.rollout(FakeModule({}, daemonset="kube-proxy"))


def _tasks(name: str) -> list[dict]:
    return yaml.safe_load((ROLE / "tasks" / name).read_text())


def _rollouts(tasks: list[dict]) -> list[tuple[int, dict]]:
    return [(i, t) for i, t in enumerate(tasks)
            if (t.get("ansible.builtin.include_role") or {}).get("tasks_from") == "rollout"]


def _window(task: dict) -> None:
    assert task["ansible.builtin.include_role"]["name"] == "k8s_manifests"
    assert task["vars"] == {"k8s_manifests_rollout_daemonset": "kube-system/kube-proxy",
                            "k8s_manifests_rollout_max_unavailable":
                                "{{ kube_control_plane_kube_proxy_max_unavailable }}"}


def test_the_window_is_set_after_kubeadm_init() -> None:
    block = _tasks("bootstrap.yml")[0]["block"]
    init = next(i for i, t in enumerate(block)
                if "init" in str((t.get("ansible.builtin.command") or {}).get("argv")))
    found = _rollouts(block)
    assert len(found) == 1 and found[0][0] > init
    _window(found[0][1])
    assert found[0][1]["when"] == "inventory_hostname == __kube_control_plane_first"


def test_the_window_is_set_after_each_control_planes_kubeadm_upgrade() -> None:
    """Since 1.28 the control plane whose upgrade finds every apiserver upgraded (the last `kubeadm upgrade
    node`) rewrites kube-proxy (kubernetes/kubernetes#116570): the window follows every upgrade, right away,
    and a run with nothing to upgrade still reads it (a killed run)."""
    tasks = _tasks("upgrade.yml")
    block = next(t for t in tasks if "block" in t)["block"]
    upgrade = next(i for i, t in enumerate(block) if "upgrade" in str(t.get("ansible.builtin.command") or {}))
    inside = _rollouts(block)
    assert len(inside) == 1 and inside[0][0] == upgrade + 1 and "when" not in inside[0][1]
    _window(inside[0][1])
    outside = _rollouts(tasks)
    assert len(outside) == 1 and outside[0][1]["when"] == "not __kube_control_plane_upgrade_todo | bool"
    _window(outside[0][1])


def test_the_default_window_is_ten_percent_and_bad_values_are_refused() -> None:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert defaults["kube_control_plane_kube_proxy_max_unavailable"] == "10%"
    pattern = re.search(r"is match\('([^']+)'\)", (ROLE / "tasks" / "main.yml").read_text())
    assert pattern is not None
    ok = re.compile(pattern.group(1))
    assert all(ok.match(v) for v in ("10%", "1%", "100%", "1", "50", "1600"))
    assert not any(ok.match(v) for v in ("0", "0%", "101%", "10 %", "-1", "ten", "", "1.5"))
