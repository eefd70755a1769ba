"""The node-side halves of `ufcctl remove-nodes`: roles/kube_node's ufcctl_node_leave (kubeadm reset, units
stopped and disabled, join state wiped; a control plane refused; a removed node unchanged) and
roles/k8s_manifests' ufcctl_kubectl drain and delete_node (a missing Node unchanged, check mode reads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
leave_module = load_file(ROOT / "roles" / "kube_node" / "library" / "ufcctl_node_leave.py")
kubectl = load_file(ROOT / "roles" / "k8s_manifests" / "library" / "ufcctl_kubectl.py")


class Failed(Exception):
    pass


class FakeModule:
    def __init__(self, params: dict[str, Any], answers: dict[str, tuple[int, str, str]], check: bool = False):
        self.params, self.answers, self.check_mode = params, answers, check
        self.calls: list[str] = []

    def run_command(self, argv: list[str], data: str | None = None) -> tuple[int, str, str]:
        line = " ".join(str(a) for a in argv)
        self.calls.append(line)
        return next((v for k, v in self.answers.items() if line.startswith(k)), (0, "", ""))

    def get_bin_path(self, name: str) -> str | None:
        return f"/usr/bin/{name}"

    def fail_json(self, **kw: Any) -> None:
        raise Failed(kw["msg"])


def _joined(tmp_path: Path) -> list[str]:
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_text("x")
    (tmp_path / "kubelet.conf").write_text("x")
    (tmp_path / "var-lib-kubelet").mkdir()
    return [str(tmp_path / n) for n in ("kubelet.conf", "bootstrap-kubelet.conf", "pki", "var-lib-kubelet")]


def _leave_params(paths: list[str], **kw: Any) -> dict[str, Any]:
    return {"paths": paths, "services": ["kubelet", "containerd"], "kubeadm": "kubeadm",
            "cri_socket": "unix:///run/containerd/containerd.sock", "allow_control_plane": False, **kw}


def _show(active: str, enabled: str) -> dict[str, tuple[int, str, str]]:
    """The one `systemctl show` of both units (roles/ufc_common/module_utils/ufcctl_systemd.py)."""
    blocks = [f"Id={u}.service\nNames={u}.service\nActiveState={active}\nUnitFileState={enabled}\n"
              for u in ("kubelet", "containerd")]
    return {"/usr/bin/systemctl show": (0, "\n".join(blocks), "")}


RUNNING = _show("active", "enabled")
STOPPED = _show("inactive", "disabled")
PROBE = " show --property="


@pytest.fixture(autouse=True)
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leave_module, "ADMIN_CONF", str(tmp_path / "admin.conf"))
    monkeypatch.setattr(leave_module, "APISERVER_MANIFEST", str(tmp_path / "kube-apiserver.yaml"))


def test_a_joined_worker_is_reset_then_stopped_then_wiped(tmp_path: Path) -> None:
    paths = _joined(tmp_path)
    module = FakeModule(_leave_params(paths), RUNNING)
    result = leave_module.leave(module)
    assert result["changed"] and result["reset"] and result["stopped"] == ["kubelet", "containerd"]
    acted = [c for c in module.calls if PROBE not in c]
    assert acted == ["/usr/bin/kubeadm reset -f --cri-socket=unix:///run/containerd/containerd.sock",
                     "systemctl stop kubelet", "systemctl disable kubelet", "systemctl stop containerd",
                     "systemctl disable containerd"]  # reset while containerd still runs
    assert not any(Path(p).exists() for p in paths)


def test_a_mount_point_in_the_join_state_is_emptied_not_removed(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A kubelet whose root mount is not shared bind-mounts /var/lib/kubelet onto itself: rmdir of it
    fails "Device or resource busy" (the real lab's control-plane removal); its contents go, it stays."""
    paths = _joined(tmp_path)
    mounted = tmp_path / "var-lib-kubelet"
    (mounted / "pods" / "uid").mkdir(parents=True)
    (mounted / "config.yaml").write_text("x")
    # a self-bind mount, as the kubelet makes it: os.path.ismount says False for it; mountinfo knows
    # (its mount point field escapes a space as \040)
    info = tmp_path / "mountinfo"
    info.write_text(f"2209 474 0:65 {mounted} {mounted} rw,relatime shared:734 - overlay overlay rw\n"
                    "2233 2209 0:263 / /var/lib/kubelet/pods/x/volumes/a\\040b rw - tmpfs tmpfs rw\n")
    monkeypatch.setattr(leave_module, "MOUNTINFO", str(info))
    assert not leave_module.os.path.ismount(mounted)
    assert "/var/lib/kubelet/pods/x/volumes/a b" in leave_module._mount_points()
    leave_module.leave(FakeModule(_leave_params(paths), RUNNING))
    assert mounted.is_dir() and list(mounted.iterdir()) == []
    assert not any(Path(p).exists() for p in paths if p != str(mounted))
    again = leave_module.leave(FakeModule(_leave_params(paths), STOPPED))
    assert again["changed"] is False  # an empty folder holds no join state


