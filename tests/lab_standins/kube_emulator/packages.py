"""Builds the LAB KUBE EMULATOR's binaries in dl.k8s.io's layout (kubernetes/v<version>/bin/linux/<arch>/
<name> with <name>.sha256 holding the bare hex digest), into the lab mirror's directory. The REAL kubectl
beside them is built from k8s.io/kubernetes (tests/lab_build/mirror.py publishes it).

`kubeadm` is a Python zip application (one executable file, as the real kubeadm is one binary): the
emulator (kubeadm.py), its preflight (preflight.py), the LAB API STAND-IN (apiserver.py) and the Kubernetes
OpenAPI definitions the stand-in validates built-in kinds with (kubernetes-validate's strict schemas of the
target minor). `kubelet` stays a single script."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

from tests.lab_standins.npu_emulator.packages import write_if_changed

HERE = Path(__file__).resolve().parent
# ufc_kube_version's default (roles/kube_control_plane, roles/kube_node), and the next minor's release
# that `ufcctl upgrade-cluster` moves the lab to (tests/integration/test_workers_upgrade_lab.py): the
# releases tests/lab_build builds (components.py KUBERNETES, KUBERNETES_NEXT), so the real kubectl of the
# first lies in the same directory as the emulator's kubeadm and kubelet (each its own file, none
# overwrites another)
VERSIONS = ("1.34.4", "1.35.4")
ARCH = "amd64"
# What goes into the kubeadm zip application, beside kubeadm.py (present ones only: preflight.py
# and apiserver.py are optional while they are being built).
KUBEADM_MODULES = ("kubeadm.py", "preflight.py", "apiserver.py")
SCHEMAS_IN_ZIP = "schemas/_definitions.json"
MAIN = "import sys\nimport kubeadm\n\nsys.exit(kubeadm.main(sys.argv[1:]))\n"
# A fixed timestamp for every zip member, so the archive (and its sha256) only changes with its content.
EPOCH = (2020, 1, 1, 0, 0, 0)


def binary_dir(root: Path, version: str, arch: str = ARCH) -> Path:
    return root / "kubernetes" / f"v{version}" / "bin" / "linux" / arch


def render(name: str, version: str) -> bytes:
    source = {"kubeadm": "kubeadm.py", "kubelet": "kubelet.py"}[name]
    return (HERE / source).read_text().replace("@VERSION@", f"v{version}").encode()


def schema_file(version: str) -> Path | None:
    """kubernetes-validate's strict OpenAPI definitions for the version's minor (None: not installed)."""
    try:
        import kubernetes_validate
    except ImportError:
        return None
    minor = ".".join(version.split(".")[:2])
    base = Path(kubernetes_validate.__file__).resolve().parent / "kubernetes-json-schema"
    path = base / f"v{minor}.0-local-strict" / "_definitions.json"
    return path if path.is_file() else None


def kubeadm_zipapp(version: str) -> bytes:
    """The kubeadm executable: `#!/usr/bin/python3` + a stored (uncompressed) zip of the emulator."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        def add(name: str, data: bytes) -> None:
            archive.writestr(zipfile.ZipInfo(name, EPOCH), data)

        add("__main__.py", MAIN.encode())
        for module in KUBEADM_MODULES:
            path = HERE / module
            if path.is_file():
                data = path.read_text().replace("@VERSION@", f"v{version}").encode()
                add(module, data)
        schemas = schema_file(version)
        if schemas is not None:
            add(SCHEMAS_IN_ZIP, schemas.read_bytes())
    return b"#!/usr/bin/python3\n" + buffer.getvalue()


def _put(root: Path, directory: Path, name: str, data: bytes, sums: dict[str, str]) -> None:
    digest = hashlib.sha256(data).hexdigest()
    write_if_changed(directory / name, data, 0o755)
    write_if_changed(directory / f"{name}.sha256", f"{digest}\n".encode(), 0o644)
    sums[str((directory / name).relative_to(root))] = digest


def build(root: Path, versions: tuple[str, ...] = VERSIONS) -> dict[str, str]:
    """Write every binary and its .sha256; returns relative path -> sha256."""
    sums: dict[str, str] = {}
    for version in versions:
        directory = binary_dir(root, version)
        directory.mkdir(parents=True, exist_ok=True)
        _put(root, directory, "kubeadm", kubeadm_zipapp(version), sums)
        _put(root, directory, "kubelet", render("kubelet", version), sums)
    return sums
