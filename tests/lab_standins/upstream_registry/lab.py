"""LAB UPSTREAM REGISTRY in a running lab: one call starts it in a container and pushes the test image."""

from __future__ import annotations

from tests.lab_standins.upstream_registry import registry
from tests.lab_standins.upstream_registry.image import (
    DEFAULT_LAYER_BYTES,
    DEFAULT_LAYERS,
    TestImage,
    build_image,
)
from tests.lab_standins.upstream_registry.push import PushResult, push_image

DEFAULT_NAME = "lab/preheat-test"
DEFAULT_TAG = "v1"


def serve_test_image(container: str, address: str, *, port: int = registry.DEFAULT_PORT,
                     name: str = DEFAULT_NAME, tag: str = DEFAULT_TAG, seed: int = 1,
                     layers: int = DEFAULT_LAYERS, layer_bytes: int = DEFAULT_LAYER_BYTES,
                     podman: str = "podman") -> tuple[PushResult, TestImage]:
    """Start docker-registry in `container` (podman exec) on `port` unless it runs (waiting for
    http://address:port/v2/ from this host), build the seeded test image and push it there. The
    pushed reference is `<address>:<port>/<name>:<tag>`;
    `registry.blob_gets(registry.read_log(container))` counts blob downloads per client afterwards."""
    registry.ensure_running(container, address, port, podman=podman)
    base = f"http://{address}:{port}"
    image = build_image(seed=seed, layers=layers, layer_bytes=layer_bytes)
    return push_image(base, name, tag, image), image