def test_a_removed_worker_is_unchanged_and_check_mode_touches_nothing(tmp_path: Path) -> None:
    paths = [str(tmp_path / "kubelet.conf"), str(tmp_path / "var-lib-kubelet")]
    (tmp_path / "var-lib-kubelet").mkdir()  # an empty directory holds no join state
    module = FakeModule(_leave_params(paths), STOPPED)
    assert leave_module.leave(module) == {"changed": False, "reset": False, "stopped": [], "removed": []}
    assert [c for c in module.calls if PROBE not in c] == []
    other = tmp_path / "joined"
    other.mkdir()
    joined = _joined(other)
    checked = FakeModule(_leave_params(joined), RUNNING, check=True)
    assert leave_module.leave(checked)["changed"] is True
    assert [c for c in checked.calls if PROBE not in c] == []  # nothing run
    assert Path(joined[0]).exists() and Path(joined[2]).exists()  # nothing wiped


def test_units_are_read_in_one_call_and_only_what_can_be_disabled_is(tmp_path: Path) -> None:
    """One `systemctl show` for every unit; a static unit (or one enabled only indirectly) is stopped but
    not disabled, and a unit systemd does not know is left alone."""
    show = ("Id=kubelet.service\nNames=kubelet.service\nActiveState=reloading\nUnitFileState=static\n\n"
            "Id=containerd.service\nNames=containerd.service\nActiveState=inactive\nUnitFileState=\n")
    module = FakeModule(_leave_params(_joined(tmp_path)), {"/usr/bin/systemctl show": (0, show, "")})
    assert leave_module.leave(module)["stopped"] == ["kubelet"]
    assert [c for c in module.calls if "systemctl" in c] == [
        "/usr/bin/systemctl show --property=Id,Names,ActiveState,UnitFileState -- kubelet containerd",
        "systemctl stop kubelet"]


def test_a_control_plane_is_refused_unless_allowed(tmp_path: Path) -> None:
    (tmp_path / "admin.conf").write_text("x")
    paths = _joined(tmp_path)
    with pytest.raises(Failed, match="this host is a control plane"):
        leave_module.leave(FakeModule(_leave_params(paths), RUNNING))
    assert Path(paths[0]).exists()
    assert leave_module.leave(FakeModule(_leave_params(paths, allow_control_plane=True), RUNNING))["reset"]


NODE = '{"metadata": {"name": "w1"}, "spec": {}}'
CORDONED = '{"metadata": {"name": "w1"}, "spec": {"unschedulable": true}}'
NOT_FOUND = (1, "", 'Error from server (NotFound): nodes "w1" not found\n')


