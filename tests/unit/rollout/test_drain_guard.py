"""Cordon/drain around each node: kubeconfig discovery, NPU-pod skips, failed nodes stay cordoned."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from ufcctl.domain.inventory.model import Host
from ufcctl.engine.kubectl import Kubectl, find_kubeconfig
from ufcctl.errors import EnvironmentMissing, RunFailed
from ufcctl.rollout.drain import DrainGuard, drain_guard


class FakeKubectlCommand:
    """Test double for kubectl's process: records argv, answers `get pods` with scripted pods."""

    def __init__(self, pods_by_node: dict[str, list[dict]] | None = None, fail: str | None = None,
                 nodes: dict[str, dict] | None = None):
        self.pods_by_node = pods_by_node or {}
        self.fail = fail
        self.nodes = nodes or {}  # node -> its Node object (`get node`); default: schedulable, unmarked
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout: int) -> tuple[int, str, str]:
        args = list(argv)[3:]  # drop binary --kubeconfig PATH
        self.calls.append(args)
        if self.fail and args[0] == self.fail:
            return 1, "", f"error: {self.fail} timed out"
        if args[:2] == ["get", "pods"]:
            node = args[args.index("--field-selector") + 1].split(",")[0].split("=")[1]
            return 0, json.dumps({"items": self.pods_by_node.get(node, [])}), ""
        if args[:2] == ["get", "node"]:
            return 0, json.dumps(self.nodes.get(args[2], {"metadata": {"name": args[2]}, "spec": {}})), ""
        return 0, "", ""


def pod(name: str, resources: dict) -> dict:
    return {"metadata": {"namespace": "train", "name": name},
            "spec": {"containers": [{"name": "c", "resources": resources}]}}


NPU_POD = pod("job-0", {"limits": {"huawei.com/Ascend910": "8"}})
CPU_POD = pod("web", {"requests": {"cpu": "1"}})


def guard(command: FakeKubectlCommand, force: bool = False) -> DrainGuard:
    return DrainGuard(Kubectl("kubectl", Path("/kc"), command=command), force, drain_timeout=30)


def host(name: str = "w01", **vars: object) -> Host:
    return Host(name, vars, frozenset({"all", "npu_node"}))


def verbs(command: FakeKubectlCommand) -> list[str]:
    return [c[0] for c in command.calls]


def test_node_without_npu_pods_is_marked_then_drained() -> None:
    cmd = FakeKubectlCommand({"w01": [CPU_POD]})
    assert guard(cmd).prepare(host()) is None
    # the mark before the cordon (kubectl drain cordons first): a run killed in between leaves the record
    assert verbs(cmd) == ["get", "get", "annotate", "drain"]
    assert cmd.calls[2] == ["annotate", "node", "w01", "--overwrite", "ufcctl.io/cordoned-for=npu-driver"]
    assert "--timeout=30s" in cmd.calls[3] and "--ignore-daemonsets" in cmd.calls[3]


def test_a_node_cordoned_before_the_rollout_is_upgraded_but_stays_cordoned() -> None:
    """An operator's cordon (a node kept out for a reason ufcctl does not know) outlives the rollout; a
    node ufcctl cordoned, in this run or a run killed before its release (the mark), is uncordoned."""
    nodes = {"w01": {"spec": {"unschedulable": True}},
             "w02": {"spec": {"unschedulable": True}, "metadata": {"annotations": {
                 "ufcctl.io/cordoned-for": "npu-driver"}}},
             "w03": {"spec": {"unschedulable": True}, "metadata": {"annotations": {
                 "ufcctl.io/cordoned-for": "npu-fabric"}}}}
    cmd = FakeKubectlCommand(nodes=nodes)
    drains = guard(cmd)
    for name in ("w01", "w02", "w03", "w04"):
        assert drains.prepare(host(name)) is None
    assert [c[2] for c in cmd.calls if c[0] == "annotate"] == ["w04"]  # only the schedulable one is marked
    cmd.calls.clear()
    for name in ("w01", "w02", "w03", "w04"):
        drains.release(host(name), True)
    assert cmd.calls == [["uncordon", "w02"], ["annotate", "node", "w02", "ufcctl.io/cordoned-for-"],
                         ["uncordon", "w04"], ["annotate", "node", "w04", "ufcctl.io/cordoned-for-"]]


