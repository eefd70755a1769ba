"""`lab down` and `lab status` against a fake podman: the emulators' containers go with the lab, then the
network and every directory of the lab; a network still used by a stranger is named, not half-removed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ufcctl.errors import RunFailed
from ufcctl.lab.inventory import MARKER
from ufcctl.lab.lab import LabSettings, lab_down, lab_nodes, lab_status
from ufcctl.lab.podman import ContainerInfo, NetworkInfo

OURS = {"ufcctl.lab": "1", "ufcctl.lab.name": "t1"}
NET = "ufcctl-lab-t1"


def _c(name: str, role: str, **labels: str) -> ContainerInfo:
    return ContainerInfo(name, "running", None, "img", {**labels, "ufcctl.lab.role": role})


class FakePodman:
    """Containers and one network in memory; refuses to remove a network in use, as podman does."""

    def __init__(self, containers: list[ContainerInfo], network: bool = True) -> None:
        self.containers_ = {c.name: c for c in containers}
        self.network_ = NetworkInfo(NET, ("10.89.70.0/24",), OURS) if network else None
        self.calls: list[str] = []

    def network(self, name: str) -> NetworkInfo | None:
        return self.network_ if self.network_ and name == NET else None

    def containers(self, label: str | None = None, network: str | None = None) -> list[ContainerInfo]:
        return list(self.containers_.values())

    def containers_on(self, network: str) -> list[str]:
        return sorted(self.containers_) if self.network_ else []

    def remove_containers(self, names: list[str]) -> None:
        self.calls.append(f"rm {' '.join(names)}")
        for name in names:
            del self.containers_[name]

    def remove_network(self, name: str) -> None:
        if self.containers_:
            raise RunFailed("network is being used")
        self.calls.append(f"network rm {name}")
        self.network_ = None

    def dangling_images(self, label_key: str) -> list[str]:
        return []


LAB = [_c("t1-cp1", "control_plane", **OURS), _c("t1-w01", "worker", **OURS),
       _c("t1-hdk-mirror", "npu_mirror", **OURS)]


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LabSettings:
    monkeypatch.setattr("ufcctl.lab.lab.require_tools", lambda tools: None)
    inventory = tmp_path / "inv"
    settings = LabSettings("t1", inventory_dir=inventory, state=tmp_path / "state")
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / MARKER).write_text("t1\n")
    (inventory / "group_vars" / "npu_node.yml").write_text("x: 1\n")
    (settings.npu_emulator_dir / "hdk").mkdir(parents=True)
    (settings.npu_emulator_dir / "hdk" / "SHA256SUMS").write_text("")
    settings.nfs_dir.mkdir(parents=True)
    return settings


def test_down_removes_the_mirror_with_the_nodes_then_the_network_and_every_lab_directory(
        settings: LabSettings) -> None:
    podman = FakePodman(list(LAB))
    result = lab_down(settings, lambda m: None, podman=podman)  # type: ignore[arg-type]
    assert podman.calls == ["rm t1-cp1 t1-hdk-mirror t1-w01", f"network rm {NET}"]
    assert result.containers == ("t1-cp1", "t1-hdk-mirror", "t1-w01") and result.network == NET
    assert not settings.npu_emulator_dir.exists() and not settings.nfs_dir.exists()
    assert not settings.default_inventory().exists()
    # nothing left that is named after the lab
    assert [p.name for p in settings.state_path.iterdir() if "t1" in p.name] == []


def test_down_again_is_a_no_op(settings: LabSettings) -> None:
    podman = FakePodman(list(LAB))
    lab_down(settings, lambda m: None, podman=podman)  # type: ignore[arg-type]
    podman.calls.clear()
    again = lab_down(settings, lambda m: None, podman=podman)  # type: ignore[arg-type]
    assert podman.calls == []
    assert (again.containers, again.network, again.inventory_dir) == ((), None, None)


def test_a_strangers_container_on_the_network_is_named_and_the_network_kept(settings: LabSettings) -> None:
    stranger = ContainerInfo("t1-hdk-mirror", "running", None, "img", {"ufcctl.npu-emulator": "mirror"})
    podman = FakePodman([*LAB[:2], stranger])
    with pytest.raises(RunFailed) as err:
        lab_down(settings, lambda m: None, podman=podman)  # type: ignore[arg-type]
    assert f"network {NET} is still used by" in err.value.message and "t1-hdk-mirror" in err.value.message
    assert err.value.hint is not None and "podman rm -f t1-hdk-mirror" in err.value.hint
    assert podman.network_ is not None


def test_status_lists_the_mirror_after_the_nodes(settings: LabSettings) -> None:
    status = lab_status(settings, podman=FakePodman(list(reversed(LAB))))  # type: ignore[arg-type]
    assert [c.name for c in status.containers] == ["t1-cp1", "t1-w01", "t1-hdk-mirror"]
    assert status.npu_mirror is not None and status.npu_mirror.name == "t1-hdk-mirror"
    assert [c.name for c in lab_nodes(list(status.containers))] == ["t1-cp1", "t1-w01"]