def _kubectl(mode: str, answers: dict[str, tuple[int, str, str]], check: bool = False,
             **params: Any) -> FakeModule:
    return FakeModule({"kubectl": "kubectl", "kubeconfig": "/k", "node": "w1", "timeout": 900, "mode": mode,
                       "mark": "", "version": "", **params}, answers, check)


def test_drain_of_a_node_with_pods_cordons_and_evicts() -> None:
    module = _kubectl("drain", {"kubectl --kubeconfig=/k get node": (0, NODE, ""),
                                "kubectl --kubeconfig=/k drain": (0, "node/w1 cordoned\nnode/w1 drained\n",
                                                                  "evicting pod kube-system/typha-1\n")})
    assert kubectl.drain(module) == {"changed": True, "exists": True, "evicted": ["kube-system/typha-1"]}
    assert module.calls[-1] == ("kubectl --kubeconfig=/k drain w1 --ignore-daemonsets --delete-emptydir-data "
                                "--timeout=900s")


@pytest.mark.parametrize("answers, check", [
    ({"kubectl --kubeconfig=/k get node": NOT_FOUND}, False),
    ({"kubectl --kubeconfig=/k get node": (0, CORDONED, ""),
      "kubectl --kubeconfig=/k drain": (0, "node/w1 already cordoned\nnode/w1 drained\n", "")}, False),
    ({"kubectl --kubeconfig=/k get node": (0, CORDONED, "")}, True),
], ids=["node-gone", "cordoned-and-empty", "check-mode-cordoned"])
def test_drain_changes_nothing_when_nothing_is_left_to_drain(answers: dict, check: bool) -> None:
    module = _kubectl("drain", answers, check)
    assert kubectl.drain(module)["changed"] is False
    assert check is False or not any(" drain " in c for c in module.calls)


def test_a_drain_that_refuses_npu_pods_touches_nothing_when_one_runs() -> None:
    """roles/ascend_driver's drain in the play (a node the engine did not drain) refuses NPU pods as the
    engine does without --force: no mark, no cordon, no eviction; other pods do not stop it."""
    import json

    def pods(*resources: dict) -> tuple[int, str, str]:
        return 0, json.dumps({"items": [
            {"metadata": {"namespace": "train", "name": f"p{i}"},
             "spec": {"containers": [{"name": "c", "resources": r}]}} for i, r in enumerate(resources)]}), ""

    npu = {"limits": {"huawei.com/Ascend910": "8"}}
    refused = _kubectl("drain", {"kubectl --kubeconfig=/k get node": (0, _node(), ""),
                                 "kubectl --kubeconfig=/k get pods": pods({"requests": {"cpu": "1"}}, npu)},
                       mark="npu-driver", refuse_resource="huawei.com/")
    why = r"node w1 NOT drained: pods requesting huawei.com/\* run on it \(train/p1\)"
    with pytest.raises(Failed, match=why):
        kubectl.drain(refused)
    assert not any(" annotate " in c or " drain " in c or " cordon " in c for c in refused.calls)
    assert "--field-selector spec.nodeName=w1,status.phase=Running" in refused.calls[1]
    cpu_only = _kubectl("drain", {"kubectl --kubeconfig=/k get node": (0, _node(), ""),
                                  "kubectl --kubeconfig=/k get pods": pods({"requests": {"cpu": "1"}})},
                        mark="npu-driver", refuse_resource="huawei.com/")
    assert kubectl.drain(cpu_only)["exists"] is True and " drain w1 " in cpu_only.calls[-1]


def test_a_failed_drain_fails_with_kubectls_words() -> None:
    refused = "cannot delete Pods that declare no controller (use --force to override)"
    module = _kubectl("drain", {"kubectl --kubeconfig=/k get node": (0, NODE, ""),
                                "kubectl --kubeconfig=/k drain": (1, "", refused)})
    with pytest.raises(Failed, match="drain w1 \\(within 900 s\\) failed \\(rc 1\\): cannot delete Pods"):
        kubectl.drain(module)


