"""kube-proxy's lab image (tests/lab_build): the ELF reader, the closure of Debian files it selects, the
.deb cache and apt's errors, and the image's layer (symlinks, the binary's path, digests)."""

from __future__ import annotations

import gzip
import hashlib
import io
import shutil
import struct
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.lab_build import debs, images, netfilter
from tests.lab_build.debs import Entry
from tests.lab_build.elf import ElfError, read_elf

LIB = "/usr/lib/x86_64-linux-gnu"
SLIB = "/lib/x86_64-linux-gnu"
LOADER = "/lib64/ld-linux-x86-64.so.2"


def make_elf(needed: tuple[str, ...] = (), interpreter: str | None = None,
             soname: str | None = None) -> bytes:
    """A minimal ELF64 little-endian file: PT_LOAD over the whole file (vaddr = offset + 0x400000, so the
    reader must map the string table's address), PT_INTERP, PT_DYNAMIC with DT_NEEDED/DT_SONAME."""
    vbase = 0x400000
    strtab = b"\0"
    offsets = {}
    for name in (*needed, *([soname] if soname else [])):
        offsets[name] = len(strtab)
        strtab += name.encode() + b"\0"
    interp = (interpreter.encode() + b"\0") if interpreter else b""
    phnum = 3 if interpreter else 2
    header_size, ph_size = 64, 56
    interp_off = header_size + phnum * ph_size
    strtab_off = interp_off + len(interp)
    dyn = [(1, offsets[n]) for n in needed] + ([(14, offsets[soname])] if soname else [])
    dyn += [(5, vbase + strtab_off), (0, 0)]
    dyn_off = strtab_off + len(strtab)
    dyn_bytes = b"".join(struct.pack("<qQ", t, v) for t, v in dyn)
    total = dyn_off + len(dyn_bytes)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, header_size, 0, 0, header_size, ph_size,
                                 phnum, 64, 0, 0)
    phdrs = struct.pack("<IIQQQQQQ", 1, 5, 0, vbase, vbase, total, total, 0x1000)
    if interpreter:
        phdrs += struct.pack("<IIQQQQQQ", 3, 4, interp_off, vbase + interp_off, 0, len(interp), len(interp),
                             1)
    phdrs += struct.pack("<IIQQQQQQ", 2, 6, dyn_off, vbase + dyn_off, 0, len(dyn_bytes), len(dyn_bytes), 8)
    return header + phdrs + interp + strtab + dyn_bytes


def test_the_reader_finds_the_interpreter_and_the_needed_libraries_through_the_loaded_segment() -> None:
    elf = read_elf(make_elf(("libxtables.so.12", "libc.so.6"), LOADER))
    assert elf.interpreter == LOADER and elf.needed == ("libxtables.so.12", "libc.so.6")
    assert read_elf(make_elf(("libc.so.6",), soname="libxtables.so.12")).soname == "libxtables.so.12"
    with pytest.raises(ElfError, match="not an ELF"):
        read_elf(b"#!/bin/sh\n")
    with pytest.raises(ElfError, match="64-bit little-endian"):
        read_elf(b"\x7fELF\x01\x01" + bytes(58))


def _file(data: bytes, mode: int = 0o755) -> Entry:
    return Entry(data, mode)


def _link(target: str) -> Entry:
    return Entry(None, 0o777, target)


