"""The iptables and conntrack userspace of the lab's kube-proxy image, taken from Debian 12's packages.

kube-proxy in iptables mode runs `iptables`, `iptables-save`, `iptables-restore` and their ip6tables twins
(k8s.io/kubernetes pkg/util/iptables/iptables.go at v1.34.4); upstream's image carries them on its
distroless-iptables base. Here: the programs of the `iptables` and `conntrack` packages, iptables' match and
target plugins (dlopen'ed, so no DT_NEEDED names them), and every file the loader needs for them, found by
reading PT_INTERP and DT_NEEDED (tests/lab_build/elf.py) through the loader's search path, not guessed.
A library the closure needs that none of PACKAGES holds fails the build, naming it and who needs it; a
package that gives the closure nothing fails it too, so the list stays what the programs use.

The backend: `iptables` and friends are the nft ones (xtables-nft-multi). Upstream's iptables-wrapper
decides at kube-proxy's first call: nft when the kubelet's KUBE-IPTABLES-HINT or KUBE-KUBELET-CANARY chain
is in iptables-nft's mangle table, legacy when it is in iptables-legacy's rules, else nft
(kubernetes-sigs/iptables-wrappers pkg/xtables/detect.go DetectMode). In the lab that is always nft: lab
nodes are Debian 12 containers whose `iptables` is Debian's default alternative, iptables-nft (priority 20
over iptables-legacy's 10), so the kubelet makes its hint chain with nft, and nothing in a node uses the
legacy tables (docs/reference/real-kubernetes.md §3). The legacy programs are in the image too, under
their own names (iptables-legacy, ...), for a look at a host that uses them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tests.lab_build import debs
from tests.lab_build.debs import Deb, Entry
from tests.lab_build.elf import is_elf, read_elf
from tests.lab_build.images import Symlink

# Debian 12 packages; each must give the closure at least one file
PACKAGES: tuple[str, ...] = (
    "iptables",                 # xtables-nft-multi, xtables-legacy-multi, their names, the xtables plugins
    "conntrack",                # conntrack(8), for an operator in the pod (kube-proxy 1.34 uses netlink)
    "libxtables12", "libip4tc2", "libip6tc2",      # iptables' own libraries (legacy: ip4tc, ip6tc)
    "libnftnl11", "libmnl0",                       # the nft backend's netlink
    "libnetfilter-conntrack3", "libnfnetlink0",    # conntrack(8) and the xt_conntrack helpers
    "libc6",                                       # glibc and the loader
)
PROGRAM_PACKAGES = ("iptables", "conntrack")
PROGRAM_DIRS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
BACKEND = "nft"
# the commands kube-proxy runs, pointed at the backend's multi-call program
BACKEND_COMMANDS = ("iptables", "iptables-save", "iptables-restore",
                    "ip6tables", "ip6tables-save", "ip6tables-restore")
TRIPLETS = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}


class NetfilterError(Exception):
    """The userspace cannot be put together; the message names the library, package or program."""


@dataclass(frozen=True)
class Userspace:
    files: dict[str, Entry]            # absolute path -> file or symlink, as the image holds it
    packages: tuple[Deb, ...] = field(default=())

    @property
    def layer_files(self) -> dict[str, tuple[bytes, int] | Symlink]:
        """The files as tests/lab_build/images.py lays them in a layer."""
        return {path: Symlink(e.target) if e.target is not None else (e.data or b"", e.mode)
                for path, e in self.files.items()}

    @property
    def record(self) -> dict:
        return {"backend": BACKEND, "files": len(self.files),
                "bytes": sum(len(e.data) for e in self.files.values() if e.data is not None),
                "packages": [d.record for d in self.packages]}


def search_path(arch: str) -> tuple[str, ...]:
    """Debian's glibc loader's system search path (`ld.so --help`: /lib/<triplet>, /usr/lib/<triplet>,
    /lib, /usr/lib); the image has no /etc/ld.so.cache."""
    triplet = TRIPLETS.get(arch)
    if triplet is None:
        raise NetfilterError(f"no Debian triplet known for {arch}: choose from {', '.join(TRIPLETS)}")
    return (f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib", "/usr/lib")


def _resolve(path: str, files: Mapping[str, Entry]) -> list[str]:
    """`path` and every symlink it goes through, ending at a regular file; [] when it leads nowhere."""
    chain = []
    for _ in range(40):
        entry = files.get(path)
        if entry is None:
            return []
        chain.append(path)
        if entry.target is None:
            return chain
        target = entry.target
        path = posixpath.normpath(target if target.startswith("/") else
                                  posixpath.join(posixpath.dirname(path), target))
    return []


def select(unpacked: Mapping[str, Mapping[str, Entry]], arch: str = "amd64") -> dict[str, Entry]:
    """The image's files from each package's unpacked files (package -> path -> Entry)."""
    everything: dict[str, Entry] = {}
    owner: dict[str, str] = {}
    for package, files in unpacked.items():
        for path, entry in files.items():
            everything[path], owner[path] = entry, package
    chosen: dict[str, Entry] = {}
    queue: list[str] = []

    def take(chain: list[str]) -> None:
        for link in chain:
            if link not in chosen:
                chosen[link] = everything[link]
                if everything[link].target is None:
                    queue.append(link)

    plugins = f"/usr/lib/{TRIPLETS[arch]}/xtables/"
    for path in sorted(everything):
        if owner[path] not in PROGRAM_PACKAGES:
            continue
        if posixpath.dirname(path) in PROGRAM_DIRS or path.startswith(plugins):
            chain = _resolve(path, everything)
            data = everything[chain[-1]].data if chain else None
            if data is not None and is_elf(data):  # scripts (iptables-apply) need a shell: left out
                take(chain)
    for name in BACKEND_COMMANDS:
        chosen[f"/usr/sbin/{name}"] = Entry(None, 0o777, f"xtables-{BACKEND}-multi")
    dirs = search_path(arch)
    missing: list[str] = []
    while queue:
        path = queue.pop()
        data = chosen[path].data
        if data is None or not is_elf(data):
            continue
        elf = read_elf(data)
        for name in ([elf.interpreter] if elf.interpreter else []) + list(elf.needed):
            # a name with a slash is a path (the interpreter); a bare soname is looked up as the loader does
            candidates = [name] if "/" in name else [f"{d}/{name}" for d in dirs]
            chain = next((c for c in (_resolve(p, everything) for p in candidates) if c), [])
            if not chain:
                missing.append(f"{name} (needed by {path})")
            take(chain)
    if missing:
        raise NetfilterError(f"no package of PACKAGES holds {', '.join(sorted(set(missing))[:4])}: add the "
                             "Debian package that does (`dpkg -S`) to tests/lab_build/netfilter.py PACKAGES")
    unused = sorted(set(unpacked) - {owner[p] for p in chosen if p in owner})
    if unused:
        raise NetfilterError(f"{', '.join(unused)} gives kube-proxy's image no file: drop it from "
                             "tests/lab_build/netfilter.py PACKAGES")
    return chosen


def kube_proxy_userspace(arch: str = "amd64", root=None, say: Callable[[str], None] = print) -> Userspace:
    """Fetch (or find cached) PACKAGES and select the image's files from them."""
    fetched = tuple(debs.fetch(package, root, say) for package in PACKAGES)
    wrong = [f"{d.package} ({d.arch})" for d in fetched if d.arch not in (arch, "all")]
    if wrong:
        raise NetfilterError(f"apt gives {', '.join(wrong)} for an {arch} image: build the image on an "
                             f"{arch} machine")
    return Userspace(select({d.package: debs.unpack(d) for d in fetched}, arch), fetched)
