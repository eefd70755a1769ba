"""Pure helpers of `ufcctl images preheat`: image references and the upstream traffic a preheat is
expected to cause.

A node pulls through its mirrors in order (ToR cache, then super pod cache, then upstream; which
cache serves which node is `mirrors.caches_for`). Each cache instance fetches from its upstream
itself, so a preheat pulls an image from upstream once per cache that serves at least one target
node, or once per node for an image whose registry has no cache.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ufcctl.domain.images.mirrors import Upstream

DOCKER_HUB = "docker.io"

# The distribution reference grammar, as far as ctr takes it: a registry host[:port], a path of
# lowercase components, then :tag and/or @sha256:<64 hex>.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"sha256:[0-9a-f]{64}"
_REF = re.compile(rf"^(?P<name>{_COMPONENT}(?:/{_COMPONENT})*)"
                  rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?$")
_HOST_RE = re.compile(rf"^{_HOST}$")
MAX_REF = 255


@dataclass(frozen=True)
class ImageRef:
    registry: str  # host[:port] as containerd names its certs.d directory
    repository: str  # e.g. library/busybox
    tag: str | None
    digest: str | None

    @property
    def reference(self) -> str:
        """What the registry API takes after /manifests/: the digest when pinned, else the tag."""
        return self.digest or self.tag or "latest"

    def __str__(self) -> str:
        """The fully qualified name ctr wants (ctr does not add docker.io/library/ itself)."""
        tag = f":{self.tag}" if self.tag or not self.digest else ""
        if not self.digest and not self.tag:
            tag = ":latest"
        return f"{self.registry}/{self.repository}{tag}{'@' + self.digest if self.digest else ''}"


def parse_image(text: str) -> ImageRef:
    """An image reference as `docker pull` takes it; ValueError says what is wrong."""
    if not text or len(text) > MAX_REF or text != text.strip():
        raise ValueError("not an image reference (empty, blanks, or over 255 characters)")
    first, sep, rest = text.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
        if not _HOST_RE.match(first):
            raise ValueError(f"registry {first!r} is not a host[:port]")
        port = first.rpartition(":")[2] if not first.endswith("]") and ":" in first else ""
        if port and not 0 < int(port[:6]) < 65536:
            raise ValueError(f"registry {first!r}: port {port[:6]} is not 1-65535")
        registry, path = first, rest
    else:
        registry, path = DOCKER_HUB, text
    match = _REF.match(path)
    if not match:
        raise ValueError("expected [registry/]name[:tag][@sha256:<64 hex>] with a lowercase name")
    name = match["name"]
    if registry == DOCKER_HUB and "/" not in name:
        name = f"library/{name}"
    return ImageRef(registry, name, match["tag"], match["digest"])


def upstream_for(image: ImageRef, known: Iterable[Upstream]) -> Upstream | None:
    return next((u for u in known if u.registry == image.registry), None)


def upstream_url(image: ImageRef, upstream: Upstream | None) -> str:
    """Where the controller reads the image's manifest from (Docker Hub's API host for docker.io)."""
    if upstream is not None:
        return upstream.url
    return "https://registry-1.docker.io" if image.registry == DOCKER_HUB else f"https://{image.registry}"


@dataclass(frozen=True)
class Traffic:
    image: str
    size: int | None  # bytes of config + layers (one platform); None: unknown
    pulls: int  # fetches from upstream: caches serving a target, or target nodes without a cache
    via: str  # "caches" or "nodes"

    @property
    def total(self) -> int | None:
        return None if self.size is None else self.size * self.pulls


def traffic(image: str, size: int | None, cached: bool, caches: int, nodes: int) -> Traffic:
    if cached and caches:
        return Traffic(image, size, caches, "caches")
    return Traffic(image, size, nodes, "nodes")