def _packages() -> dict[str, dict[str, Entry]]:
    program = make_elf(("libxtables.so.12", "libc.so.6"), LOADER)
    return {
        "iptables": {
            "/usr/sbin/xtables-nft-multi": _file(program),
            "/usr/sbin/xtables-legacy-multi": _file(program),
            "/usr/sbin/iptables-nft": _link("xtables-nft-multi"),
            "/usr/sbin/iptables-legacy-save": _link("xtables-legacy-multi"),
            "/usr/bin/iptables-xml": _link("../sbin/xtables-legacy-multi"),
            "/usr/sbin/iptables-apply": _file(b"#!/bin/bash\n"),     # a script: no shell in the image
            "/usr/sbin/ip6tables-apply": _link("iptables-apply"),
            f"{LIB}/xtables/libxt_statistic.so": _file(make_elf(("libxtables.so.12", "libm.so.6")), 0o644),
            "/usr/share/doc/iptables/copyright": _file(b"text", 0o644),
        },
        "libxtables12": {
            f"{LIB}/libxtables.so.12": _link("libxtables.so.12.7.0"),
            f"{LIB}/libxtables.so.12.7.0": _file(make_elf(("libc.so.6",), soname="libxtables.so.12"), 0o644),
        },
        "libc6": {
            f"{SLIB}/libc.so.6": _file(make_elf(("ld-linux-x86-64.so.2",), LOADER, "libc.so.6")),
            f"{SLIB}/libm.so.6": _file(make_elf(("libc.so.6",), soname="libm.so.6"), 0o644),
            f"{SLIB}/libnsl.so.1": _file(make_elf(("libc.so.6",), soname="libnsl.so.1"), 0o644),
            f"{SLIB}/ld-linux-x86-64.so.2": _file(make_elf(soname="ld-linux-x86-64.so.2")),
            LOADER: _link(f"{SLIB}/ld-linux-x86-64.so.2"),   # absolute, as libc6 ships it
        },
    }


def test_the_image_gets_the_programs_their_plugins_and_exactly_the_libraries_they_load() -> None:
    chosen = netfilter.select(_packages())
    assert set(chosen) == {
        "/usr/sbin/xtables-nft-multi", "/usr/sbin/xtables-legacy-multi", "/usr/sbin/iptables-nft",
        "/usr/sbin/iptables-legacy-save", "/usr/bin/iptables-xml", f"{LIB}/xtables/libxt_statistic.so",
        f"{LIB}/libxtables.so.12", f"{LIB}/libxtables.so.12.7.0", f"{SLIB}/libc.so.6", f"{SLIB}/libm.so.6",
        f"{SLIB}/ld-linux-x86-64.so.2", LOADER,
        # the commands kube-proxy runs, on the nft backend
        *(f"/usr/sbin/{name}" for name in netfilter.BACKEND_COMMANDS),
    }  # no script, no doc, no libnsl (nothing needs it)
    assert chosen["/usr/sbin/iptables"].target == "xtables-nft-multi"
    assert chosen["/usr/sbin/ip6tables-restore"].target == "xtables-nft-multi"


def test_a_library_no_package_holds_fails_naming_it_and_who_needs_it() -> None:
    packages = _packages()
    del packages["libc6"][f"{SLIB}/libm.so.6"]
    with pytest.raises(netfilter.NetfilterError,
                       match=rf"holds libm.so.6 \(needed by {LIB}/xtables/libxt_statistic.so\).*add the "):
        netfilter.select(packages)


def test_a_package_that_gives_the_image_nothing_fails_so_the_list_stays_minimal() -> None:
    packages = {**_packages(), "libgcc-s1": {f"{SLIB}/libgcc_s.so.1": _file(make_elf(("libc.so.6",)))}}
    with pytest.raises(netfilter.NetfilterError, match="libgcc-s1 gives kube-proxy's image no file"):
        netfilter.select(packages)


def test_the_kube_proxy_image_holds_the_binary_and_the_userspace_with_its_symlinks() -> None:
    userspace = netfilter.Userspace(netfilter.select(_packages()))
    image = images.kube_proxy_image(b"\x7fELF proxy", "v1.34.4", userspace.layer_files)
    assert image.reference == "registry.k8s.io/kube-proxy:v1.34.4"
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(image.layers[0]))) as tar:
        assert tar.extractfile("usr/local/bin/kube-proxy").read() == b"\x7fELF proxy"
        link = tar.getmember("usr/sbin/iptables-save")
        assert link.issym() and link.linkname == "xtables-nft-multi"
        assert tar.getmember("lib64/ld-linux-x86-64.so.2").linkname == f"{SLIB}/ld-linux-x86-64.so.2"
        assert tar.getmember("lib64").isdir() and {m.mtime for m in tar.getmembers()} == {0}
    again = images.kube_proxy_image(b"\x7fELF proxy", "v1.34.4", userspace.layer_files)
    assert again.digest == image.digest  # same files, same digest


