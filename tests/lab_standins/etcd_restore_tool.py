"""The lab's etcd restore tool: Debian 13's real `etcdutl` (etcd-server 3.5.x), put on the lab mirror.

Not an emulator. The lab installs Debian 12's etcd 3.4.23, which has no `etcdutl` and whose `etcdctl
snapshot restore` has no `--bump-revision` / `--mark-compacted` (added in 3.4.27 / 3.5.10), so
`ufcctl etcd restore` would refuse it, as it should on a real cluster. A production cluster installs
etcd from the release tarball (roles/etcd's default), whose etcdutl the restore uses; the lab gives
the role `etcd_restore_tool_url` instead, as an operator of a packaged etcd would.

Where it comes from: the etcd-server package of Debian's stable release after bookworm (trixie),
found in that suite's package index on deb.debian.org (HTTPS), checked against the sha256 the index
gives, and unpacked in Python (a .deb is an ar archive holding data.tar.*). etcd 3.5.16's etcdutl
restores the snapshots 3.4.23 takes, and 3.4.23 serves the data directory it writes (checked by the
lab restore drill, tests/integration/test_etcd_lab.py). It is cached under ~/.cache/ufcctl-lab.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import re
import tarfile
import urllib.request
from pathlib import Path

MIRROR = "https://deb.debian.org/debian"
SUITE = "trixie"
INDEX = f"{MIRROR}/dists/{SUITE}/main/binary-amd64/Packages.xz"
PACKAGE = "etcd-server"
MEMBER = "./usr/bin/etcdutl"
CACHE = Path.home() / ".cache" / "ufcctl-lab"
MIN_VERSION = (3, 5, 10)  # the first 3.5 with --bump-revision and --mark-compacted


def _get(url: str, timeout: float = 120) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as answer:  # noqa: S310 - a fixed https URL
        return bytes(answer.read())


def package_entry(index_text: str, package: str = PACKAGE) -> dict[str, str]:
    """The index stanza of `package` (Filename, SHA256, Version, ...)."""
    for stanza in index_text.split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z0-9-]+): (.*)$", stanza, re.M))
        if fields.get("Package") == package:
            return fields
    raise LookupError(f"{package} is not in {INDEX}")


def ar_member(deb: bytes, prefix: str) -> tuple[str, bytes]:
    """The first member of an ar archive whose name starts with `prefix`."""
    if not deb.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive (.deb)")
    at = 8
    while at + 60 <= len(deb):
        header = deb[at:at + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        body = deb[at + 60:at + 60 + size]
        if name.startswith(prefix):
            return name, body
        at += 60 + size + (size % 2)
    raise LookupError(f"no {prefix}* member in the .deb")


def etcdutl_from_deb(deb: bytes) -> bytes:
    _, data = ar_member(deb, "data.tar")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        member = tar.extractfile(MEMBER)
        if member is None:
            raise LookupError(f"{MEMBER} is not in the package")
        return member.read()


def fetch(cache: Path = CACHE) -> tuple[str, bytes]:
    """(etcd version, etcdutl binary), from the cache or from Debian."""
    cached = sorted(cache.glob("etcdutl-*"))
    if cached:
        return cached[-1].name.removeprefix("etcdutl-"), cached[-1].read_bytes()
    entry = package_entry(lzma.decompress(_get(INDEX)).decode("utf-8", "replace"))
    version = entry["Version"].split("-")[0].split(":")[-1]
    if tuple(int(p) for p in version.split(".")[:3]) < MIN_VERSION:
        raise LookupError(f"{SUITE}'s {PACKAGE} is {version}: its etcdutl has no --bump-revision")
    deb = _get(f"{MIRROR}/{entry['Filename']}")
    if hashlib.sha256(deb).hexdigest() != entry["SHA256"]:
        raise ValueError(f"{entry['Filename']}: sha256 differs from {INDEX}")
    binary = etcdutl_from_deb(deb)
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / f"etcdutl-{version}"
    target.with_suffix(".part").write_bytes(binary)
    target.with_suffix(".part").replace(target)
    return version, binary


def build(root: Path, cache: Path = CACHE) -> dict[str, str]:
    """<root>/etcd/v<version>/etcdutl and its .sha256; returns the inventory vars pointing at them,
    relative to the mirror's root URL (`{{ ufc_artifact_url }}` is prefixed by lab_vars)."""
    version, binary = fetch(cache)
    directory = root / "etcd" / f"v{version}"
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(binary).hexdigest()
    target = directory / "etcdutl"
    if not target.is_file() or hashlib.sha256(target.read_bytes()).hexdigest() != digest:
        target.write_bytes(binary)
        target.chmod(0o755)
    (directory / "etcdutl.sha256").write_text(f"{digest}\n")
    return {"path": f"etcd/v{version}/etcdutl", "sha256": digest}


def lab_vars(mirror_root: str, built: dict[str, str]) -> dict[str, str]:
    """Every host's vars for roles/etcd's restore: the mirror's etcdutl and its sha256."""
    return {"etcd_restore_tool_url": f"{mirror_root.rstrip('/')}/{built['path']}",
            "etcd_restore_tool_sha256": built["sha256"]}