def test_node_with_npu_pods_is_skipped_unless_forced() -> None:
    cmd = FakeKubectlCommand({"w01": [NPU_POD]})
    reason = guard(cmd).prepare(host())
    assert reason and "train/job-0" in reason and "--force" in reason
    assert verbs(cmd) == ["get"]
    forced = FakeKubectlCommand({"w01": [NPU_POD]})
    assert guard(forced, force=True).prepare(host()) is None
    assert verbs(forced) == ["get", "get", "annotate", "drain"]


@pytest.mark.parametrize(("ok", "expected"), [(True, ["uncordon", "annotate"]), (False, [])],
                         ids=["healthy", "failed"])
def test_only_healthy_nodes_are_uncordoned(ok: bool, expected: list[str]) -> None:
    cmd = FakeKubectlCommand()
    drains = guard(cmd)
    drains.prepare(host())
    cmd.calls.clear()
    drains.release(host(), ok)
    assert verbs(cmd) == expected


def test_kubernetes_node_name_var_is_used() -> None:
    cmd = FakeKubectlCommand()
    drains = guard(cmd)
    drains.prepare(host(ufc_kube_node_name="node-a"))
    cmd.calls.clear()
    drains.release(host(ufc_kube_node_name="node-a"), True)
    assert cmd.calls[0] == ["uncordon", "node-a"]


def test_a_failing_drain_raises() -> None:
    with pytest.raises(RunFailed, match="drain timed out"):
        guard(FakeKubectlCommand(fail="drain")).prepare(host())


def test_find_kubeconfig(tmp_path: Path) -> None:
    cfg = tmp_path / "kc"
    cfg.write_text("apiVersion: v1\n")
    assert find_kubeconfig({"KUBECONFIG": f"{tmp_path / 'missing'}:{cfg}"}, tmp_path) == cfg
    assert find_kubeconfig({"KUBECONFIG": str(tmp_path / "missing")}, tmp_path) is None
    assert find_kubeconfig({}, tmp_path) is None
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("x")
    assert find_kubeconfig({}, tmp_path) == tmp_path / ".kube" / "config"


def test_drain_guard_choices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert drain_guard(force=False, dry_run=False)[0] is None
    assert "NOT cordoned" in drain_guard(force=False, dry_run=False)[1]
    assert drain_guard(force=False, dry_run=True)[1].startswith("skipped: --dry-run")
    cfg = tmp_path / "kc"
    cfg.write_text("x")
    monkeypatch.setenv("KUBECONFIG", str(cfg))
    monkeypatch.setattr("ufcctl.rollout.drain.find_kubectl", lambda: None)
    with pytest.raises(EnvironmentMissing, match="kubectl is not installed"):
        drain_guard(force=False, dry_run=False)
    monkeypatch.setattr("ufcctl.rollout.drain.find_kubectl", lambda: "/usr/bin/kubectl")
    chosen, step = drain_guard(force=True, dry_run=False)
    assert isinstance(chosen, DrainGuard) and "force=True" in step


def test_the_engine_marks_as_the_role_and_its_kubectl_module_do() -> None:
    """The engine's drain and roles/ascend_driver's in-play drain share one mark (its admission uncordons
    a node either drained), written under the annotation roles/k8s_manifests' module reads: both defined
    once in ufcctl/domain/rollout/cordon.py (generated into the role's vars, linked into the module's
    module_utils); this holds the generation and the link to it."""
    import yaml

    from tests.helpers.pyimports import load_file
    from ufcctl.engine.kubectl import CORDON_MARK
    from ufcctl.rollout.drain import DRAIN_MARK

    root = Path(__file__).resolve().parents[3]
    role_vars = {name: value for file in ("main.yml", "generated.yml")
                 for name, value in yaml.safe_load((root / "roles" / "ascend_driver" / "vars" / "main" / file)
                                                   .read_text()).items()}
    library = root / "roles" / "k8s_manifests" / "library"
    module = load_file(library / "ufcctl_kubectl.py", "ufcctl_kubectl_mark")
    assert role_vars["__ascend_driver_drain_mark"] == DRAIN_MARK
    assert module.MARK == CORDON_MARK
