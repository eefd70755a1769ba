"""LAB KUBE EMULATOR: kubeadm 1.34's preflight checks for `init` and `join`, by the names kubeadm prints.

NOT Kubernetes' kubeadm. What the real one checks is in kubernetes/kubernetes cmd/kubeadm/app/preflight
(checks.go, checks_linux.go; read at release-1.31, the names, messages and constants used here checked
again at v1.34.4); the checks this stand-in runs, and those it does not, are listed
in tests/lab_standins/README.md. Every probe of the node (the file system under `Host.root`, PATH, the
listening sockets, the CRI socket, `kubelet --version`, etcd's /version) is a field of `Host`, so unit tests
drive the checks with a fake root directory and injected probes.

Output as kubeadm's: "\t[WARNING Name]: ..." lines on stdout, and on any error the exception
"[preflight] Some fatal errors occurred:" with the error lines and the `--ignore-preflight-errors=...`
hint. Ignored errors (nodeRegistration.ignorePreflightErrors, --ignore-preflight-errors=a,b;
case-insensitive, `all` ignores every check) print as warnings.
Standard library plus python3-yaml of the lab image.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# kubeadm v1.34.4 constants (cmd/kubeadm/app/constants/constants.go): ControlPlaneNumCPU,
# ControlPlaneMem (MB), MinExternalEtcdVersion "3.5.24-0" (3.5.11-0 in 1.31; v1.35.4 has 3.5.24-0 too),
# MinimumKubeletVersion (kubeadm's minor - 3).
MIN_CPUS = 2
MIN_MEM_MB = 1700
MIN_EXTERNAL_ETCD = (3, 5, 24)
MIN_EXTERNAL_ETCD_TEXT = "3.5.24-0"
KUBELET_MINORS_OLDER = 3
SCHEDULER_PORT, CONTROLLER_MANAGER_PORT, KUBELET_PORT = 10259, 10257, 10250
# The LAB KUBE EMULATOR's own apiserver unit (kubeadm.py UNIT): it may hold the apiserver port, because
# init and control-plane join restart it (a real node would need `kubeadm reset` first).
OWN_UNIT = "kube-apiserver"
# checks_linux.go addExecChecks at v1.34.4: a missing one of these fails (`conntrack` only for a Kubernetes
# older than 1.32: kube-proxy no longer needs it in PATH, kubernetes/kubernetes#126952); kubeadm 1.31 also
# required ip, iptables and nsenter and warned without ebtables, ethtool, socat, tc and touch; 1.34
# checks none of those.
REQUIRED_TOOLS = ("losetup", "mount", "cp")
REQUIRED_BEFORE_1_32 = ("conntrack",)
HINT = ("[preflight] If you know what you are doing, you can make a check non-fatal with "
        "`--ignore-preflight-errors=...`")
TCP_LISTEN = "0A"


class PreflightFailed(Exception):
    pass


@dataclass(frozen=True)
class Finding:
    name: str
    message: str
    fatal: bool  # an error; False: a warning


# -- probes of the node --------------------------------------------------------------------------


def _port_free(port: int) -> bool:
    """What kubeadm's PortOpenCheck does: net.Listen("tcp", ":port") (every address, both families)."""
    try:
        if socket.has_dualstack_ipv6():
            server = socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
        else:
            server = socket.create_server(("", port))
    except OSError:
        return False
    server.close()
    return True


def _cri_error(url: str) -> str | None:
    path = url.removeprefix("unix://")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(5)
        try:
            sock.connect(path)
        except OSError as err:
            return f"connect {path}: {err}"
    return None


def _etcd_version(endpoint: str, ca: str, cert: str, key: str) -> str:
    """etcd's /version over TLS with the apiserver's etcd client certificate (ExternalEtcdVersionCheck)."""
    context = ssl.create_default_context(cafile=ca or None)
    if cert and key:
        context.load_cert_chain(cert, key)
    with urllib.request.urlopen(endpoint.rstrip("/") + "/version", context=context, timeout=10) as reply:
        return str(json.loads(reply.read())["etcdserver"])


