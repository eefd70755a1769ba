"""LAB ADD-ON STAND-IN (tests/lab_build/addons.py, tests/lab_build/addon-standin): the table against our
roles rendered for the lab inventory, the images' contents, the push and its rerun, and the program's
behaviour as a plain process on loopback."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tarfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.lab_build import addons
from tests.lab_build import build as lab_build
from tests.lab_build.components import ADDON_STANDIN
from ufcctl.domain.images import registries
from ufcctl.lab.inventory import IMAGE_REGISTRIES, InventoryPaths, registry_cache_vars, render_inventory
from ufcctl.lab.layout import plan_layout

LAYOUT = plan_layout()
LAB_REGISTRIES = registry_cache_vars(LAYOUT)[IMAGE_REGISTRIES]


@pytest.fixture(scope="module")
def lab_objects(tmp_path_factory) -> list[dict[str, Any]]:
    """Every object of the add-on roles, rendered for the lab inventory `ufcctl lab up` writes."""
    from tests.helpers.addon_render import WITH_EXPORTER, render_addons

    inventory = tmp_path_factory.mktemp("lab-inventory")
    keys = {n.name: "ssh-ed25519 AAAA" for n in LAYOUT.nodes}
    files = render_inventory(LAYOUT, InventoryPaths(inventory, inventory / "key"), keys, {})
    for rel, text in files.items():
        (inventory / rel).parent.mkdir(parents=True, exist_ok=True)
        (inventory / rel).write_text(text)
    return [o for objs in render_addons(inventory, WITH_EXPORTER).values() for o in objs]


def _lab_reference(standin: addons.StandIn) -> str:
    return registries.mapped(standin.reference, LAB_REGISTRIES)


def test_every_add_on_image_the_lab_pulls_has_a_stand_in_and_nothing_more(lab_objects) -> None:
    rendered = set(addons.needs_of(lab_objects))
    assert rendered == {_lab_reference(s) for s in addons.STANDINS}
    # the images of the mirrored registries are pulled from the LAB UPSTREAM REGISTRY under their path
    upstream = f"{LAYOUT.npu_mirror.ip}:5000"
    assert _lab_reference(addons.STANDINS[0]) == f"{upstream}/calico/node:v3.29.3"
    assert {s.reference for s in addons.STANDINS} >= {ref for _, ref in registries.DEFAULT_IMAGES
                                                      if "pause" not in ref and "nfs" not in ref}


@pytest.mark.parametrize("standin", addons.STANDINS, ids=lambda s: s.repository)
def test_the_stand_in_serves_what_the_rendered_manifests_run(lab_objects, standin) -> None:
    need = addons.needs_of(lab_objects)[_lab_reference(standin)]
    assert addons.problems(standin, need) == []


def test_the_check_catches_drift(lab_objects) -> None:
    node = next(s for s in addons.STANDINS if s.repository == "calico/node")
    need = addons.needs_of(lab_objects)[_lab_reference(node)]
    drifted = addons.Needs(
        need.runs | {(False, ("/bin/calico-felix",), ())},
        need.probes | {("/bin/calico-node", "-bird6-ready")},
        need.listen | {addons.Listen(9099, "localhost")}, host_network=False)
    assert addons.problems(node, drifted) == [
        f"{node.reference}: command /bin/calico-felix is not a main path of the stand-in",
        f"{node.reference}: exec probe /bin/calico-node -bird6-ready: flags outside "
        "['-bird-live', '-bird-ready', '-felix-live', '-felix-ready']",
        f"{node.reference}: probe port localhost:9099 (HTTP) is not listened on",
        f"{node.reference}: hostNetwork is False in the manifests",
    ]
    cluster = next(s for s in addons.STANDINS if s.repository == "ascendhub/clusterd")
    script = addons.Needs(frozenset({(False, ("/bin/bash", "-c", "--"), ("x",))}))
    assert addons.problems(cluster, script) == [
        f"{cluster.reference}: script 'x' names none of ['clusterd']"]


def test_host_network_stand_ins_bind_no_port_twice() -> None:
    assert addons.host_port_clashes() == []
    bound = {s.repository: [(lst.host, lst.port) for lst in s.listen] for s in addons.STANDINS
             if s.host_network and s.listen}
    assert bound == {"calico/typha": [("localhost", 9098)],
                     "dns/k8s-dns-node-cache": [(addons.NODELOCALDNS_IP, 8080)]}
    twice = addons.StandIn("x/a:1", "x", listen=(addons.Listen(8080),), host_network=True)
    assert addons.host_port_clashes([*addons.STANDINS, twice]) == [
        "port 8080: registry.k8s.io/dns/k8s-dns-node-cache:1.26.4 and x/a:1"]


def _files(layer: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(layer))) as tar:
        return {"/" + m.name: m for m in tar.getmembers()}


def test_images_hold_the_program_at_every_path_with_its_config() -> None:
    images = addons.standin_images(b"\x7fELF stand-in")
    assert [i.reference for i in images] == [s.reference for s in addons.STANDINS]
    assert addons.standin_images(b"\x7fELF stand-in")[3].digest == images[3].digest  # reproducible
    assert len({i.layers[0] for i in images}) == 1  # the program: one blob for all
    for standin, image in zip(addons.STANDINS, images, strict=True):
        program, own = _files(image.layers[0]), _files(image.layers[1])
        assert program[addons.BINARY].mode == 0o755
        for path in standin.paths:
            assert own[path].issym() and own[path].linkname == addons.BINARY, path
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(image.layers[1]))) as tar:
            config = json.loads(tar.extractfile(addons.CONFIG.lstrip("/")).read())
        assert config == json.loads(json.dumps(standin.config()))
        assert own[addons.CONFIG].mode == 0o644 and own["/tmp"].mode == 0o1777
        oci = json.loads(image.config)["config"]
        assert oci.get("Entrypoint", []) == list(standin.entrypoint)
        assert standin.reference in oci["Labels"][addons.LABEL]
    node = next(i for i in images if i.repository == "calico/node")
    assert set(_files(node.layers[1])) >= {"/bin/calico-node"} and node.registry == "quay.io"


class _Registry(BaseHTTPRequestHandler):
    """The push path of a registry's API v2: HEAD/POST/PUT of blobs per repository, PUT of manifests."""

    blobs: dict[tuple[str, str], bytes] = {}
    manifests: dict[str, bytes] = {}

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_HEAD(self) -> None:  # noqa: N802
        name, _, digest = self.path[4:].partition("/blobs/")
        self.send_response(200 if (name, digest) in self.blobs else 404)
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        self._body()
        self.send_response(202)
        self.send_header("Location", self.path + "u1")
        self.end_headers()

    def do_PUT(self) -> None:  # noqa: N802
        body = self._body()
        if "/manifests/" in self.path:
            self.manifests[self.path[4:]] = body
        else:
            name = self.path[4:].split("/blobs/")[0]
            self.blobs[(name, self.path.split("digest=")[1].replace("%3A", ":"))] = body
        self.send_response(201)
        self.end_headers()


