"""The only module that runs podman: images, networks, containers, always with the lab containers.conf."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ufcctl.engine.files import open_append
from ufcctl.errors import EnvironmentMissing, RunFailed

log = logging.getLogger(__name__)

# Podman here needs runc and explicit ulimits (docs/architecture.md, "Verified facts"); the settings
# live in this file, which every podman call gets through CONTAINERS_CONF instead of /etc edits.
# Package data beside this module, so an installed wheel finds it as well as a checkout.
CONTAINERS_CONF = Path(__file__).resolve().parent / "containers.conf"

# Tool -> the Debian package that provides it, for the "not installed" hint.
APT_PACKAGE = {
    "podman": "podman",
    "runc": "runc",
    # containers.conf selects netavark; Debian only recommends it (CNI also satisfies podman).
    "netavark": "netavark aardvark-dns",
    "debootstrap": "debootstrap",
    "ssh-keygen": "openssh-client",
    "ssh": "openssh-client",
    "tar": "tar",
}


# runc and debootstrap live in /usr/sbin, which a non-login shell's PATH may lack; podman's
# helpers (netavark) in its libexec directory.
EXTRA_BIN_DIRS: tuple[str, ...] = ("/usr/sbin", "/sbin", "/usr/lib/podman", "/usr/libexec/podman")


def require_tools(tools: Iterable[str]) -> None:
    """Raise EnvironmentMissing naming every missing tool and the apt package that provides it."""
    search = os.pathsep.join([os.environ.get("PATH", ""), *EXTRA_BIN_DIRS])
    missing = [t for t in tools if shutil.which(t, path=search) is None]
    if missing:
        packages = sorted({pkg for t in missing for pkg in APT_PACKAGE.get(t, t).split()})
        raise EnvironmentMissing(
            f"{', '.join(missing)} not found: the container lab needs {', '.join(missing)}",
            f"install them: apt-get install {' '.join(packages)} (scripts/setup.sh does this)",
        )


@dataclass(frozen=True)
class ContainerInfo:
    name: str
    state: str  # podman's state: running, exited, created, ...
    ip: str | None  # address on `network`, if attached
    image: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NetworkInfo:
    name: str
    subnets: tuple[str, ...]
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ContainerSpec:
    """One `podman run -d` of a systemd container."""

    name: str
    image: str
    network: str
    ip: str
    mac: str | None
    labels: Mapping[str, str]
    capabilities: tuple[str, ...] = ()
    volumes: tuple[tuple[str, str], ...] = ()  # (host path, container path)
    command: tuple[str, ...] = ("/lib/systemd/systemd",)
    devices: tuple[str, ...] = ()  # host device paths, passed as they are
    anonymous_volumes: tuple[str, ...] = ()  # container paths on a volume of their own (removed with it)
    device_cgroup_rules: tuple[str, ...] = ()  # e.g. "c 5:1 rwm": devices the container may grant its own
    # namespaced kernel settings, set at start (the node's /proc/sys is read-only)
    sysctls: tuple[tuple[str, str], ...] = ()


class Podman:
    """Thin, typed wrapper over the podman CLI; raises RunFailed with podman's own message."""

    def __init__(self, conf: Path = CONTAINERS_CONF, binary: str = "podman") -> None:
        self.conf = conf
        self.binary = binary

    def env(self) -> dict[str, str]:
        return {**os.environ, "CONTAINERS_CONF": str(self.conf)}

    def run(
        self,
        args: Sequence[str],
        *,
        stdin: Any = None,
        input_text: str | None = None,
        check: bool = True,
        timeout: float | None = 600,
        stdout: Any = subprocess.PIPE,
    ) -> subprocess.CompletedProcess[str]:
        argv = [self.binary, *args]
        log.debug("run: %s", " ".join(argv))
        try:
            proc = subprocess.run(
                argv, env=self.env(), stdin=stdin, input=input_text, stdout=stdout,
                stderr=subprocess.PIPE, text=True, timeout=timeout, check=False,
            )
        except FileNotFoundError:
            require_tools([self.binary])
            raise
        except subprocess.TimeoutExpired:
            raise RunFailed(f"`podman {' '.join(args[:3])}` did not finish within {timeout:.0f}s") from None
        if check and proc.returncode != 0:
            raise RunFailed(
                f"`podman {' '.join(args[:2])}` failed (exit {proc.returncode}): {_last_line(proc.stderr)}",
                details=_tail(proc.stderr),
            )
        return proc

    # images ------------------------------------------------------------------------------
    def image_labels(self, ref: str) -> dict[str, str] | None:
        """The image's labels, or None when the image does not exist."""
        proc = self.run(["image", "inspect", "--format", "{{json .Labels}}", ref], check=False)
        if proc.returncode != 0:
            return None
        return json.loads(proc.stdout.strip() or "null") or {}

    def image_id(self, ref: str) -> str | None:
        proc = self.run(["image", "inspect", "--format", "{{.Id}}", ref], check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def import_tarball(self, tarball: Path, ref: str, labels: Mapping[str, str]) -> None:
        changes = [arg for key, value in labels.items() for arg in ("--change", f"LABEL {key}={value}")]
        self.run(["import", "--quiet", *changes, str(tarball), ref], timeout=1200)

    def build(self, context: Path, tag: str, labels: Mapping[str, str], log_file: Path) -> None:
        """`podman build` with its output in log_file (the error names it when the build fails)."""
        label_args = [arg for key, value in labels.items() for arg in ("--label", f"{key}={value}")]
        argv = ["build", "--layers", "--force-rm", "-f", str(context / "Containerfile"), "-t", tag,
                *label_args, str(context)]
        log_file.unlink(missing_ok=True)  # the last build's log goes; open_append follows no link
        with os.fdopen(open_append(log_file), "a") as out:
            proc = self.run(argv, stdout=out, check=False, timeout=3600)
            out.write(proc.stderr)
        if proc.returncode != 0:
            raise RunFailed(
                f"building {tag} failed (exit {proc.returncode}): {_last_line(proc.stderr)}",
                f"see the build log {log_file}",
                details=_tail(log_file.read_text()),
            )

    def dangling_images(self, label_key: str) -> list[str]:
        """IDs of untagged images carrying `label_key` (earlier builds whose name moved on)."""
        filters = ["--filter", "dangling=true", "--filter", f"label={label_key}"]
        return sorted(set(self.run(["images", *filters, "--format", "{{.ID}}"]).stdout.split()))

    def remove_image(self, ref: str) -> str | None:
        """Remove an image; returns podman's reason when it refuses (e.g. a container uses it)."""
        proc = self.run(["rmi", ref], check=False)
        return None if proc.returncode == 0 else _last_line(proc.stderr)

    # networks ----------------------------------------------------------------------------
    def network(self, name: str) -> NetworkInfo | None:
        proc = self.run(["network", "inspect", name], check=False)
        if proc.returncode != 0:
            return None
        data = json.loads(proc.stdout)[0]
        subnets = tuple(s["subnet"] for s in data.get("subnets") or [])
        return NetworkInfo(name=data["name"], subnets=subnets, labels=data.get("labels") or {})

    def create_network(self, name: str, subnet: str, labels: Mapping[str, str]) -> None:
        label_args = [arg for key, value in labels.items() for arg in ("--label", f"{key}={value}")]
        self.run(["network", "create", "--subnet", subnet, *label_args, name])

    def remove_network(self, name: str) -> None:
        self.run(["network", "rm", name])

    # containers --------------------------------------------------------------------------
    def containers(self, label: str | None = None, network: str | None = None) -> list[ContainerInfo]:
        """All containers (running or not), optionally only those with `label` (key=value)."""
        args = ["ps", "-a", "--format", "{{.Names}}"]
        if label:
            args += ["--filter", f"label={label}"]
        names = self.run(args).stdout.split()
        return self.inspect(names, network) if names else []

    def containers_on(self, network: str) -> list[str]:
        """Names of all containers (running or not) attached to `network`, whoever created them."""
        args = ["ps", "-a", "--filter", f"network={network}", "--format", "{{.Names}}"]
        return sorted(self.run(args).stdout.split())

    def inspect(self, names: Sequence[str], network: str | None = None) -> list[ContainerInfo]:
        proc = self.run(["container", "inspect", *names], check=False)
        found: list[ContainerInfo] = []
        for data in json.loads(proc.stdout or "[]"):
            nets = (data.get("NetworkSettings") or {}).get("Networks") or {}
            ip = (nets.get(network) or {}).get("IPAddress") if network else None
            found.append(
                ContainerInfo(
                    name=data["Name"].lstrip("/"),
                    state=data["State"]["Status"],
                    ip=ip or None,
                    image=data.get("ImageName") or data.get("Image", ""),
                    labels=(data.get("Config") or {}).get("Labels") or {},
                )
            )
        return found

    def run_container(self, spec: ContainerSpec) -> None:
        args = ["run", "-d", "--name", spec.name, "--hostname", spec.name, "--systemd=always",
                "--network", spec.network, "--ip", spec.ip]
        if spec.mac:
            args += ["--mac-address", spec.mac]
        for key, value in spec.labels.items():
            args += ["--label", f"{key}={value}"]
        if spec.capabilities:
            args += ["--cap-add", ",".join(spec.capabilities)]
        for host, inside in spec.volumes:
            args += ["--volume", f"{host}:{inside}:rw"]
        for device in spec.devices:
            args += ["--device", device]
        for rule in spec.device_cgroup_rules:
            args += ["--device-cgroup-rule", rule]
        for inside in spec.anonymous_volumes:
            args += ["--mount", f"type=volume,dst={inside}"]
        for key, value in spec.sysctls:
            args += ["--sysctl", f"{key}={value}"]
        self.run([*args, spec.image, *spec.command], timeout=300)

    def start(self, names: Sequence[str]) -> None:
        self.run(["start", *names], timeout=300)

    def remove_containers(self, names: Sequence[str]) -> None:
        # -t 0: lab containers are disposable; waiting for each systemd to shut down adds ~10 s.
        # --volumes: the nodes' anonymous volumes (containerd's store) go with them
        self.run(["rm", "--force", "--volumes", "--time", "0", *names], timeout=300)

    def exit_state(self, name: str) -> tuple[str, int | None, str]:
        """(status, exit code, podman's error) of one container; ("missing", None, "") when it is gone."""
        fmt = "{{.State.Status}}\t{{.State.ExitCode}}\t{{.State.Error}}"
        proc = self.run(["container", "inspect", "--format", fmt, name], check=False)
        if proc.returncode != 0:
            return "missing", None, ""
        status, _, rest = proc.stdout.strip().partition("\t")
        code, _, error = rest.partition("\t")
        return status, int(code) if code.lstrip("-").isdigit() else None, error.strip()

    def logs(self, name: str, lines: int = 15) -> list[str]:
        """The last `lines` lines the container printed (systemd's console), empty when unreadable."""
        proc = self.run(["logs", "--tail", str(lines), name], check=False)
        return _tail(proc.stdout + proc.stderr, lines)

    def exec(
        self, name: str, argv: Sequence[str], *, input_text: str | None = None, check: bool = True,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        interactive = ["-i"] if input_text is not None else []
        args = ["exec", *interactive, name, *argv]
        return self.run(args, input_text=input_text, check=check, timeout=timeout)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def _tail(text: str, n: int = 15) -> list[str]:
    return [line for line in text.splitlines() if line.strip()][-n:]