def test_kube_proxy_without_iptables_is_refused() -> None:
    with pytest.raises(ValueError, match="needs the iptables userspace"):
        images.kubernetes_images({"kube-proxy": b"p"}, "v1.34.4")
    with pytest.raises(ValueError, match="needs the iptables userspace"):
        images.kube_proxy_image(b"p", "v1.34.4", {})


# ---- the .deb cache, with a fake apt on PATH -----------------------------------------------------------

def _deb(tmp_path: Path) -> bytes:
    """A real .deb (dpkg-deb --build) holding a program and a symlink to it."""
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed (the lab needs a Debian machine)")
    root = tmp_path / "pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text("Package: fake\nVersion: 1:1.0-1\nArchitecture: amd64\n"
                                             "Maintainer: t <t@example.org>\nDescription: test\n")
    (root / "usr" / "sbin").mkdir(parents=True)
    (root / "usr" / "sbin" / "prog").write_bytes(b"\x7fELF prog")
    (root / "usr" / "sbin" / "prog").chmod(0o755)
    (root / "usr" / "sbin" / "alias").symlink_to("prog")
    out = tmp_path / "fake.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(out)], check=True,
                   capture_output=True)
    return out.read_bytes()


def _fake_apt(tmp_path: Path, deb: bytes, sha256: str | None = None, fail: bool = False) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "fake.bytes").write_bytes(deb)
    log = tmp_path / "apt.log"
    digest = sha256 or hashlib.sha256(deb).hexdigest()
    (bin_dir / "apt-cache").write_text(
        "#!/bin/sh\n"
        f'[ "$3" = fake ] || {{ echo "E: No packages found" >&2; exit 100; }}\n'
        f"printf 'Package: fake\\nVersion: 1:1.0-1\\nArchitecture: amd64\\nSHA256: {digest}\\n\\n'\n")
    (bin_dir / "apt-get").write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {log}\n'
        + ('echo "E: Failed to fetch http://deb.debian.org/... 404  Not Found" >&2; exit 100\n' if fail else
           f"cp {tmp_path / 'fake.bytes'} ./fake_1%3a1.0-1_amd64.deb\n"))
    for tool in ("apt-cache", "apt-get"):
        (bin_dir / tool).chmod(0o755)
    return log


def test_a_second_fetch_downloads_nothing_and_the_package_unpacks_with_its_symlinks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deb = _deb(tmp_path)
    log = _fake_apt(tmp_path, deb)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{__import__('os').environ['PATH']}")
    cache = tmp_path / "cache"
    first = debs.fetch("fake", cache, say=lambda _: None)
    assert first.path == cache / "fake_1%3a1.0-1_amd64.deb" and first.version == "1:1.0-1"
    assert first.record == {"package": "fake", "version": "1:1.0-1", "arch": "amd64",
                            "sha256": hashlib.sha256(deb).hexdigest()}
    assert debs.fetch("fake", cache, say=lambda _: None) == first
    assert log.read_text().splitlines() == ["download fake=1:1.0-1"]  # once
    files = debs.unpack(first)
    assert files["/usr/sbin/prog"] == Entry(b"\x7fELF prog", 0o755)
    assert files["/usr/sbin/alias"].target == "prog"


def test_apt_errors_name_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deb = _deb(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{__import__('os').environ['PATH']}")
    _fake_apt(tmp_path, deb, fail=True)
    with pytest.raises(debs.DebError,
                       match=r"apt could not fetch fake 1:1.0-1: E: Failed to fetch .*apt-get update"):
        debs.fetch("fake", tmp_path / "cache", say=lambda _: None)
    with pytest.raises(debs.DebError, match="apt knows no package nosuch"):
        debs.fetch("nosuch", tmp_path / "cache", say=lambda _: None)
    _fake_apt(tmp_path, deb, sha256="0" * 64)
    with pytest.raises(debs.DebError, match="fake 1:1.0-1: the downloaded file's sha256 is not"):
        debs.fetch("fake", tmp_path / "cache", say=lambda _: None)
    assert not list((tmp_path / "cache").glob("*.deb"))  # nothing half-written in the cache