@dataclass
class Host:
    """The node as preflight sees it; every field can be replaced in tests."""

    root: Path = Path("/")
    path: str = field(default_factory=lambda: os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"))
    euid: Callable[[], int] = os.geteuid
    port_free: Callable[[int], bool] = _port_free
    cri_error: Callable[[str], str | None] = _cri_error
    etcd_version: Callable[[str, str, str, str], str] = _etcd_version
    run: Callable[[Sequence[str]], str] = field(
        default=lambda argv: subprocess.run(list(argv), capture_output=True, text=True, timeout=30,
                                            check=True).stdout)

    def file(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def read(self, path: str) -> str | None:
        try:
            return self.file(path).read_text()
        except OSError:
            return None

    def which(self, name: str) -> str | None:
        dirs = [str(self.file(d)) for d in self.path.split(os.pathsep) if d]
        return shutil.which(name, path=os.pathsep.join(dirs))

    def cpus(self) -> int:
        """CPUs this process may run on (Cpus_allowed_list; Go's runtime.NumCPU reads the same affinity)."""
        for line in (self.read("/proc/self/status") or "").splitlines():
            if line.startswith("Cpus_allowed_list:"):
                count = 0
                for part in line.split(":", 1)[1].strip().split(","):
                    low, _, high = part.partition("-")
                    count += int(high or low) - int(low) + 1
                return count
        return os.cpu_count() or 0

    def mem_mb(self) -> int:
        match = re.search(r"^MemTotal:\s+(\d+) kB", self.read("/proc/meminfo") or "", re.MULTILINE)
        return int(match.group(1)) // 1024 if match else 0

    def _listening(self, port: int) -> set[int]:
        """Socket inodes listening on the port, from /proc/net/tcp and tcp6."""
        inodes: set[int] = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in (self.read(table) or "").splitlines()[1:]:
                fields = line.split()
                listening = len(fields) >= 10 and fields[3] == TCP_LISTEN
                if listening and int(fields[1].split(":")[-1], 16) == port:
                    inodes.add(int(fields[9]))
        return inodes

    def port_holders(self, port: int) -> list[dict[str, Any]]:
        """Processes listening on `port` (as roles/preflight's preflight_probe finds them: /proc/net/tcp*
        inodes, /proc/PID/fd links, the unit from /proc/PID/cgroup); pid None: an inode nobody here holds."""
        inodes = self._listening(port)
        found: dict[int, dict[str, Any]] = {}
        proc = self.file("/proc")
        for pid in sorted((p for p in os.listdir(proc) if p.isdigit()), key=int) if inodes else []:
            try:
                links = [os.readlink(fd) for fd in (proc / pid / "fd").iterdir()]
            except OSError:
                continue
            for inode in inodes - set(found):
                if f"socket:[{inode}]" in links:
                    cgroup = self.read(f"/proc/{pid}/cgroup") or ""
                    unit = next((part.removesuffix(".service") for line in cgroup.splitlines()
                                 for part in reversed(line.rsplit(":", 1)[-1].split("/"))
                                 if part.endswith(".service")), "")
                    comm = (self.read(f"/proc/{pid}/comm") or "").strip()
                    found[inode] = {"pid": int(pid), "program": comm, "unit": unit}
        return [found.get(inode, {"pid": None, "program": "", "unit": ""}) for inode in sorted(inodes)]


# -- the checks ----------------------------------------------------------------------------------


def _version(text: str) -> tuple[int, int, int] | None:
    match = re.search(r"v?(\d+)\.(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def _error(name: str, message: str) -> Finding:
    return Finding(name, message, True)


def _dashed(path: str) -> str:
    return path.replace("/", "-")


def check_root(host: Host) -> list[Finding]:
    return [] if host.euid() == 0 else [Finding("IsPrivilegedUser", "user is not running as root", True)]


def check_resources(host: Host) -> list[Finding]:
    found = []
    cpus, mem = host.cpus(), host.mem_mb()
    if cpus < MIN_CPUS:
        found.append(_error("NumCPU", f"the number of available CPUs {cpus} is less than the required "
                                      f"{MIN_CPUS}"))
    if mem < MIN_MEM_MB:
        found.append(_error("Mem", f"the system RAM ({mem} MB) is less than the minimum {MIN_MEM_MB} MB"))
    return found


def check_port(host: Host, port: int) -> list[Finding]:
    if host.port_free(port):
        return []
    holders = host.port_holders(port)
    if holders and all(h["unit"] == OWN_UNIT for h in holders):
        return []  # the emulator's own apiserver, which init/join restart
    who = ", ".join(f"pid {h['pid']} {h['program']}" + (f" (unit {h['unit']})" if h["unit"] else "")
                    if h["pid"] else "a process this user cannot see" for h in holders)
    return [Finding(f"Port-{port}", f"Port {port} is in use" + (f" by {who}" if who else ""), True)]


def check_file_available(host: Host, path: str) -> list[Finding]:
    if host.file(path).exists():
        return [Finding(f"FileAvailable-{_dashed(path)}", f"{path} already exists", True)]
    return []


def check_cri(host: Host, url: str) -> list[Finding]:
    error = host.cri_error(url)
    return [Finding("CRI", f"container runtime is not running: {error}", True)] if error else []


def check_swap(host: Host) -> list[Finding]:
    if len((host.read("/proc/swaps") or "").strip().splitlines()) > 1:
        return [Finding("Swap", "swap is supported for cgroup v2 only. The kubelet must be properly "
                                "configured to use swap. Please refer to https://kubernetes.io/docs/concepts/"
                                "architecture/nodes/#swap-memory, or disable swap on the node", False)]
    return []


def check_tools(host: Host, kubernetes_version: str = "") -> list[Finding]:
    """`kubernetes_version`: the ClusterConfiguration's for init, "" for join (kubeadm passes none there, so
    conntrack is not checked on a join)."""
    version = _version(kubernetes_version)
    wanted = (*(REQUIRED_BEFORE_1_32 if version is not None and version[:2] < (1, 32) else ()),
              *REQUIRED_TOOLS)
    return [Finding(f"FileExisting-{name}", f"{name} not found in system path", True)
            for name in wanted if host.which(name) is None]


def check_kubelet(host: Host, kubeadm_version: str, control_plane_version: str) -> list[Finding]:
    """Older than kubeadm's minor - 3, or newer than the control plane: an error (KubeletVersionCheck)."""
    kubelet = host.which("kubelet")
    try:
        if kubelet is None:
            raise OSError("executable file not found in $PATH")
        text = host.run([kubelet, "--version"]).strip()
    except (OSError, subprocess.SubprocessError) as err:
        return [Finding("KubeletVersion", f"couldn't get kubelet version: {err}", True)]
    found, ours, plane = _version(text), _version(kubeadm_version), _version(control_plane_version)
    if found is None or ours is None:
        return [Finding("KubeletVersion", f"couldn't parse kubelet version {text!r}", True)]
    kubelet_text, plane_text = ".".join(map(str, found)), control_plane_version.lstrip("v")
    if found[:2] < (ours[0], ours[1] - KUBELET_MINORS_OLDER):
        return [_error("KubeletVersion", f'Kubelet version "v{kubelet_text}" is lower than kubeadm can '
                                         "support. Please upgrade kubelet")]
    if plane is not None and found[:2] > plane[:2]:
        return [_error("KubeletVersion", "the kubelet version is higher than the control plane version. This "
                                         "is not a supported version skew and may lead to a malfunctional "
                                         f'cluster. Kubelet version: "{kubelet_text}" Control plane '
                                         f'version: "{plane_text}"')]
    return []


def check_forwarding(host: Host, address: str) -> list[Finding]:
    """FileContentCheck of the forwarding switch of the address's family (IPv4 for a name or none)."""
    try:
        ipv6 = ipaddress.ip_address(address.strip("[]")).version == 6
    except ValueError:
        ipv6 = False  # a name or nothing: kubeadm's default family
    path = "/proc/sys/net/ipv6/conf/default/forwarding" if ipv6 else "/proc/sys/net/ipv4/ip_forward"
    content = host.read(path)
    if content is None:
        return [Finding(f"FileContent-{_dashed(path)}", f"{path} does not exist", True)]
    if content[:1] != "1":
        return [Finding(f"FileContent-{_dashed(path)}", f"{path} contents are not set to 1", True)]
    return []


def check_external_etcd(host: Host, external: dict[str, Any]) -> list[Finding]:
    found, name = [], "ExternalEtcdVersion"
    for endpoint in external.get("endpoints") or []:
        try:
            text = host.etcd_version(str(endpoint), str(external.get("caFile") or ""),
                                     str(external.get("certFile") or ""), str(external.get("keyFile") or ""))
        except (OSError, ValueError, KeyError, ssl.SSLError) as err:
            found.append(_error(name, f"failed to get the etcd version from {endpoint}/version: {err}"))
            continue
        version = _version(text)
        if version is None:
            found.append(_error(name, f'couldn\'t parse external etcd version "{text}"'))
        elif version < MIN_EXTERNAL_ETCD:
            found.append(_error(name, "this version of kubeadm only supports external etcd version >= "
                                      f"{MIN_EXTERNAL_ETCD_TEXT}. Current version: {text}"))
    return found


def _node_checks(host: Host, registration: dict[str, Any], kubeadm_version: str, control_plane_version: str,
                 address: str, init: bool) -> list[Finding]:
    """What init and every join share (kubeadm's addCommonChecks and the forwarding check; a join passes no
    Kubernetes version to its exec checks)."""
    return [*check_cri(host, str(registration.get("criSocket") or "unix:///run/containerd/containerd.sock")),
            *check_tools(host, control_plane_version if init else ""), *check_swap(host),
            *check_kubelet(host, kubeadm_version, control_plane_version),
            *check_port(host, KUBELET_PORT), *check_forwarding(host, address)]


def _control_plane_checks(host: Host, bind_port: int) -> list[Finding]:
    return [*check_resources(host), *check_port(host, bind_port), *check_port(host, SCHEDULER_PORT),
            *check_port(host, CONTROLLER_MANAGER_PORT)]


def init_checks(host: Host, docs: dict[str, dict[str, Any]], kubeadm_version: str) -> list[Finding]:
    init, cluster = docs.get("InitConfiguration") or {}, docs.get("ClusterConfiguration") or {}
    local = init.get("localAPIEndpoint") or {}
    plane = str(cluster.get("kubernetesVersion") or kubeadm_version)
    external = (cluster.get("etcd") or {}).get("external")
    return [*_control_plane_checks(host, int(local.get("bindPort") or 6443)),
            *_node_checks(host, init.get("nodeRegistration") or {}, kubeadm_version, plane,
                          str(local.get("advertiseAddress") or ""), True),
            *(check_external_etcd(host, external) if external else [])]


def join_checks(host: Host, doc: dict[str, Any], kubeadm_version: str) -> list[Finding]:
    """Every join: kubelet.conf and bootstrap-kubelet.conf absent; a worker's also the cluster CA (kubeadm
    writes it); a control plane's also the init checks of the control-plane ports and resources. The kubelet
    is compared with kubeadm's own version (the control plane's is not known before discovery)."""
    found = [*check_file_available(host, "/etc/kubernetes/kubelet.conf"),
             *check_file_available(host, "/etc/kubernetes/bootstrap-kubelet.conf")]
    control_plane = doc.get("controlPlane")
    if control_plane is None:
        found += check_file_available(host, str(doc.get("caCertPath") or "/etc/kubernetes/pki/ca.crt"))
    else:
        local = control_plane.get("localAPIEndpoint") or {}
        found += _control_plane_checks(host, int(local.get("bindPort") or 6443))
    endpoint = str(((doc.get("discovery") or {}).get("bootstrapToken") or {}).get("apiServerEndpoint") or "")
    return found + _node_checks(host, doc.get("nodeRegistration") or {}, kubeadm_version, kubeadm_version,
                                endpoint.rsplit(":", 1)[0], False)


# -- ignoring, reporting -------------------------------------------------------------------------


def ignored_names(from_config: Sequence[Any], argv: Sequence[str]) -> set[str]:
    """kubeadm's ValidateIgnorePreflightErrors: both sources, lower-cased; `all` must stand alone."""
    names = {str(n).strip().lower() for n in from_config if str(n).strip()}
    for i, arg in enumerate(argv):
        value = None
        if arg.startswith("--ignore-preflight-errors="):
            value = arg.split("=", 1)[1]
        elif arg == "--ignore-preflight-errors" and i + 1 < len(argv):
            value = argv[i + 1]
        if value is not None:
            names |= {n.strip().lower() for n in value.split(",") if n.strip()}
    if "all" in names and len(names) > 1:
        raise ValueError(f'ignore-preflight-errors: Invalid value: "{",".join(sorted(names))}": '
                         "don't specify individual checks if 'all' is used")
    return names


def report(findings: Sequence[Finding], ignore: set[str]) -> tuple[list[str], list[str]]:
    """(warning lines, error lines) as kubeadm prints them; ignored errors become warnings."""
    warnings, errors = [], []
    for item in findings:
        if item.fatal and "all" not in ignore and item.name.lower() not in ignore:
            errors.append(f"\t[ERROR {item.name}]: {item.message}")
        else:
            warnings.append(f"\t[WARNING {item.name}]: {item.message}")
    return warnings, errors


def _load(config: str) -> dict[str, dict[str, Any]]:
    try:
        docs = [d for d in yaml.safe_load_all(Path(config).read_text()) if isinstance(d, dict)]
    except (OSError, yaml.YAMLError) as err:
        raise PreflightFailed(f"unable to read config from {config!r}: {err}") from err
    return {str(d.get("kind")): d for d in docs}


def run(command: str, config: str, argv: Sequence[str], kubeadm_version: str,
        error: type[Exception] = PreflightFailed, host: Host | None = None) -> None:
    """kubeadm's preflight phase for `init` or `join --config`: prints the warnings, raises `error` with
    kubeadm's text when an error is not ignored."""
    host = host or Host()
    docs = _load(config)
    own = docs.get("InitConfiguration" if command == "init" else "JoinConfiguration") or {}
    try:
        ignore = ignored_names((own.get("nodeRegistration") or {}).get("ignorePreflightErrors") or [], argv)
    except ValueError as err:
        raise error(str(err)) from err
    print("[preflight] Running pre-flight checks (LAB KUBE EMULATOR: kubeadm 1.34's checks, "
          "tests/lab_standins/README.md)")
    # kubeadm checks root alone first and stops there (RunRootCheckOnly)
    for findings in (check_root(host), init_checks(host, docs, kubeadm_version) if command == "init"
                     else join_checks(host, own, kubeadm_version)):
        warnings, errors = report(findings, ignore)
        for line in warnings:
            print(line)
        if errors:
            raise error("error execution phase preflight: [preflight] Some fatal errors occurred:\n"
                        + "\n".join(errors) + "\n" + HINT)
