"""Debian packages fetched with this machine's apt and unpacked in Python, for files an image of the lab needs
beside a built binary (kube-proxy's iptables: tests/lab_build/netfilter.py).

Versions are apt's candidates here (Debian 12's lists, `apt-cache show`), not pins of ours: Debian's mirror
keeps only the current version of each package, so a pinned version would stop downloading at the next
point release. What was taken is recorded instead (package, version, sha256), and the .deb files are
kept under ~/.cache/ufcctl-lab/debs (`UFC_LAB_DEB_CACHE` moves it): a second build with the same apt lists
downloads nothing, and each file is checked against the SHA256 apt's lists give.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "UFC_LAB_DEB_CACHE"


class DebError(Exception):
    """A package apt cannot name or fetch; the message names it and what to do."""


@dataclass(frozen=True)
class Deb:
    package: str
    version: str
    arch: str
    sha256: str
    path: Path

    @property
    def record(self) -> dict[str, str]:
        return {"package": self.package, "version": self.version, "arch": self.arch, "sha256": self.sha256}


@dataclass(frozen=True)
class Entry:
    """One file of a package: a regular file's bytes and mode, or a symlink's target (data None)."""

    data: bytes | None
    mode: int = 0o644
    target: str | None = None


def cache_root() -> Path:
    from tests.lab_build.build import lab_cache

    return lab_cache(CACHE_ENV, "debs")


def _apt(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False, timeout=300)
    except FileNotFoundError:
        raise DebError(f"{argv[0]} is not installed: the lab takes kube-proxy's iptables from Debian 12's "
                       "packages with this machine's apt (a Debian machine)") from None


def candidate(package: str) -> dict[str, str]:
    """apt's candidate record of `package` (Version, Architecture, SHA256, Filename)."""
    done = _apt(["apt-cache", "show", "--no-all-versions", package])
    if done.returncode != 0 or not done.stdout.strip():
        reason = (done.stderr.strip().splitlines() or ["no record"])[-1]
        raise DebError(f"apt knows no package {package}: {reason} (run `apt-get update`)")
    fields: dict[str, str] = {}
    for line in done.stdout.split("\n\n")[0].splitlines():
        if line[:1].strip() and ":" in line:
            key, value = line.split(":", 1)
            fields[key] = value.strip()
    missing = [k for k in ("Version", "Architecture", "SHA256") if k not in fields]
    if missing:
        raise DebError(f"apt's record of {package} has no {', '.join(missing)}")
    return fields


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch(package: str, root: Path | None = None, say=print) -> Deb:
    """The candidate .deb of `package`, from the cache or downloaded by `apt-get download` into it."""
    fields = candidate(package)
    version, arch, sha256 = fields["Version"], fields["Architecture"], fields["SHA256"]
    folder = root or cache_root()
    # apt's own file name: the epoch's colon is written %3a
    target = folder / f"{package}_{version.replace(':', '%3a')}_{arch}.deb"
    if target.is_file() and _sha256(target) == sha256:
        return Deb(package, version, arch, sha256, target)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download.", dir=folder) as tmp:
        # apt's download user (_apt) cannot write a root-owned temporary folder: apt then downloads as
        # root and warns; give it the folder
        os.chmod(tmp, 0o777)
        say(f"lab build: apt-get download {package}={version}")
        done = _apt(["apt-get", "download", f"{package}={version}"], cwd=Path(tmp))
        got = [p for p in Path(tmp).iterdir() if p.suffix == ".deb"]
        if done.returncode != 0 or len(got) != 1:
            errors = [line for line in done.stderr.splitlines() if line.startswith("E:")] or \
                done.stderr.strip().splitlines()[-1:] or ["no .deb written"]
            raise DebError(f"apt could not fetch {package} {version}: {errors[-1]} "
                           "(check the machine's apt sources; `apt-get update` if the lists are old)")
        if _sha256(got[0]) != sha256:
            raise DebError(f"{package} {version}: the downloaded file's sha256 is not the one apt's lists "
                           "give")
        got[0].replace(target)
    return Deb(package, version, arch, sha256, target)


def _absolute(name: str) -> str:
    """A data.tar member's name ("./usr/sbin/x") as the path it installs ("/usr/sbin/x")."""
    return "/" + (name[2:] if name.startswith("./") else name).lstrip("/")


def unpack(deb: Deb) -> dict[str, Entry]:
    """Absolute path -> Entry for every file and symlink of the package's data (folders left out)."""
    done = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb.path)], capture_output=True, check=False,
                          timeout=300)
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip()
        raise DebError(f"dpkg-deb could not read {deb.path.name}: {reason}")
    entries: dict[str, Entry] = {}
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        for member in tar:
            path = _absolute(member.name)
            if member.issym():
                entries[path] = Entry(None, 0o777, member.linkname)
            elif member.isfile():
                extracted = tar.extractfile(member)
                assert extracted is not None
                entries[path] = Entry(extracted.read(), member.mode & 0o7777)
            elif member.islnk():  # a hard link: the same bytes under a second name
                entries[path] = entries[_absolute(member.linkname)]
    return entries
