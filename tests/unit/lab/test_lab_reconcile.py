"""Lab bookkeeping without podman: whose containers are ours, the shape of a rerun, inventory ownership."""

from __future__ import annotations

from pathlib import Path

import pytest

from ufcctl.errors import EnvironmentMissing, InputError
from ufcctl.lab.hostlimits import InotifyUsage
from ufcctl.lab.inventory import MARKER
from ufcctl.lab.lab import _check_inventory_dir, _choose_shape, _write_files, lab_containers
from ufcctl.lab.nodes import check_inotify_room
from ufcctl.lab.podman import ContainerInfo, NetworkInfo


def _c(name: str, **labels: str) -> ContainerInfo:
    return ContainerInfo(name=name, state="running", ip=None, image="img", labels=labels)


OURS = {"ufcctl.lab": "1", "ufcctl.lab.name": "t1"}


class FakePodman:
    """Returns whatever containers it holds, ignoring the label filter (the worst podman could do)."""

    def __init__(self, containers: list[ContainerInfo]) -> None:
        self._containers = containers

    def containers(self, label: str | None = None, network: str | None = None) -> list[ContainerInfo]:
        return list(self._containers)


@pytest.mark.parametrize(
    ("container", "is_ours"),
    [
        (_c("t1-w01", **OURS), True),
        (_c("t1-w01", **{"ufcctl.lab.name": "t1"}), False),
        (_c("t1-w01", **{**OURS, "ufcctl.lab.name": "t2"}), False),
        (_c("t2-w01", **OURS), False),
        (_c("t1-w01", **{**OURS, "ufcctl.lab": "0"}), False),
        (_c("t1-w01"), False),
    ],
    ids=["ours", "no-lab-label", "other-lab-label", "other-prefix", "lab-label-not-1", "unlabelled"],
)
def test_only_containers_with_both_labels_and_the_prefix_are_ours(container, is_ours) -> None:
    found = lab_containers(FakePodman([container]), "t1")  # type: ignore[arg-type]
    assert (found == [container]) is is_ours


def _net(subnet: str) -> NetworkInfo:
    return NetworkInfo("ufcctl-lab-t1", (subnet,), OURS)


@pytest.mark.parametrize(
    ("net", "existing_workers", "workers", "subnet", "expected"),
    [
        (None, 0, None, None, (6, "10.89.64.0/24")),
        (None, 0, 3, "10.89.70.0/24", (3, "10.89.70.0/24")),
        (_net("10.89.70.0/24"), 4, None, None, (4, "10.89.70.0/24")),
        (_net("10.89.70.0/24"), 4, 8, "10.89.70.0/24", (8, "10.89.70.0/24")),
        (_net("10.89.70.0/24"), 0, None, None, (6, "10.89.70.0/24")),
    ],
    ids=["new-defaults", "new-explicit", "rerun-keeps-shape", "rerun-grows", "network-without-workers"],
)
def test_shape_of_a_rerun(net, existing_workers, workers, subnet, expected) -> None:
    existing = [_c(f"t1-w{i:02d}", **OURS, **{"ufcctl.lab.role": "worker"}) for i in range(existing_workers)]
    existing.append(_c("t1-cp1", **OURS, **{"ufcctl.lab.role": "control_plane"}))
    assert _choose_shape(net, existing, workers, subnet) == expected


def test_moving_a_running_lab_to_another_subnet_is_refused() -> None:
    with pytest.raises(InputError) as err:
        _choose_shape(_net("10.89.70.0/24"), [], None, "10.89.71.0/24")
    assert "is up on 10.89.70.0/24" in err.value.message
    assert "lab down" in (err.value.hint or "")


@pytest.mark.parametrize(
    ("files", "ok"),
    [({}, True), ({MARKER: "t1\n", "hosts.yml": ""}, True), ({"hosts.yml": "mine"}, False),
     ({MARKER: "t2\n"}, False)],
    ids=["empty", "ours", "users-files", "other-lab"],
)
def test_inventory_dir_ownership(tmp_path: Path, files: dict[str, str], ok: bool) -> None:
    for rel, content in files.items():
        (tmp_path / rel).write_text(content)
    if ok:
        _check_inventory_dir(tmp_path, "t1")
    else:
        with pytest.raises(InputError, match=str(tmp_path)):
            _check_inventory_dir(tmp_path, "t1")


def test_write_files_is_idempotent_and_prunes_stale_files(tmp_path: Path) -> None:
    files = {"hosts.yml": "a", "group_vars/all/x.yml": "b", MARKER: "t1\n"}
    assert _write_files(tmp_path, files) is True
    assert _write_files(tmp_path, files) is False
    (tmp_path / "group_vars" / "all.yml").write_text("left over by an older ufcctl")
    assert _write_files(tmp_path, files) is True
    assert not (tmp_path / "group_vars" / "all.yml").exists()
    left = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert left == sorted(files)


@pytest.mark.parametrize(
    ("limit", "in_use", "starting", "ok"),
    [(128, 0, 21, True), (128, 0, 22, False), (128, 112, 2, True), (128, 112, 3, False), (128, 128, 0, True)],
    ids=["fits", "one-too-many", "nearly-full-fits", "nearly-full-refused", "nothing-to-start"],
)
def test_inotify_room(monkeypatch: pytest.MonkeyPatch, limit, in_use, starting, ok) -> None:
    monkeypatch.setattr("ufcctl.lab.nodes.inotify_usage", lambda: InotifyUsage(limit, in_use))
    if ok:
        check_inotify_room(starting)
    else:
        with pytest.raises(EnvironmentMissing) as err:
            check_inotify_room(starting)
        assert f"fs.inotify.max_user_instances is {limit} ({in_use} in use)" in err.value.message
        assert "sysctl -w fs.inotify.max_user_instances=" in (err.value.hint or "")
