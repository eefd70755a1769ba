"""`ufcctl images preheat`: bad input exits 2 with one line; --dry-run prints the plan and the expected
upstream traffic, reading the image's size from a loopback stand-in upstream, contacting no node."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ufcctl.cli.main import cli

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # tests.helpers and lab are imported from the repository root
    sys.path.insert(0, str(ROOT))

from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory  # noqa: E402
from tests.helpers.registry_standin import Standin, serve  # noqa: E402
from tests.lab_standins.upstream_registry.image import build_image  # noqa: E402

IMAGE = build_image(seed=9, layers=2, layer_bytes=512 * 1024)


def inventory(root: Path, upstream_url: str) -> Path:
    """24 NPU nodes, 4 per ToR (6 ToRs), 3 ToRs per super pod; caches on tor-0001, tor-0002, super pod 1
    and a ToR with no node; the lab upstream behind port 5001 of every cache."""
    inv = write_cluster_inventory(root, ClusterShape(npu_nodes=24, nodes_per_tor=4), "explicit")
    hosts = yaml.safe_load((inv / "hosts.yml").read_text())
    hosts["all"]["children"]["registry_cache"] = {"hosts": {
        "cache-t1": {"ansible_host": "10.0.1.1", "npu_tor_id": "tor-0001"},
        "cache-t2": {"ansible_host": "10.0.1.2", "npu_tor_id": "tor-0002"},
        "cache-sp1": {"ansible_host": "10.0.1.3", "registry_cache_tier": "super_pod", "npu_super_pod_id": 1},
        "cache-t99": {"ansible_host": "10.0.1.4", "npu_tor_id": "tor-0099"},
    }}
    (inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
    all_vars = yaml.safe_load((inv / "group_vars" / "all.yml").read_text())
    all_vars["registry_cache_upstreams"] = [
        {"name": "lab", "registry": "upstream.lab:5000", "url": upstream_url, "port": 5001}]
    (inv / "group_vars" / "all.yml").write_text(yaml.safe_dump(all_vars))
    return inv


@pytest.fixture()
def upstream() -> Standin:
    standin = Standin()
    standin.add_image("lab/app", "v1", IMAGE)
    with serve(standin):
        yield standin


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, upstream: Standin) -> Path:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    return inventory(tmp_path / "inv", upstream.url)


@pytest.mark.parametrize(("args", "message"), [
    ([], "Error: no IMAGE given: name at least one image, e.g. registry.example:5000/team/app:1.0"),
    (["Upper/Case:1"], "Error: image 'Upper/Case:1': expected [registry/]name[:tag][@sha256:<64 hex>] "
                       "with a lowercase name"),
    (["upstream.lab:5000/lab/app:v1", "--limit", "nfs1"],
     "Error: --limit 'nfs1' selects no host of group kube_node"),
])
def test_bad_input_exits_2_with_one_line(env: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["images", "preheat", "-i", str(env), "--dry-run", *args])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [message]


def test_dry_run_prints_batches_and_upstream_traffic_per_serving_cache(env: Path, upstream: Standin) -> None:
    result = CliRunner().invoke(cli, ["images", "preheat", "-i", str(env), "--dry-run", "--batch", "4",
                                      "--by", "tor", "upstream.lab:5000/lab/app:v1"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "registry caches: 3 of 4 serve at least one target node" in out  # not cache-t99
    size = IMAGE.size
    assert f"upstream.lab:5000/lab/app:v1: {size / 1024 / 1024:.1f} MiB x 3 cache(s) = " \
           f"{3 * size / 1024 / 1024:.1f} MiB" in out
    assert "note: counted once per cache that fills from the upstream" in out
    assert upstream.blob_gets() == 0  # the manifest only
    assert [p for m, p in upstream.requests] == ["/v2/lab/app/manifests/v1"]


def test_dry_run_json_numbers_and_per_node_traffic_without_a_cache(env: Path, upstream: Standin) -> None:
    # the image's registry has no cache: every target node pulls from upstream (size unknown: not reachable)
    result = CliRunner().invoke(cli, ["images", "preheat", "-i", str(env), "--dry-run", "--batch", "4",
                                      "--limit", "npu0000[1-8]", "-o", "json",
                                      "127.0.0.1:9/lab/app:v1", "upstream.lab:5000/lab/app:v1"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["targets"] == 8 and len(doc["batches"]) == 2
    # nodes 1-8: tor-0001 and tor-0002, both in super pod 0: the super pod 1 cache serves none of them
    assert doc["caches_serving"] == ["cache-t1", "cache-t2"] and doc["caches_total"] == 4
    direct, cached = doc["upstream_traffic"]
    assert (direct["size"], direct["pulls"], direct["via"], direct["bytes"]) == (None, 8, "nodes", None)
    # no upstream entry for its registry: the controller tries https://<registry>
    assert direct["why_unknown"].startswith("GET https://127.0.0.1:9/v2/lab/app/manifests/v1")
    assert (cached["size"], cached["pulls"], cached["bytes"]) == (IMAGE.size, 2, 2 * IMAGE.size)
    assert doc["upstream_bytes_known"] == 2 * IMAGE.size and doc["upstream_bytes_complete"] is False
