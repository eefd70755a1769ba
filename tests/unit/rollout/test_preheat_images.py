"""The preheat-images kind: registration, targets, the once-per-run cache step (which caches, which
images, what it says without caches) and the node extra vars. Ansible is FakeAnsible asking the real gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_ansible import FakeAnsible
from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.engine.run_result import HostResult, RunResult
from ufcctl.errors import InputError, RunFailed
from ufcctl.rollout import runs
from ufcctl.rollout.catalog import KINDS
from ufcctl.rollout.kind import RolloutRequest
from ufcctl.rollout.kinds import preheat_images
from ufcctl.rollout.store import StateStore

UPSTREAMS = [{"name": "lab", "registry": "10.89.0.2:5000", "url": "http://10.89.0.2:5000", "port": 5001}]
IMAGE = "10.89.0.2:5000/lab/app:v1"


def cluster(workers: int, caches: dict[str, dict[str, Any]] | None = None,
            upstreams: Any = UPSTREAMS) -> Inventory:
    common = {"registry_cache_upstreams": upstreams} if upstreams is not None else {}
    hosts = {"cp1": Host("cp1", common, frozenset({"all", "kube_control_plane", "kube_node"}))}
    ws = [f"w{i:02d}" for i in range(workers)]
    hosts |= {n: Host(n, {**common, "npu_tor_id": f"tor-{i // 2}", "npu_super_pod_id": 0},
                      frozenset({"all", "kube_node"})) for i, n in enumerate(ws)}
    caches = caches or {}
    hosts |= {n: Host(n, {**common, **v}, frozenset({"all", "registry_cache"})) for n, v in caches.items()}
    groups = {"kube_control_plane": Group("kube_control_plane", hosts=("cp1",)),
              "kube_node": Group("kube_node", hosts=("cp1", *ws)),
              "registry_cache": Group("registry_cache", hosts=tuple(caches))}
    return Inventory("inv", hosts, groups)


def request(images: tuple[str, ...] = (IMAGE,), **kw: Any) -> RolloutRequest:
    own = {k: kw.pop(k) for k in ("node_timeout",) if k in kw}
    return RolloutRequest(**{"inventory_dir": Path("/inv"), "batch": 2, **kw},
                          options=preheat_images.preheat_options(images=images, **own))


@pytest.fixture()
def warms(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], Any]]:
    """The cache play: records its hosts and extra vars; fails on hosts named *bad*."""
    calls: list[tuple[list[str], Any]] = []

    def run(playbook: Path, hosts: list[Host], options: Any, **kw: Any) -> RunResult:
        assert playbook.name == "preheat-caches.yml"
        calls.append(([h.name for h in hosts], options))
        why = "blob sha256:x: content hashes to sha256:y"
        results = {h.name: HostResult(h.name, ok=1, ran=1, failed=int("bad" in h.name),
                                      message=why if "bad" in h.name else None) for h in hosts}
        status = "failed" if any("bad" in h.name for h in hosts) else "successful"
        return RunResult("t", playbook.name, status, int(status == "failed"), results, Path("/x"), 0.1)

    monkeypatch.setattr(preheat_images, "run_playbook", run)
    return calls


def test_registered_with_its_playbook_and_options() -> None:
    kind = KINDS.get("preheat-images")
    assert kind is preheat_images.KIND
    assert kind.playbook == "preheat-images.yml" and kind.options == ("images", "node_timeout")
    assert kind.exclude_groups == ("kube_control_plane",)


def test_workers_pull_the_qualified_images_after_the_serving_caches_are_warmed(
        store: StateStore, warms: list[tuple[list[str], Any]]) -> None:
    caches = {"cache-tor0": {"npu_tor_id": "tor-0"}, "cache-tor7": {"npu_tor_id": "tor-7"},
              "cache-sp0": {"registry_cache_tier": "super_pod", "npu_super_pod_id": 0}}
    inv = cluster(4, caches)
    fake = FakeAnsible()
    summary = runs.start(preheat_images.KIND, request((IMAGE, "busybox")), store, inv, run_fn=fake)
    assert summary.status == "done" and sorted(fake.starts) == ["w00", "w01", "w02", "w03"]
    # tor-7 serves no target; the super pod cache first, then the ToR cache that fills from it
    assert [names for names, _ in warms] == [["cache-sp0"], ["cache-tor0"]]
    assert warms[0][1].extravars == {"image_preheat_cache_images": [
        {"image": IMAGE, "repository": "lab/app", "reference": "v1", "port": 5001}]}  # busybox: no cache
    assert summary.steps["prepare"].startswith("warmed 2 of 2 registry cache(s) with 1 image(s)")
    assert fake.calls[0][2].extravars == {
        "image_preheat_images": [IMAGE, "docker.io/library/busybox:latest"],
        "image_preheat_pull_timeout": 1800}


def test_without_caches_nodes_pull_from_upstream(store: StateStore, warms: list[Any]) -> None:
    summary = runs.start(preheat_images.KIND, request(), store, cluster(2), run_fn=FakeAnsible())
    assert summary.status == "done" and warms == []
    assert summary.steps["prepare"] == ("no registry caches (group registry_cache is empty): "
                                        "nodes pull from upstream directly")


def test_when_every_serving_cache_fails_to_warm_the_run_stops_before_any_node(store: StateStore,
                                                                              warms: list[Any]) -> None:
    fake = FakeAnsible()
    with pytest.raises(RunFailed, match=r"warming registry cache\(s\) cache-bad: failed: blob sha256:x"):
        runs.start(preheat_images.KIND, request(), store, cluster(2, {"cache-bad": {"npu_tor_id": "tor-0"}}),
                   run_fn=fake)
    assert fake.starts == {}


def test_one_dead_cache_is_reported_and_its_nodes_fall_back_to_the_next_mirror(store: StateStore,
                                                                               warms: list[Any]) -> None:
    caches = {"cache-bad-tor0": {"npu_tor_id": "tor-0"},
              "cache-sp0": {"registry_cache_tier": "super_pod", "npu_super_pod_id": 0}}
    fake = FakeAnsible()
    summary = runs.start(preheat_images.KIND, request(), store, cluster(2, caches), run_fn=fake)
    assert summary.status == "done" and sorted(fake.starts) == ["w00", "w01"]
    assert summary.steps["prepare"].startswith("warmed 1 of 2 registry cache(s)")
    assert "NOT warmed: cache-bad-tor0 (blob sha256:x" in summary.steps["prepare"]


@pytest.mark.parametrize(("images", "message"), [
    ((), "no IMAGE given"),
    (("Bad/Name",), "image 'Bad/Name': expected"),
])
def test_bad_images_are_input_errors(images: tuple[str, ...], message: str) -> None:
    with pytest.raises(InputError, match=message):
        request(images)


def test_dry_run_counts_upstream_traffic_per_serving_cache_or_per_node(store: StateStore) -> None:
    caches = {"cache-tor0": {"npu_tor_id": "tor-0"}, "cache-tor1": {"npu_tor_id": "tor-1"}}
    inv = cluster(6, caches)
    sizes = {"lab/app": (1000, ""),
             "library/busybox": (None, "GET https://registry-1.docker.io/v2/: HTTP 401")}
    plan = preheat_images.dry_run(request((IMAGE, "busybox")), store, inv,
                                  size_of=lambda url, repo, ref, timeout: sizes[repo])
    assert plan.caches.caches == ["cache-tor0", "cache-tor1"] and plan.report.targets == 6
    app, busybox = plan.traffic
    assert (app.pulls, app.via, app.total) == (2, "caches", 2000)
    assert (busybox.pulls, busybox.via, busybox.total) == (6, "nodes", None)
    assert "HTTP 401" in plan.why_unknown["docker.io/library/busybox:latest"]


def test_tor_caches_filling_from_their_super_pod_cache_cost_the_upstream_nothing(store: StateStore) -> None:
    # issue 31: the upstream sends an image once per super pod cache; a ToR cache of a super pod no
    # cache serves (registry_cache_super_pod 9) fills from the upstream itself
    caches = {"cache-tor0": {"npu_tor_id": "tor-0", "registry_cache_super_pod": 0},
              "cache-tor1": {"npu_tor_id": "tor-1", "registry_cache_super_pod": 0},
              "cache-tor2": {"npu_tor_id": "tor-2", "registry_cache_super_pod": 9},
              "cache-sp0": {"registry_cache_tier": "super_pod", "npu_super_pod_id": 0}}
    plan = preheat_images.dry_run(request(), store, cluster(6, caches),
                                  size_of=lambda url, repo, ref, timeout: (1000, ""))
    assert plan.caches.waves == (["cache-sp0"], ["cache-tor0", "cache-tor1", "cache-tor2"])
    (app,) = plan.traffic
    assert (app.pulls, app.via, app.total) == (2, "caches", 2000)


def test_a_silent_registry_is_asked_once_within_one_deadline(store: StateStore) -> None:
    """issue 42: a registry that did not answer is not asked again, and all reads share one deadline."""
    asked: list[tuple[str, float]] = []
    now = [0.0]

    def silent(url, repo, ref, timeout):
        asked.append((repo, timeout))
        now[0] += timeout  # the request ran out its time
        return None, f"GET {url}/v2/{repo}/manifests/{ref}: no answer within {timeout:g} s"

    images = tuple(f"registry.example:5000/team/app{i}:1" for i in range(10))
    plan = preheat_images.dry_run(request(images), store, cluster(2, {}), size_of=silent,
                                  clock=lambda: now[0])
    assert [repo for repo, _ in asked] == ["team/app0"]
    others = [why for image, why in plan.why_unknown.items() if "app0" not in image]
    assert len(others) == 9 and all("did not answer earlier" in why for why in others)
    assert now[0] <= preheat_images.READ_DEADLINE


def test_answering_registries_share_one_deadline(store: StateStore) -> None:
    now = [0.0]

    def slow(url, repo, ref, timeout):
        now[0] += 4.0
        return 1000, ""

    images = tuple(f"registry.example:5000/team/app{i}:1" for i in range(10))
    plan = preheat_images.dry_run(request(images), store, cluster(2, {}), size_of=slow, clock=lambda: now[0])
    spent = [why for why in plan.why_unknown.values() if "are spent" in why]
    assert spent and now[0] <= preheat_images.READ_DEADLINE


@pytest.mark.parametrize("port", ["0", "65536", "99999999"])
def test_registry_ports_are_1_to_65535(port: str) -> None:
    with pytest.raises(InputError, match=f"port {port[:6]} is not 1-65535"):
        request((f"registry.example:{port}/team/app:1",))


def test_images_are_warmed_and_read_under_the_sites_mirror_of_their_registry(
        store: StateStore, warms: list[tuple[list[str], Any]]) -> None:
    """issue 44, D13: with ufc_image_registries the pods run quay.io's Calico as <mirror>/calico/node; the
    caches warm that name (the nodes' role maps it the same way: test_image_preheat_mapping.py)."""
    inv = cluster(2, {"cache-tor0": {"npu_tor_id": "tor-0"}})
    for host in inv.hosts.values():
        host.vars["ufc_image_registries"] = {"quay.io": "10.89.0.2:5000/quay"}
    calico = ("quay.io/calico/node:v3.29.3",)
    runs.start(preheat_images.KIND, request(calico), store, inv, run_fn=FakeAnsible())
    assert warms[0][1].extravars == {"image_preheat_cache_images": [
        {"image": "10.89.0.2:5000/quay/calico/node:v3.29.3", "repository": "quay/calico/node",
         "reference": "v3.29.3", "port": 5001}]}
    sizes = {"quay/calico/node": (10, "")}
    plan = preheat_images.dry_run(request(calico), store, inv,
                                  size_of=lambda url, repo, ref, timeout: sizes.get(repo, (None, repo)))
    mirrored = "10.89.0.2:5000/quay/calico/node:v3.29.3"
    assert [(t.image, t.via) for t in plan.traffic] == [(mirrored, "caches")]


def test_a_malformed_mapping_is_an_input_error(store: StateStore) -> None:
    inv = cluster(2)
    for host in inv.hosts.values():
        host.vars["ufc_image_registries"] = "one-prefix.example"
    with pytest.raises(InputError, match="ufc_image_registries must be a mapping"):
        preheat_images.dry_run(request(), store, inv, size_of=lambda *a, **k: (None, ""))
