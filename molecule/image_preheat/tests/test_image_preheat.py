"""image_preheat on one lab instance: the image's digest is in k8s.io, its blobs came through the warm
cache (no upstream GET from the node's fetch), check mode and reruns pull nothing, a bad reference fails."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.lab_standins.upstream_registry import registry  # noqa: E402
from tests.lab_standins.upstream_registry.image import MIB, build_image  # noqa: E402

REF = "127.0.0.1:5000/lab/preheat-test:v1"
IMAGE = build_image(seed=1, layer_bytes=2 * MIB)


def test_the_image_is_in_k8s_io_with_the_pushed_digest(host):
    listed = host.check_output("ctr -n k8s.io images ls")
    assert f"{REF} " in listed and IMAGE.manifest_digest in listed
    content = host.check_output("ctr -n k8s.io content ls -q")
    assert set(IMAGE.blobs) <= set(content.split())


def test_the_node_fetched_through_the_warm_cache_not_the_upstream(host):
    # docker-registry 2.8's proxy fetches a missing blob twice from its upstream (one stream to the
    # client, one to store it; measured: 2 upstream GETs for the first client GET, none after), so the
    # warm costs the upstream 2 GETs per blob; the node's fetch must add none.
    log = host.file(registry.LOG_PATH).content_string.splitlines()
    gets = registry.blob_gets(log)
    assert gets == {"127.0.0.1": 2 * len(IMAGE.blobs)}, gets
    cache = host.file("/var/log/ufc-test-cache.log").content_string.splitlines()
    assert sum(registry.blob_gets(cache).values()) == 2 * len(IMAGE.blobs)  # the warm, then the node


def test_check_mode_pulls_nothing_and_a_bad_reference_fails(host, run_playbook):
    host.run_expect([0], f"ctr -n k8s.io images rm {REF}")
    checked = run_playbook(check=True)
    assert checked.rc == 0 and REF not in host.check_output("ctr -n k8s.io images ls -q")
    bad = run_playbook(extra_vars={"image_preheat_images": ["127.0.0.1:5000/lab/no-such:v1"]})
    assert bad.rc != 0 and "127.0.0.1:5000/lab/no-such:v1: pull failed" in bad.text
    again = run_playbook()  # back as converge left it
    assert again.rc == 0 and REF in host.check_output("ctr -n k8s.io images ls -q")