@pytest.fixture
def registry() -> Iterator[str]:
    _Registry.blobs, _Registry.manifests = {}, {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_push_puts_each_image_under_its_upstream_path_and_a_rerun_sends_no_blob(registry) -> None:
    images = addons.standin_images(b"\x7fELF stand-in")
    first = addons.push_all(registry, images)
    pushed = {p.reference.split("/", 1)[1] for p in first}
    assert pushed == {f"{s.repository}:{s.tag}" for s in addons.STANDINS}
    assert "ascendhub/vc-scheduler/manifests/v1.9.0-v26.0.0" in _Registry.manifests
    assert "dns/k8s-dns-node-cache/manifests/1.26.4" in _Registry.manifests
    assert sum(p.uploaded for p in first) == 3 * len(images)  # config, the program, its own layer
    again = addons.push_all(registry, addons.standin_images(b"\x7fELF stand-in"))
    assert sum(p.uploaded for p in again) == 0 and [p.digest for p in again] == [p.digest for p in first]


def test_lab_setup_pushes_the_stand_ins_right_after_starting_the_registry(monkeypatch, tmp_path) -> None:
    from types import SimpleNamespace

    from tests.lab_standins.npu_emulator import __main__ as setup
    from tests.lab_standins.upstream_registry.push import PushError

    calls: list[str] = []
    monkeypatch.setattr(setup.lab_mirror, "publish_lab", lambda workdir, say, kube: {})
    monkeypatch.setattr(setup, "prepare", lambda *a, **k: SimpleNamespace(
        url="http://10.89.64.5:8080/hdk", name="m", changed=False, root="r"))
    monkeypatch.setattr(setup.registry, "ensure_running",
                        lambda name, address: calls.append(f"registry {address}"))
    monkeypatch.setattr(setup.lab_addons, "publish", lambda url, say: calls.append(f"stand-ins {url}"))
    monkeypatch.setattr(setup.lab_kube_images, "publish", lambda url, say: calls.append(f"kube images {url}"))
    argv = ["setup", "--no-inventory", "--network", "n", "--workdir", str(tmp_path)]
    assert setup.main(argv) == 0
    assert calls == ["registry 10.89.64.5", "stand-ins http://10.89.64.5:5000"]
    # a lab running the real Kubernetes also gets registry.k8s.io's images of the built releases
    calls.clear()
    assert setup.main([*argv, "--kube", "real"]) == 0
    assert calls == ["registry 10.89.64.5", "stand-ins http://10.89.64.5:5000",
                     "kube images http://10.89.64.5:5000"]

    def refused(url: str, say: Any) -> None:
        raise PushError("PUT x: HTTP 500")

    monkeypatch.setattr(setup.lab_addons, "publish", refused)
    assert setup.main(argv) == 1


# ---- the program, as a plain process on loopback ----

@pytest.fixture(scope="module")
def program() -> Path:
    if shutil.which("go") is None:
        pytest.fail("go is not installed: scripts/setup.sh installs it")
    return lab_build.build(ADDON_STANDIN, say=lambda _: None).binary("addon-standin")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Container:
    """The program under the names an image gives it (symlinks in tmp), with its config and lock dirs."""

    def __init__(self, program: Path, root: Path, standin: addons.StandIn) -> None:
        self.root = root
        config = standin.config()
        self.paths = {}
        for path in standin.paths:
            link = root / path.strip("/").replace("/", "_")
            link.symlink_to(program)
            self.paths[path] = str(link)
        config["main"] = [self.paths[p] for p in config["main"]]
        config["oneshot"] = [self.paths[p] for p in config["oneshot"]]
        config["probes"] = {self.paths[p]: f for p, f in config["probes"].items()}
        config["shells"] = [self.paths[p] for p in config["shells"]]
        (root / "locks").mkdir()
        config["lock_dirs"] = [str(root / "locks")]
        (root / "config.json").write_text(json.dumps(config))
        self.env = dict(os.environ, UFCCTL_ADDON_STANDIN_CONFIG=str(root / "config.json"))

    def run(self, path: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([self.paths[path], *args], env=self.env, capture_output=True, text=True,
                              timeout=30, check=False)

    def start(self, path: str, *args: str) -> subprocess.Popen:
        return subprocess.Popen([self.paths[path], *args], env=self.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)


def _get(url: str, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    deadline = time.monotonic() + 60  # a hang guard (the unit lane runs beside lab deploys)
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as response:  # noqa: S310
                return response.status, response.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _stop(proc: subprocess.Popen) -> tuple[int, float]:
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=5), time.monotonic() - started


def test_calico_node_probes_follow_the_main_process_and_install_is_a_one_shot(program, tmp_path) -> None:
    node = next(s for s in addons.STANDINS if s.repository == "calico/node")
    c = Container(program, tmp_path, node)
    assert c.run("/bin/calico-node", "-felix-ready", "-bird-ready").returncode == 1  # not up yet
    main = c.start("/bin/calico-node")  # the entrypoint, no flags: the main process
    try:
        # a hang guard, not a speed test: 10 s was missed by 9 ms once with the machine at load 15
        deadline = time.monotonic() + 60
        while c.run("/bin/calico-node", "-felix-live", "-bird-live").returncode != 0:
            assert time.monotonic() < deadline and main.poll() is None
            time.sleep(0.05)
        assert c.run("/bin/calico-node", "-felix-ready", "-bird-ready").returncode == 0
    finally:
        rc, seconds = _stop(main)
    assert rc == 0 and seconds < 2
    assert c.run("/bin/calico-node", "-felix-live").returncode == 1  # gone: the probe fails again
    cni = next(s for s in addons.STANDINS if s.repository == "calico/cni")
    (tmp_path / "cni").mkdir()
    d = Container(program, tmp_path / "cni", cni)
    done = d.run("/opt/cni/bin/install")
    assert done.returncode == 0 and "one-shot" in done.stderr


def test_the_main_process_answers_200_on_any_path_over_http_and_https(program, tmp_path) -> None:
    http_port, https_port, tcp_port = _free_port(), _free_port(), _free_port()
    standin = addons.StandIn("example.org/x:v1", "x", entrypoint=("/x",), main=("/x",),
                             listen=(addons.Listen(http_port, "localhost"),
                                     addons.Listen(https_port, "127.0.0.1", "HTTPS"),
                                     addons.Listen(tcp_port, "")))
    c = Container(program, tmp_path, standin)
    main = c.start("/x", "--any", "-flag=1")
    try:
        status, body = _get(f"http://127.0.0.1:{http_port}/liveness")
        assert status == 200 and "stand-in for example.org/x:v1, not the add-on" in body
        assert _get(f"http://127.0.0.1:{http_port}/any/path?x=1")[0] == 200
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        assert _get(f"https://127.0.0.1:{https_port}/healthz", insecure)[0] == 200
        with socket.create_connection(("127.0.0.1", tcp_port), timeout=2):
            pass  # a tcpSocket probe connects
    finally:
        rc, seconds = _stop(main)
    assert rc == 0 and seconds < 2


def test_a_shell_runs_the_main_process_only_for_a_script_naming_it(program, tmp_path) -> None:
    exporter = next(s for s in addons.STANDINS if s.repository == "ascendhub/npu-exporter")
    c = Container(program, tmp_path, exporter)
    script = "umask 027 && npu-exporter -port=8082 -ip=0.0.0.0"
    main = c.start("/bin/bash", "-c", "--", script)
    try:
        time.sleep(0.3)
        assert main.poll() is None
    finally:
        assert _stop(main)[0] == 0
    assert c.run("/bin/bash", "-c", "--", "mkdir -p /var/log/x").returncode == 0


def test_an_unknown_path_or_config_is_a_clear_error(program, tmp_path) -> None:
    c = Container(program, tmp_path, next(s for s in addons.STANDINS if s.repository == "calico/typha"))
    (tmp_path / "other").symlink_to(program)
    done = subprocess.run([str(tmp_path / "other")], env=c.env, capture_output=True, text=True, timeout=10,
                          check=False)
    assert done.returncode == 2 and "is not a path of" in done.stderr
    missing = dict(c.env, UFCCTL_ADDON_STANDIN_CONFIG=str(tmp_path / "none.json"))
    done = subprocess.run([str(tmp_path / "other")], env=missing, capture_output=True, text=True, timeout=10,
                          check=False)
    assert done.returncode == 2 and "none.json" in done.stderr


def test_go_tests_of_the_program_pass() -> None:
    """The gRPC health answer (needs an HTTP/2 client: Go's) and the argv dispatch."""
    if shutil.which("go") is None:
        pytest.fail("go is not installed: scripts/setup.sh installs it")
    done = subprocess.run(["go", "test", "./..."], cwd=ADDON_STANDIN.module_path, capture_output=True,
                          text=True, timeout=600, check=False, env=dict(os.environ, CGO_ENABLED="0"))
    assert done.returncode == 0, done.stdout + done.stderr