def test_delete_node_only_when_it_exists() -> None:
    gone = _kubectl("delete_node", {"kubectl --kubeconfig=/k get node": NOT_FOUND})
    assert kubectl.delete_node(gone) == {"changed": False, "exists": False}
    there = _kubectl("delete_node", {"kubectl --kubeconfig=/k get node": (0, NODE, "")})
    assert kubectl.delete_node(there) == {"changed": True, "exists": True}
    assert there.calls[-1].startswith("kubectl --kubeconfig=/k delete node w1 --ignore-not-found --wait=true")
    checked = _kubectl("delete_node", {"kubectl --kubeconfig=/k get node": (0, NODE, "")}, check=True)
    assert kubectl.delete_node(checked)["changed"] is True and len(checked.calls) == 1


def _node(unschedulable: bool = False, mark: str | None = None, version: str = "v1.34.4",
          ready: bool = True) -> str:
    import json

    return json.dumps({"metadata": {"name": "w1", "annotations": {kubectl.MARK: mark} if mark else {}},
                       "spec": {"unschedulable": True} if unschedulable else {},
                       "status": {"nodeInfo": {"kubeletVersion": version},
                                  "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}})


def test_a_drain_with_a_mark_records_it_before_the_cordon_and_never_on_a_cordoned_node() -> None:
    module = _kubectl("drain", {"kubectl --kubeconfig=/k get node": (0, _node(), "")}, mark="upgrade-cluster")
    assert kubectl.drain(module)["exists"] is True
    assert module.calls[1:] == [
        f"kubectl --kubeconfig=/k annotate node w1 --overwrite {kubectl.MARK}=upgrade-cluster",
        "kubectl --kubeconfig=/k drain w1 --ignore-daemonsets --delete-emptydir-data --timeout=900s"]
    operator = _kubectl("drain", {"kubectl --kubeconfig=/k get node": (0, _node(unschedulable=True), "")},
                        mark="upgrade-cluster")
    kubectl.drain(operator)
    assert not any(" annotate " in c for c in operator.calls)  # an operator's cordon stays the operator's


def test_release_waits_for_the_new_kubelet_then_uncordons_only_what_it_marked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubectl, "RELEASE_POLL", 0)
    answers = iter([_node(True, "upgrade-cluster", "v1.34.4"), _node(True, "upgrade-cluster", "v1.35.4")])

    class Polling(FakeModule):
        def run_command(self, argv: list[str], data: str | None = None) -> tuple[int, str, str]:
            self.calls.append(" ".join(argv))
            return (0, next(answers), "") if "get" in argv else (0, "", "")

    module = Polling({"kubectl": "kubectl", "kubeconfig": "/k", "node": "w1", "timeout": 60,
                      "mode": "release", "mark": "upgrade-cluster", "version": "v1.35.4"}, {})
    assert kubectl.release(module) == {"changed": True, "uncordoned": True, "kubelet_version": "v1.35.4"}
    assert module.calls[-2:] == ["kubectl --kubeconfig=/k uncordon w1",
                                 f"kubectl --kubeconfig=/k annotate node w1 {kubectl.MARK}-"]
    operator_cordoned = {"kubectl --kubeconfig=/k get node": (0, _node(True, None, "v1.35.4"), "")}
    operator = _kubectl("release", operator_cordoned, mark="upgrade-cluster", version="v1.35.4")
    assert kubectl.release(operator)["changed"] is False and len(operator.calls) == 1


def test_release_fails_and_leaves_the_node_cordoned_when_the_kubelet_does_not_come_back() -> None:
    module = _kubectl("release", {"kubectl --kubeconfig=/k get node": (0, _node(True, "u", "v1.34.4"), "")},
                      mark="u", version="v1.35.4", timeout=0)
    with pytest.raises(Failed, match="not Ready with kubelet v1.35.4 after 0 s \\(kubelet v1.34.4"):
        kubectl.release(module)
    assert not any("uncordon" in c for c in module.calls)
