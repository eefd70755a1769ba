"""LAB UPSTREAM REGISTRY: the test image builder, the docker-registry configuration and its log parser."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

import pytest
import yaml

from tests.lab_standins.upstream_registry import registry
from tests.lab_standins.upstream_registry.image import (
    CONFIG_TYPE,
    LAYER_TYPE,
    MANIFEST_TYPE,
    build_image,
    digest_of,
)

SMALL = 64 * 1024


def test_same_seed_same_digests_other_seed_other_digests() -> None:
    a, b = build_image(seed=7, layers=3, layer_bytes=SMALL), build_image(seed=7, layers=3, layer_bytes=SMALL)
    c = build_image(seed=8, layers=3, layer_bytes=SMALL)
    assert a.manifest == b.manifest and a.manifest_digest == b.manifest_digest
    assert a.blobs.keys() == b.blobs.keys()
    assert not set(a.blobs) & set(c.blobs)


def test_manifest_is_oci_json_listing_every_blob_with_its_size() -> None:
    image = build_image(seed=1, layers=4, layer_bytes=SMALL)
    doc = json.loads(image.manifest)
    assert doc["schemaVersion"] == 2 and doc["mediaType"] == MANIFEST_TYPE
    config_entry = {"mediaType": CONFIG_TYPE, "digest": digest_of(image.config), "size": len(image.config)}
    assert doc["config"] == config_entry
    assert [entry["mediaType"] for entry in doc["layers"]] == [LAYER_TYPE] * 4
    for entry, blob in zip(doc["layers"], image.layers, strict=True):
        assert entry == {"mediaType": LAYER_TYPE, "digest": digest_of(blob), "size": len(blob)}
    config = json.loads(image.config)
    assert (config["os"], config["architecture"]) == ("linux", "amd64")
    assert config["rootfs"]["diff_ids"] == list(image.diff_ids)
    assert image.size == len(image.config) + sum(len(b) for b in image.layers)


def test_layers_are_gzip_tars_of_one_incompressible_file() -> None:
    image = build_image(seed=2, layers=2, layer_bytes=SMALL)
    for blob, diff_id in zip(image.layers, image.diff_ids, strict=True):
        raw = gzip.decompress(blob)
        assert digest_of(raw) == diff_id
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            members = tar.getmembers()
            assert len(members) == 1 and members[0].size == SMALL and members[0].mtime == 0
        assert len(blob) > SMALL  # random bytes do not compress


def test_default_image_is_tens_of_mib() -> None:
    image = build_image()
    assert len(image.layers) == 4
    assert 20 << 20 < image.size < 40 << 20


def test_bad_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        build_image(layers=0)


def test_config_is_a_plain_registry_with_access_log() -> None:
    doc = yaml.safe_load(registry.config_yaml(port=5123, root_dir="/srv/reg"))
    assert "proxy" not in doc
    assert doc["log"]["accesslog"] == {"disabled": False}
    assert doc["http"]["addr"] == ":5123"
    assert doc["storage"]["filesystem"]["rootdirectory"] == "/srv/reg"
    assert registry.command() == ["/usr/bin/docker-registry", "serve", registry.CONFIG_PATH]
    assert "nohup /usr/bin/docker-registry serve" in registry.start_script()


BLOB = "sha256:" + "ab" * 32
# Lines as docker-registry 2.8.2 wrote them in the lab image (seen in a lab container).
LOG = [
    f'10.89.0.1 - - [25/Nov/2026:22:53:34 +0000] "GET /v2/lab/preheat-test/blobs/{BLOB} HTTP/1.1" 200 491 "" '
    '"Python-urllib/3.11"',
    'time="2026-11-25T22:53:34.749315263Z" level=info msg="response completed" go.version=go1.19.8 '
    'http.request.host="10.89.0.2:5000" http.request.method=GET '
    'http.request.remoteaddr="10.89.0.1:49870" '
    f'http.request.uri="/v2/lab/preheat-test/blobs/{BLOB}" http.request.useragent="Python-urllib/3.11" '
    "http.response.contenttype=application/octet-stream http.response.duration=1.2ms "
    "http.response.status=200 "
    f"http.response.written=491",
    f'10.89.0.7 - - [25/Nov/2026:22:53:35 +0000] "GET /v2/lab/preheat-test/blobs/{BLOB} HTTP/1.1" 200 491 "" '
    '"containerd/1.6.20"',
    f'10.89.0.7 - - [25/Nov/2026:22:53:35 +0000] "HEAD /v2/lab/preheat-test/blobs/{BLOB} HTTP/1.1" 200 0 '
    '"" "x"',
    '10.89.0.7 - - [25/Nov/2026:22:53:35 +0000] "GET /v2/lab/preheat-test/manifests/v1 HTTP/1.1" 200 900 '
    '"" "x"',
    f'10.89.0.8 - - [25/Nov/2026:22:53:36 +0000] "GET /v2/lab/other/blobs/{BLOB} HTTP/1.1" 404 90 "" "x"',
    'time="2026-11-25T22:53:30Z" level=info msg="listening on [::]:5000" go.version=go1.19.8',
]


def test_access_log_lines_parse_with_client_method_uri_status() -> None:
    entry = registry.parse_line(LOG[0])
    assert entry == registry.Request(registry.ACCESS, "10.89.0.1", "GET",
                                     f"/v2/lab/preheat-test/blobs/{BLOB}", 200)
    app = registry.parse_line(LOG[1])
    assert app == registry.Request(registry.APP, "10.89.0.1", "GET", entry.uri, 200)
    assert registry.parse_line(LOG[-1]) is None
    assert registry.parse_line("garbage") is None


def test_blob_gets_count_successful_downloads_per_client_once() -> None:
    assert registry.blob_gets(LOG) == {"10.89.0.1": 1, "10.89.0.7": 1}
    assert registry.blob_gets(LOG, source=registry.APP) == {"10.89.0.1": 1}
    assert registry.blob_gets(LOG, statuses=(200, 404)) == {"10.89.0.1": 1, "10.89.0.7": 1, "10.89.0.8": 1}
