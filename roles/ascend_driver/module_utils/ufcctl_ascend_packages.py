"""roles/ascend_driver's packages on a node: the failure that fails the node, the installers' lock, and
each package fetched from the artifact mirror and verified against its sha256 (given, or listed in the
mirror's checksum file) before an installer runs it.

Node-side (ansible.module_utils.ufcctl_ascend_packages, shipped with ufc_ascend_driver): standard library
and ansible.module_utils only, the node's python3.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import tempfile
import time

from ansible.module_utils.ufcctl_files import replace
from ansible.module_utils.ufcctl_packages import checksum_from_file
from ansible.module_utils.urls import fetch_url

CHUNK = 1024 * 1024


class Failure(Exception):
    """The node fails; the message is the task's msg (its first line becomes the rollout's reason)."""

    def __init__(self, msg, **extra):
        super().__init__(msg)
        self.msg = msg
        self.extra = extra


def lock(path, limit, sleep=time.sleep, clock=time.monotonic):
    """An open file descriptor holding an exclusive flock on `path`, waiting up to `limit` s."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    deadline = clock() + limit
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
        if clock() >= deadline:
            os.close(fd)
            raise Failure(f"an installer still holds {path} after {limit} s")
        sleep(0.5)


class Packages:
    """Node's fetch and verify steps (ufc_ascend_driver.Node): `module`, its params `p`."""

    def base_url(self):
        return self.p["artifact_url"].rstrip("/")

    def fetch(self, url, dest_fd=None):
        """GET url: its body as text, or streamed into dest_fd (returning its sha256)."""
        response, info = fetch_url(self.module, url, timeout=60)
        if response is None or info.get("status") != 200:
            raise Failure(f"download of {url} failed: HTTP {info.get('status')} {info.get('msg', '')}")
        if dest_fd is None:
            return response.read().decode("utf-8", "replace")
        digest = hashlib.sha256()
        while True:
            block = response.read(CHUNK)
            if not block:
                return digest.hexdigest()
            digest.update(block)
            os.write(dest_fd, block)

    def expected_sums(self, packages):
        """package -> (sha256, where it came from)."""
        sums, listed = {}, None
        checksum_url = f"{self.base_url()}/{self.p['checksum_file']}"
        for package in packages:
            if package in self.p["checksums"]:
                given = str(self.p["checksums"][package])
                sums[package] = (given.lower(), "sha256 " + given)
                continue
            if listed is None:
                listed = self.fetch(checksum_url)
            found = checksum_from_file(listed, package)
            if not found:
                raise Failure(f"no sha256 for {package} in {checksum_url}")
            sums[package] = (found, "sha256 listed in " + checksum_url)
        return sums

    def download(self, package, sha256):
        """The package's verified path in the download dir; a verified file there is not fetched again."""
        directory = self.p["download_dir"]
        os.makedirs(directory, mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)
        dest = os.path.join(directory, package)
        if os.path.isfile(dest) and self.module.sha256(dest) == sha256:
            os.chmod(dest, 0o700)
            return dest
        url = f"{self.base_url()}/{package}"
        fd, tmp = tempfile.mkstemp(prefix=f".{package}.", dir=directory)
        try:
            got = self.fetch(url, fd)
            os.close(fd)
            fd = -1
            if got != sha256:
                raise Failure(f"checksum mismatch for {url}: sha256 {got}, expected {sha256}")
            os.chmod(tmp, 0o700)
            replace(tmp, dest)
        finally:
            if fd >= 0:
                os.close(fd)
            if os.path.exists(tmp):
                os.unlink(tmp)
        return dest
