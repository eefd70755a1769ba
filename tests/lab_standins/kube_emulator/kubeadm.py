#!/usr/bin/python3
"""LAB KUBE EMULATOR of kubeadm (and, as `kubeadm __apiserver`, the LAB API STAND-IN for kube-apiserver).

This is NOT Kubernetes' kubeadm. The lab cannot install kubeadm, kubelet or kube-apiserver, so this
stand-in, shipped under kubeadm's real name from the lab mirror, does what the roles call and checks
what the real one would need:
- `init --config F`: issues the apiserver serving certificate from the cluster CA the role installed
  (/etc/kubernetes/pki/ca.{crt,key}), stores the config's bootstrap tokens and KubeletConfiguration in
  the real etcd core cluster (through etcdctl and the apiserver's etcd client certificate named in
  ClusterConfiguration.etcd.external), starts the LAB API STAND-IN (apiserver.py) on the control
  plane's port, creates the system namespaces, kube-public/cluster-info and the kube-proxy DaemonSet
  (kubeadm's addon phase; nothing runs it), and registers the first control plane's Node with kubeadm's
  control-plane label and taint;
- `join --config F` (worker, or control plane with `controlPlane:`): preflight (preflight.py: kubeadm
  1.31's checks by name; kubelet.conf absent, the CRI socket accepts a connection, kubelet installed),
  token format, discovery of the CA from
  cluster-info at the endpoint and its sha256 SubjectPublicKeyInfo hash against caCertHashes, then a
  TLS connection verified against that CA to the endpoint (so the endpoint must be the VIP or a
  control plane serving the cluster CA's certificate), the join authenticated by the token (checked
  against etcd, with its expiry), which registers the Node (labels from --node-labels, taints from
  nodeRegistration.taints, kubeadm's control-plane marks), then kubelet.conf, ca.crt,
  /var/lib/kubelet/config.yaml (the cluster's KubeletConfiguration) and kubeadm-flags.env, and a
  kubelet restart;
- `reset -f` (kubeadm 1.31's cleanup-node phase, cmd/kubeadm/app/cmd/phases/reset/cleanupnode.go):
  stops the kubelet (not disabled), deletes the contents of /etc/kubernetes/manifests, /var/lib/kubelet
  and /etc/kubernetes/pki and the files admin.conf, super-admin.conf, kubelet.conf,
  bootstrap-kubelet.conf, controller-manager.conf and scheduler.conf under /etc/kubernetes; on a control
  plane it stops the emulator's apiserver unit (the real one's static pod goes with its manifest). The
  Node object and etcd stay, as with the real one (external etcd: no member is removed). Without -f it
  asks on stdin and aborts unless the answer is y;
- `certs renew all|<name>` and `certs check-expiration` (kubeadm 1.31's renewal manager, external etcd:
  the certificates it finds re-signed by the CA on disk with new keys, kubeconfigs' client certificates
  included; MISSING! for an absent one; what kubeadm refuses refused). The running apiserver keeps the
  certificate it loaded until it is restarted;
- `init --upload-certs` and `init phase upload-certs --upload-certs`: the Secret kube-system/kubeadm-certs
  with the certificate key's sha256 (not the certificates) and the 2-hour life kubeadm gives it; a
  control-plane join with a certificateKey fails as kubeadm's download-certs phase does when the Secret is
  gone or expired, or the key is not the one it was uploaded under;
- `token create [TOKEN]`, `token delete ID`, `token list -o json`, `config validate`, `version`.
It runs no control-plane component and signs no kubelet certificate; the API it serves is the LAB API
STAND-IN's (apiserver.py: what it checks and what it does not). Every successful join appends a line to
/var/lib/ufc-kube-emulator/joins.jsonl and counts the node in etcd (tests read both); faults from
/etc/ufc-kube-emulator/faults.json: {"join": "fail"} or {"join": "hang"}.
Standard library plus python3-yaml, python3-cryptography and python3-jsonschema of the lab image.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

if __package__:  # imported from this checkout (unit tests)
    from . import preflight
else:  # the kubeadm zip application (packages.py): its modules are top-level
    import preflight  # type: ignore[no-redef]

VERSION = "@VERSION@"
STATE = Path("/var/lib/ufc-kube-emulator")
JOINS = STATE / "joins.jsonl"
FAULTS = Path("/etc/ufc-kube-emulator/faults.json")
CONF = Path("/etc/ufc-kube-emulator/apiserver.json")
SCHEMAS = Path("/etc/ufc-kube-emulator/definitions.json")
# The unit's name is the component's, so preflight's port-owner check (a program or unit named
# kube-apiserver may hold 6443) passes on a second deploy as with the real one; its description says
# what it is.
UNIT = "kube-apiserver"
PKI = Path("/etc/kubernetes/pki")
ADMIN_CONF = Path("/etc/kubernetes/admin.conf")
KUBELET_CONF = Path("/etc/kubernetes/kubelet.conf")
KUBELET_CONFIG = Path("/var/lib/kubelet/config.yaml")
KUBELET_FLAGS = Path("/var/lib/kubelet/kubeadm-flags.env")
KUBELET_BIN = Path("/usr/bin/kubelet")
# The kubelet's client certificate and key after its TLS bootstrap, where the real kubelet keeps them and
# kubelet.conf points (kubeadm join's kubelet-start phase leaves kubelet.conf so).
KUBELET_CLIENT = Path("/var/lib/kubelet/pki/kubelet-client-current.pem")
# The apiserver's "image": kubeadm init/join copy the kubeadm zip application (which is also the API
# stand-in) here and the unit runs the copy, so installing a newer kubeadm binary changes nothing that
# runs; only `kubeadm upgrade apply|node` replace it (a static pod's image changing), as with the real one.
APISERVER_BIN = Path("/var/lib/ufc-kube-emulator/kube-apiserver")
UPGRADES = Path("/var/lib/ufc-kube-emulator/upgrades.jsonl")
RENEWALS = Path("/var/lib/ufc-kube-emulator/renewals.jsonl")
KUBERNETES_DIR = Path("/etc/kubernetes")
KUBELET_DIR = Path("/var/lib/kubelet")
# What `kubeadm reset` deletes (kubeadm 1.31, cmd/kubeadm/app/cmd/phases/reset/cleanupnode.go: the
# contents of the manifests, kubelet and certificate directories; the kubeconfig files by name).
RESET_FILES = ("admin.conf", "super-admin.conf", "kubelet.conf", "bootstrap-kubelet.conf",
               "controller-manager.conf", "scheduler.conf")
# kubeadm reset's flags (cmd/kubeadm/app/cmd/reset.go); the value-taking ones take the next argument.
RESET_VALUE_FLAGS = ("--cri-socket", "--ignore-preflight-errors", "--cert-dir", "--kubeconfig", "--config",
                     "--skip-phases")
RESET_BOOL_FLAGS = ("-f", "--force", "--cleanup-tmp-dir", "--dry-run")
PREFIX = "/ufc-kube-emulator"
TOKEN = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
# the stand-in's flag (tests/lab_standins/apiserver_standin): /readyz answers 503 while it exists
UNREADY = Path("/run/ufcctl-apiserver-standin/unready")
JOIN_PATH = "/ufc-lab-emulator/join"
# kubeadm's uploaded control-plane certificates (cmd/kubeadm/app/phases/copycerts): the Secret
# kube-system/kubeadm-certs, owned by a token that lives 2 h (DefaultCertTokenDuration), so the token
# cleaner and the garbage collector remove it then. The emulator keeps only the certificate key's
# sha256 in it (the real one holds the certificates encrypted with the key) and counts it gone after
# its expiry annotation, as it would be.
CERTS_SECRET = "kubeadm-certs"
CERTS_TTL = 2 * 3600.0
CERTS_EXPIRES = "lab.ufcctl.io/expires"
CERTS_MISSING = (f'Secret "{CERTS_SECRET}" was not found in the "kube-system" Namespace. This Secret might '
                 "have expired. Please, run `kubeadm init phase upload-certs --upload-certs` on a control "
                 "plane to generate a new one")
HOST = socket.gethostname()


class Failed(Exception):
    pass


# -- helpers ------------------------------------------------------------------------------------


def _docs(path: str) -> dict[str, dict[str, Any]]:
    try:
        docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
    except (OSError, yaml.YAMLError) as err:
        raise Failed(f"unable to read config from {path!r}: {err}") from err
    by_kind: dict[str, dict[str, Any]] = {}
    for doc in docs:
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            raise Failed(f"{path}: a document without kind/apiVersion")
        by_kind[doc["kind"]] = doc
    return by_kind


def _duration(text: str) -> float:
    """A Go duration (24h0m0s, 21600s, 6h) in seconds."""
    parts = re.findall(r"([0-9.]+)(h|m|s|ms)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        raise Failed(f"invalid duration {text!r}")
    scale = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


def _spki_hash(pem: bytes) -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert = x509.load_pem_x509_certificate(pem)
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(spki).hexdigest()


def _faults() -> dict[str, Any]:
    try:
        return json.loads(FAULTS.read_text())
    except (OSError, ValueError):
        return {}


def _write(path: Path, text: str, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.chmod(tmp, mode)
    tmp.replace(path)


def _systemctl(*args: str) -> None:
    subprocess.run(["systemctl", *args], check=False, capture_output=True)


def _kubeconfig(server: str, ca_pem: bytes, user: str,
                client: tuple[bytes, bytes] | Path | None = None) -> str:
    """A kubeconfig for `server`; `client` (certificate, key PEM) authenticates as kubeadm's admin.conf
    does, a path to one PEM file with both as kubelet.conf does after the TLS bootstrap. Without it the
    user has a placeholder token the LAB API STAND-IN refuses (401)."""
    if isinstance(client, Path):
        credentials = {"client-certificate": str(client), "client-key": str(client)}
    elif client:
        credentials = {"client-certificate-data": base64.b64encode(client[0]).decode(),
                       "client-key-data": base64.b64encode(client[1]).decode()}
    else:
        credentials = {"token": "lab-kube-emulator-has-no-credentials"}
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "kubernetes", "cluster": {
            "server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": "default", "context": {"cluster": "kubernetes", "user": user}}],
        "current-context": "default",
    })


# -- etcd (the real etcd core cluster; the emulator's shared state) ------------------------------


class Etcd:
    def __init__(self, settings: dict[str, Any]):
        self.args = ["etcdctl", f"--endpoints={','.join(settings['endpoints'])}",
                     f"--cacert={settings['caFile']}", f"--cert={settings['certFile']}",
                     f"--key={settings['keyFile']}", "--command-timeout=10s"]

    def _run(self, *args: str) -> str:
        proc = subprocess.run([*self.args, *args], capture_output=True, text=True, check=False,
                              env={**os.environ, "ETCDCTL_API": "3"})
        if proc.returncode != 0:
            raise Failed(f"etcd: {' '.join(args[:2])}: {proc.stderr.strip()[-500:]}")
        return proc.stdout

    def get(self, key: str) -> str | None:
        out = self._run("get", PREFIX + key, "--print-value-only")
        return out[:-1] if out.endswith("\n") else (out or None)

    def put(self, key: str, value: str) -> None:
        self._run("put", PREFIX + key, value)

    def delete(self, key: str) -> bool:
        return self._run("del", PREFIX + key).strip() not in ("", "0")

    def prefix(self, key: str) -> dict[str, str]:
        out = self._run("get", PREFIX + key, "--prefix", "-w", "json")
        kvs = json.loads(out).get("kvs") or []
        return {base64.b64decode(kv["key"]).decode()[len(PREFIX):]: base64.b64decode(kv["value"]).decode()
                for kv in kvs}


def _store_token(etcd: Etcd, token: str, ttl: float, description: str) -> None:
    match = TOKEN.match(token)
    if not match:
        raise Failed(f"the token {token[:6]}... does not match {TOKEN.pattern}")
    expires = time.time() + ttl if ttl > 0 else 0
    etcd.put(f"/tokens/{match.group(1)}", json.dumps({"secret": match.group(2), "expires": expires,
                                                      "description": description}))


def _register(etcd: Etcd, node: str, record: dict[str, Any]) -> int:
    old = etcd.get(f"/nodes/{node}")
    count = (json.loads(old)["count"] if old else 0) + 1
    etcd.put(f"/nodes/{node}", json.dumps({**record, "count": count, "time": time.time()}))
    return count


# -- the LAB API STAND-IN (apiserver.py) and its join path ---------------------------------------


def _api(etcd: dict[str, Any]) -> Any:
    """The stand-in's API over the real etcd core cluster, with the OpenAPI definitions (when present)."""
    import apiserver

    return apiserver.API(apiserver.EtcdStore(etcd), apiserver.load_schemas(SCHEMAS), VERSION)


def _join_route(handler: Any, body: bytes) -> tuple[int, dict[str, Any]]:
    """kubeadm join's TLS bootstrap, in one request: the bootstrap token authenticates it; the node
    registers (as its kubelet would) and gets the cluster's KubeletConfiguration back."""
    import apiserver

    conf = handler.conf
    try:
        request = json.loads(body)
        token = (handler.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        match = TOKEN.match(token)
        etcd = Etcd(conf["etcd"])
        stored = etcd.get(f"/tokens/{match.group(1)}") if match else None
        record = json.loads(stored) if stored else None
        if record is None or not secrets.compare_digest(record["secret"], match.group(2)):
            return 401, {"kind": "Status", "code": 401, "message": "Unauthorized: unknown bootstrap token"}
        if record["expires"] and record["expires"] < time.time():
            return 401, {"kind": "Status", "code": 401,
                         "message": "Unauthorized: the bootstrap token has expired"}
        node = str(request["node"])
        control_plane = request.get("kind") == "control-plane"
        if control_plane and request.get("certificate_key_sha256"):
            _check_certs(handler.api, str(request["certificate_key_sha256"]))
        apiserver.register_node(handler.api, node, VERSION, dict(request.get("labels") or {}),
                                request.get("taints"), control_plane)
        fields = ("kind", "labels", "taints", "endpoint")
        count = _register(etcd, node, {k: request.get(k) for k in fields})
        cert, key = _client_cert(f"system:node:{node}", "system:nodes")
        return 200, {"kubelet_config": etcd.get("/kubelet-config") or "", "count": count,
                     "etcd": conf["etcd"] if control_plane else None,
                     "client": (cert + key).decode()}
    except (Failed, KeyError, ValueError, TypeError) as err:
        return 500, {"kind": "Status", "code": 500, "message": f"lab kube emulator: {err}"}


def serve() -> int:
    import apiserver

    conf = json.loads(CONF.read_text())
    api = _api(conf["etcd"])
    apiserver.bootstrap(api)
    httpd = apiserver.server(api, int(conf["port"]), conf["cert"], conf["key"], conf["ca"],
                             routes={JOIN_PATH: _join_route}, host=HOST, unready=UNREADY)
    httpd.RequestHandlerClass.conf = conf  # type: ignore[attr-defined]
    httpd.serve_forever()
    return 0


def _extract_schemas() -> None:
    """The OpenAPI definitions packed in this zip application, to a file the stand-in reads."""
    import zipfile

    try:
        with zipfile.ZipFile(sys.argv[0]) as archive:
            data = archive.read("schemas/_definitions.json")
    except (OSError, KeyError, zipfile.BadZipFile):
        return  # run from source (unit tests): built-in kinds are not schema-checked
    if not SCHEMAS.is_file() or SCHEMAS.read_bytes() != data:
        _write(SCHEMAS, data.decode(), 0o644)


def _serving_cert(sans: list[str]) -> None:
    """The apiserver's serving certificate, signed by the cluster CA the role installed."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ca_cert = x509.load_pem_x509_certificate((PKI / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((PKI / "ca.key").read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for san in dict.fromkeys(s for s in sans if s):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(san)))
        except ValueError:
            names.append(x509.DNSName(san))
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                                                 "kube-apiserver")]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .sign(ca_key, hashes.SHA256()))  # type: ignore[arg-type]
    _write(PKI / "apiserver.crt", cert.public_bytes(serialization.Encoding.PEM).decode(), 0o644)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    _write(PKI / "apiserver.key", pem.decode(), 0o600)


def _admin_client() -> tuple[bytes, bytes]:
    """admin.conf's client certificate, as kubeadm makes it since 1.29: CN kubernetes-admin, O
    kubeadm:cluster-admins, signed by the cluster CA (client auth, one year)."""
    return _client_cert("kubernetes-admin", "kubeadm:cluster-admins")


def _client_cert(common_name: str, organization: str) -> tuple[bytes, bytes]:
    """A client certificate and key signed by the cluster CA (client auth, one year): admin.conf's, or a
    node's (CN system:node:NAME, O system:nodes) as the kubelet's TLS bootstrap would get it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_cert = x509.load_pem_x509_certificate((PKI / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((PKI / "ca.key").read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                         x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))  # type: ignore[arg-type]
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), pem


def _start_apiserver(endpoint: str, port: int, etcd: dict[str, Any]) -> None:
    _extract_schemas()
    _write(CONF, json.dumps({"port": port, "cert": str(PKI / "apiserver.crt"),
                             "key": str(PKI / "apiserver.key"), "ca": str(PKI / "ca.crt"),
                             "endpoint": endpoint, "etcd": etcd}))
    _install_apiserver_image()
    unit = (f"[Unit]\nDescription=LAB API STAND-IN for kube-apiserver (tests/lab_standins/kube_emulator)\n"
            f"After=network-online.target\n\n[Service]\nExecStart={APISERVER_BIN} __apiserver\n"
            "Restart=always\nRestartSec=2\n\n[Install]\nWantedBy=multi-user.target\n")
    _write(Path(f"/etc/systemd/system/{UNIT}.service"), unit, 0o644)
    _systemctl("daemon-reload")
    _systemctl("enable", "--now", f"{UNIT}.service")
    _systemctl("restart", f"{UNIT}.service")


def _install_apiserver_image() -> None:
    """This kubeadm (the API stand-in's code at this version) becomes what the apiserver unit runs."""
    APISERVER_BIN.parent.mkdir(parents=True, exist_ok=True)
    tmp = APISERVER_BIN.with_name(APISERVER_BIN.name + ".tmp")
    shutil.copyfile(Path(sys.argv[0]).resolve(), tmp)
    os.chmod(tmp, 0o755)
    tmp.replace(APISERVER_BIN)


def _write_kubelet_conf(endpoint: str, ca: bytes, node: str, client_pem: str) -> None:
    """kubelet.conf as the TLS bootstrap leaves it: the node's client certificate in
    /var/lib/kubelet/pki, which the kubelet reports its status with."""
    _write(KUBELET_CLIENT, client_pem, 0o600)
    _write(KUBELET_CONF, _kubeconfig(f"https://{endpoint}", ca, f"system:node:{node}", KUBELET_CLIENT))


def _local_sans(cluster: dict[str, Any], advertise: str | None) -> list[str]:
    endpoint = str(cluster.get("controlPlaneEndpoint") or "")
    return [*(cluster.get("apiServer", {}).get("certSANs") or []), endpoint.rsplit(":", 1)[0],
            advertise or "", HOST, "127.0.0.1", "localhost"]


def _key_hash(certificate_key: str) -> str:
    return hashlib.sha256(certificate_key.encode()).hexdigest()


def _upload_certs(api: Any, certificate_key: str) -> None:
    """kubeadm's upload-certs phase: kube-system/kubeadm-certs (made or replaced), valid for 2 h."""
    if not re.fullmatch(r"[0-9a-f]{64}", certificate_key):
        raise Failed("error execution phase upload-certs: the certificate key must be 32 bytes in hex "
                     "(kubeadm certs certificate-key)")
    import apiserver

    res = apiserver.API._builtin("secrets")
    key = api.key(res, "kube-system", CERTS_SECRET)
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": CERTS_SECRET, "namespace": "kube-system", "uid": secrets.token_hex(16),
                           "creationTimestamp": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                           "annotations": {CERTS_EXPIRES: str(time.time() + CERTS_TTL)}},
              "data": {"lab-certificate-key-sha256": base64.b64encode(
                  _key_hash(certificate_key).encode()).decode()}}
    for _ in range(5):
        live = api.store.get(key)
        if api.store.put_if(key, json.dumps(secret), live[1] if live else 0) is not None:
            print(f"[upload-certs] Storing the certificates in Secret \"{CERTS_SECRET}\" in the "
                  "\"kube-system\" Namespace")
            return
    raise Failed(f"error execution phase upload-certs: Secret {CERTS_SECRET}: conflicting writes")


def _check_certs(api: Any, key_sha256: str) -> None:
    """A control-plane join's download-certs phase, against the uploaded Secret."""
    import apiserver

    live = api.store.get(api.key(apiserver.API._builtin("secrets"), "kube-system", CERTS_SECRET))
    secret = json.loads(live[0]) if live else None
    expires = float(((secret or {}).get("metadata", {}).get("annotations") or {}).get(CERTS_EXPIRES) or 0)
    if secret is None or expires < time.time():
        raise Failed(f"error execution phase control-plane-prepare/download-certs: error downloading certs: "
                     f"error downloading the secret: {CERTS_MISSING}")
    stored = base64.b64decode((secret.get("data") or {}).get("lab-certificate-key-sha256", "")).decode()
    if not secrets.compare_digest(stored, key_sha256):
        raise Failed("error execution phase control-plane-prepare/download-certs: error downloading certs: "
                     "error decoding secret data with provided key: cipher: message authentication failed")


# -- commands ------------------------------------------------------------------------------------


def cmd_init(config: str) -> int:
    preflight.run("init", config, sys.argv[1:], VERSION, Failed)
    docs = _docs(config)
    init, cluster = docs.get("InitConfiguration"), docs.get("ClusterConfiguration")
    if init is None or cluster is None:
        raise Failed(f"{config}: init needs an InitConfiguration and a ClusterConfiguration")
    if ADMIN_CONF.exists():
        raise Failed(f"[ERROR FileAvailable--etc-kubernetes-admin.conf]: {ADMIN_CONF} already exists")
    for name in ("ca.crt", "ca.key"):
        if not (PKI / name).is_file():
            raise Failed(f"[ERROR] {PKI / name} is missing (the cluster CA)")
    etcd_settings = (cluster.get("etcd") or {}).get("external")
    if not etcd_settings:
        raise Failed("the lab kube emulator needs external etcd (ClusterConfiguration.etcd.external)")
    etcd = Etcd(etcd_settings)
    endpoint = str(cluster["controlPlaneEndpoint"])
    local = init.get("localAPIEndpoint") or {}
    port = int(local.get("bindPort") or 6443)
    for entry in init.get("bootstrapTokens") or []:
        _store_token(etcd, str(entry["token"]), _duration(str(entry.get("ttl") or "24h0m0s")),
                     str(entry.get("description") or ""))
    kubelet = docs.get("KubeletConfiguration")
    if kubelet is not None:
        etcd.put("/kubelet-config", yaml.safe_dump(kubelet, sort_keys=True))
    # kubeadm-config's kubernetesVersion: what `upgrade apply` moves and `upgrade node` follows
    etcd.put("/cluster-version", VERSION)
    _serving_cert(_local_sans(cluster, local.get("advertiseAddress")))
    _start_apiserver(endpoint, port, etcd_settings)
    ca = (PKI / "ca.crt").read_bytes()
    _write(ADMIN_CONF, _kubeconfig(f"https://{endpoint}", ca, "kubernetes-admin", _admin_client()))
    cert, key = _client_cert(f"system:node:{_node_name(init)}", "system:nodes")
    _write_kubelet_conf(endpoint, ca, _node_name(init), (cert + key).decode())
    if kubelet is not None:
        _write(KUBELET_CONFIG, yaml.safe_dump(kubelet, sort_keys=True), 0o644)
    import apiserver

    api = _api(etcd_settings)
    apiserver.bootstrap(api)
    apiserver.put_configmap(api, "kube-public", "cluster-info",
                            {"kubeconfig": _kubeconfig(f"https://{endpoint}", ca, "")})
    registration = init.get("nodeRegistration") or {}
    labels = dict(kv.split("=", 1) for kv in _extra_args(registration).get("node-labels", "").split(",")
                  if "=" in kv)
    apiserver.register_node(api, _node_name(init), VERSION, labels, registration.get("taints"), True)
    _kube_proxy_addon(api, str(cluster.get("imageRepository") or "registry.k8s.io"))
    if "--upload-certs" in sys.argv[1:]:
        _upload_certs(api, str(init.get("certificateKey") or ""))
    _register(etcd, _node_name(init), {"kind": "control-plane-init", "endpoint": endpoint})
    _systemctl("restart", "kubelet")
    _log_join(_node_name(init), endpoint, "control-plane", {}, [])
    print("Your Kubernetes control-plane has initialized successfully! (LAB KUBE EMULATOR: nothing of "
          "Kubernetes runs here)")
    return 0


def _kube_proxy_addon(api: Any, repository: str) -> None:
    """kubeadm init's addon/kube-proxy phase, as the objects ufcctl reads (the DaemonSet
    kube-system/kube-proxy: every Linux node, every taint tolerated, no rollingUpdate given, so the
    apiserver's defaults apply: maxUnavailable 1, the window roles/kube_control_plane widens, D20). No
    kube-proxy runs here."""
    import apiserver

    labels = {"k8s-app": "kube-proxy"}
    apiserver._put_new(api, apiserver.API._builtin("daemonsets"), "kube-system", {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": labels},
        "spec": {"selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"hostNetwork": True,
                     "nodeSelector": {"kubernetes.io/os": "linux"}, "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "kube-proxy", "image": f"{repository}/kube-proxy:{VERSION}",
                                     "command": ["/usr/local/bin/kube-proxy",
                                                 "--config=/var/lib/kube-proxy/config.conf"]}]}}},
    })


def _node_name(doc: dict[str, Any]) -> str:
    return str((doc.get("nodeRegistration") or {}).get("name") or HOST)


def _discover(endpoint: str, hashes: list[str], deadline: float) -> bytes:
    """cluster-info from the endpoint (not verified yet), its CA checked against the pinned hashes."""
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    url = f"https://{endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info"
    last = ""
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, context=insecure, timeout=5) as reply:
                info = json.loads(reply.read())
            config = yaml.safe_load(info["data"]["kubeconfig"])
            ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
            found = _spki_hash(ca)
            if found not in hashes:
                raise Failed(f"cluster CA found in cluster-info ConfigMap is invalid: none of the public "
                             f"keys {found} are pinned (caCertHashes {', '.join(hashes)})")
            return ca
        except (OSError, urllib.error.URLError, KeyError, ValueError) as err:
            last = str(err)
            time.sleep(2)
    raise Failed(f"couldn't validate the identity of the API Server at {endpoint}: {last}")


def _post_join(endpoint: str, ca: bytes, token: str, body: dict[str, Any]) -> dict[str, Any]:
    context = ssl.create_default_context(cadata=ca.decode())
    request = urllib.request.Request(f"https://{endpoint}{JOIN_PATH}", data=json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, context=context, timeout=15) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as err:
        text = err.read().decode(errors="replace").strip()
        try:
            text = str(json.loads(text).get("message") or text)
        except (ValueError, AttributeError):
            pass
        raise Failed(f"error execution phase kubelet-start: the API server at {endpoint} refused the join: "
                     f"{err.code} {text}") from err
    except (OSError, urllib.error.URLError) as err:
        raise Failed(f"error execution phase kubelet-start: TLS to {endpoint} with the cluster CA: "
                     f"{err}") from err


def _log_join(node: str, endpoint: str, kind: str, labels: dict[str, str], taints: list[Any]) -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    with JOINS.open("a") as fh:
        fh.write(json.dumps({"time": time.time(), "endpoint": endpoint, "node": node, "labels": labels,
                             "taints": taints, "kind": kind}) + "\n")


def _extra_args(registration: dict[str, Any]) -> dict[str, str]:
    return {str(a["name"]): str(a["value"]) for a in registration.get("kubeletExtraArgs") or []}


def cmd_join(config: str) -> int:
    preflight.run("join", config, sys.argv[1:], VERSION, Failed)
    doc = _docs(config).get("JoinConfiguration")
    if doc is None:
        raise Failed(f"{config}: join needs a JoinConfiguration")
    registration = doc.get("nodeRegistration") or {}
    node = _node_name(doc)
    if KUBELET_CONF.exists():
        raise Failed(f"[preflight] [ERROR FileAvailable--etc-kubernetes-kubelet.conf]: {KUBELET_CONF} "
                     "already exists")
    if not KUBELET_BIN.exists():
        raise Failed("[preflight] [ERROR FileExisting-kubelet]: kubelet not found in system path")
    fault = _faults().get("join")
    if fault == "fail":
        raise Failed("error execution phase kubelet-start: join failed (injected by the lab kube emulator)")
    if fault == "hang":
        while True:  # until killed: a join that never returns
            time.sleep(3600)
    bootstrap = (doc.get("discovery") or {}).get("bootstrapToken") or {}
    token = str(bootstrap.get("token") or "")
    if not TOKEN.match(token):
        raise Failed(f"the token in discovery.bootstrapToken does not match {TOKEN.pattern}")
    endpoint = str(bootstrap.get("apiServerEndpoint") or "")
    hashes = [str(h) for h in bootstrap.get("caCertHashes") or []]
    if not endpoint or not hashes:
        raise Failed("discovery.bootstrapToken needs apiServerEndpoint and caCertHashes (unsafe skip is "
                     "not emulated)")
    timeout = _duration(str((doc.get("timeouts") or {}).get("discovery") or "5m0s"))
    ca = _discover(endpoint, hashes, time.time() + timeout)
    control_plane = doc.get("controlPlane") is not None
    extra = _extra_args(registration)
    labels = dict(kv.split("=", 1) for kv in extra.get("node-labels", "").split(",") if "=" in kv)
    taints = registration.get("taints")  # None: kubeadm's default (a control plane gets its taint)
    reply = _post_join(endpoint, ca, str(doc["discovery"].get("tlsBootstrapToken") or token),
                       {"node": node, "kind": "control-plane" if control_plane else "worker",
                        "labels": labels, "taints": taints, "endpoint": endpoint,
                        "certificate_key_sha256": _key_hash(str(doc["controlPlane"].get("certificateKey")))
                        if control_plane and (doc["controlPlane"] or {}).get("certificateKey") else None})
    if control_plane:
        local = (doc["controlPlane"].get("localAPIEndpoint") or {})
        if not reply.get("etcd"):
            raise Failed("the control plane's join got no etcd settings back")
        host = endpoint.rsplit(":", 1)[0]
        _serving_cert([host, str(local.get("advertiseAddress") or ""), HOST, "127.0.0.1", "localhost"])
        _start_apiserver(endpoint, int(local.get("bindPort") or 6443), reply["etcd"])
        _write(ADMIN_CONF, _kubeconfig(f"https://{endpoint}", ca, "kubernetes-admin", _admin_client()))
    _write(PKI / "ca.crt", ca.decode(), 0o644)
    _write_kubelet_conf(endpoint, ca, node, str(reply.get("client") or ""))
    if reply.get("kubelet_config"):
        _write(KUBELET_CONFIG, reply["kubelet_config"], 0o644)
    flags = [f"--{k}={v}" for k, v in extra.items()]
    if taints and not control_plane:
        flags.append("--register-with-taints=" + ",".join(f"{t['key']}={t.get('value', '')}:{t['effect']}"
                                                           for t in taints))
    _write(KUBELET_FLAGS, f'KUBELET_KUBEADM_ARGS="{" ".join(flags)}"\n', 0o644)
    _systemctl("restart", "kubelet")
    _log_join(node, endpoint, "control-plane" if control_plane else "worker", labels, taints or [])
    print(f"This node has joined the cluster (LAB KUBE EMULATOR; registration {reply.get('count')} "
          f"of {node})")
    return 0


def _initialised_etcd() -> Etcd:
    if not ADMIN_CONF.exists() or not CONF.exists():
        raise Failed(f"{ADMIN_CONF}: no such file (run on an initialised control plane)")
    return Etcd(json.loads(CONF.read_text())["etcd"])


def cmd_token_create(token: str | None, ttl: str, description: str) -> int:
    """`kubeadm token create [TOKEN]`: the given token (kubeadm refuses an id that exists) or a new one."""
    etcd = _initialised_etcd()
    if token is None:
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
        token = "".join(secrets.choice(alphabet) for _ in range(6)) + "." + "".join(
            secrets.choice(alphabet) for _ in range(16))
    match = TOKEN.match(token)
    if match and etcd.get(f"/tokens/{match.group(1)}") is not None:
        raise Failed(f'failed to create bootstrap token with name "bootstrap-token-{match.group(1)}": '
                     f'secrets "bootstrap-token-{match.group(1)}" already exists')
    _store_token(etcd, token, _duration(ttl), description)
    print(token)
    return 0


def cmd_token_delete(names: list[str]) -> int:
    """`kubeadm token delete ID|TOKEN...`."""
    etcd = _initialised_etcd()
    for name in names:
        token_id = name.split(".", 1)[0]
        if not re.fullmatch(r"[a-z0-9]{6}", token_id):
            raise Failed(f"given token or token id {name[:6]!r} didn't match pattern [a-z0-9]{{6}}")
        if not etcd.delete(f"/tokens/{token_id}"):
            raise Failed(f'failed to delete bootstrap token "{token_id}": '
                         f'secrets "bootstrap-token-{token_id}" not found')
        print(f'bootstrap token "{token_id}" deleted')
    return 0


def cmd_upload_certs(argv: list[str]) -> int:
    """`kubeadm init phase upload-certs --upload-certs [--config F] [--certificate-key K]` on an
    initialised control plane (without a key kubeadm makes one and prints it)."""
    if "--upload-certs" not in argv:
        print("[upload-certs] Skipping phase. Please see --upload-certs")
        return 0
    _initialised_etcd()
    config = _flag(argv, "--config")
    key = _flag(argv, "--certificate-key") or (
        str((_docs(config).get("InitConfiguration") or {}).get("certificateKey") or "") if config else "")
    if not key:
        key = secrets.token_hex(32)
        print(f"[upload-certs] Using certificate key:\n{key}")
    _upload_certs(_api(json.loads(CONF.read_text())["etcd"]), key)
    return 0


def cmd_token_list() -> int:
    """`kubeadm token list -o json`: one BootstrapToken object per line (tokens of etcd, expired ones too)."""
    for key, value in sorted(_initialised_etcd().prefix("/tokens/").items()):
        record = json.loads(value)
        expires = (dt.datetime.fromtimestamp(record["expires"], dt.UTC).isoformat()
                   if record["expires"] else None)
        print(json.dumps({"kind": "BootstrapToken", "apiVersion": "output.kubeadm.k8s.io/v1alpha3",
                          "token": f"{key.rsplit('/', 1)[1]}.{record['secret']}", "expires": expires,
                          "description": record.get("description", "")}))
    return 0


def cmd_validate(config: str) -> int:
    known = {"InitConfiguration", "ClusterConfiguration", "JoinConfiguration", "KubeletConfiguration",
             "KubeProxyConfiguration"}
    docs = _docs(config)
    unknown = sorted(set(docs) - known)
    if unknown:
        raise Failed(f"{config}: unknown kinds {unknown}")
    for kind, doc in docs.items():
        if kind.endswith("Configuration") and kind in ("InitConfiguration", "ClusterConfiguration",
                                                       "JoinConfiguration") \
                and doc["apiVersion"] != "kubeadm.k8s.io/v1beta4":
            raise Failed(f"{config}: {kind} apiVersion {doc['apiVersion']}: this emulates kubeadm "
                         "v1beta4 only")
    print("ok (LAB KUBE EMULATOR: kinds and versions checked)")
    return 0


def _reset_args(argv: list[str]) -> dict[str, str | bool]:
    """kubeadm reset's flags as cobra parses them; an unknown one is refused as cobra refuses it."""
    given: dict[str, str | bool] = {}
    args = iter(argv)
    for arg in args:
        name, _, value = arg.partition("=")
        if name in RESET_BOOL_FLAGS and not value:
            given[name] = True
        elif name in RESET_VALUE_FLAGS:
            given[name] = value or next(args, "")
        elif name.startswith("-v") or name == "--v":  # klog verbosity
            continue
        else:
            raise Failed(f"unknown flag: {name}" if name.startswith("-") else
                         f'unknown command "{name}" for "kubeadm reset"')
    return given


def _clean_dir(path: Path) -> None:
    """Delete what is inside `path`, keep the directory (kubeadm's CleanDir)."""
    if not path.is_dir():
        return
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def cmd_reset(argv: list[str]) -> int:
    flags = _reset_args(argv)
    if "--dry-run" in flags:
        raise Failed("kubeadm reset --dry-run: not emulated (LAB KUBE EMULATOR)")
    if os.geteuid() != 0:
        raise Failed("[preflight] Some fatal errors occurred:\n\t[ERROR IsPrivilegedUser]: user is not "
                     f"running as root\n{preflight.HINT}")
    print("[preflight] Running pre-flight checks")
    if not (flags.get("-f") or flags.get("--force")):
        print("[reset] WARNING: Changes made to this host by 'kubeadm init' or 'kubeadm join' will be "
              "reverted.")
        print("[reset] Are you sure you want to proceed? [y/N]: ", end="", flush=True)
        answer = sys.stdin.readline().strip().lower()
        if answer != "y":
            raise Failed("aborted reset operation")
    print("[reset] Stopping the kubelet service")
    _systemctl("stop", "kubelet")
    if Path(f"/etc/systemd/system/{UNIT}.service").exists():  # the emulator's apiserver (a static pod)
        _systemctl("disable", "--now", f"{UNIT}.service")
    print(f'[reset] Unmounting mounted directories in "{KUBELET_DIR}"')
    dirs = [KUBERNETES_DIR / "manifests", KUBELET_DIR, KUBERNETES_DIR / "pki"]
    print(f"[reset] Deleting contents of directories: [{' '.join(str(d) for d in dirs)}]")
    for directory in dirs:
        _clean_dir(directory)
    files = [KUBERNETES_DIR / name for name in RESET_FILES]
    print(f"[reset] Deleting files: [{' '.join(str(f) for f in files)}]")
    for path in files:
        path.unlink(missing_ok=True)
    print("\nThe reset process does not clean CNI configuration. To do so, you must remove /etc/cni/net.d\n\n"
          "The reset process does not reset or clean up iptables rules or IPVS tables.\n\n"
          "The reset process does not clean your kubeconfig files and you must remove them manually.\n"
          "Please, check the contents of the $HOME/.kube/config file.")
    return 0


# -- kubeadm upgrade (apply on the first control plane, node on the others and on workers) ---------


def _semver(text: str) -> tuple[int, int, int]:
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)$", text.strip())
    if not match:
        raise Failed(f'unable to parse version "{text}": it is not a semantic version (vMAJOR.MINOR.PATCH)')
    return int(match[1]), int(match[2]), int(match[3])


INVALID_VERSION = "[upgrade/version] FATAL: the --version argument is invalid due to these fatal errors:\n\n"


def _local_apiserver() -> dict[str, Any]:
    """This control plane's apiserver settings (written by init/join); a worker has none."""
    try:
        return json.loads(CONF.read_text())
    except (OSError, ValueError):
        return {}


def _wait_local_readyz(conf: dict[str, Any], timeout: float = 120.0) -> None:
    """Wait for the restarted apiserver to answer /readyz on this host (kubeadm waits for the static
    pod's new hash and its health, 5 minutes by default)."""
    context = ssl.create_default_context(cafile=conf["ca"])
    context.check_hostname = False
    deadline, last = time.time() + timeout, ""
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{conf['port']}/readyz", context=context,
                                        timeout=3) as reply:
                if reply.status == 200:
                    return
        except (OSError, urllib.error.URLError) as err:
            last = str(err)
        time.sleep(0.5)
    raise Failed(f"[upgrade/staticpods] the kube-apiserver did not become ready within {timeout:.0f}s: "
                 f"{last}")


def _apiserver_image_version() -> str | None:
    """The version the apiserver unit runs (its copied kubeadm's `version -o short`)."""
    if not APISERVER_BIN.is_file():
        return None
    proc = subprocess.run([str(APISERVER_BIN), "version", "-o", "short"], capture_output=True, text=True,
                          check=False)
    return proc.stdout.strip() or None


def _upgrade_static_pods(conf: dict[str, Any], target: str) -> bool:
    """Replace the apiserver's image with this kubeadm and restart it, when it runs another version."""
    if _apiserver_image_version() == target:
        print(f"[upgrade/staticpods] kube-apiserver already runs {target}: nothing to change")
        return False
    print(f"[upgrade/staticpods] Moving the kube-apiserver to {target} and waiting for it to restart")
    _install_apiserver_image()
    _systemctl("restart", f"{UNIT}.service")
    _wait_local_readyz(conf)
    return True


def _log_upgrade(verb: str, target: str, changed: bool) -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    with UPGRADES.open("a") as fh:
        fh.write(json.dumps({"time": time.time(), "node": HOST, "verb": verb, "version": target,
                             "kubeadm": VERSION, "changed": changed}) + "\n")


def _root() -> None:
    if os.geteuid() != 0:
        raise Failed("[preflight] Some fatal errors occurred:\n\t[ERROR IsPrivilegedUser]: user is not "
                     f"running as root\n{preflight.HINT}")


def cmd_upgrade_apply(argv: list[str]) -> int:
    """`kubeadm upgrade apply VERSION [-y|--yes] [--ignore-preflight-errors=...]` on a control plane, as
    kubeadm checks it (cmd/kubeadm/app/phases/upgrade/policy.go EnforceVersionPolicies, its messages the same
    at v1.34.4; health.go)."""
    positional = [a for a in argv if not a.startswith("-")]
    if len(positional) != 1:
        raise Failed("kubeadm upgrade apply: exactly one argument, the version to upgrade to")
    target = positional[0] if positional[0].startswith("v") else f"v{positional[0]}"
    _root()
    print("[preflight] Running pre-flight checks.")
    conf = _local_apiserver()
    if not ADMIN_CONF.is_file() or not conf:
        raise Failed(f"couldn't create a Kubernetes client from file \"{ADMIN_CONF}\": open {ADMIN_CONF}: no "
                     "such file or directory (run it on a control plane)")
    wanted, own = _semver(target), _semver(VERSION)
    if wanted > own:
        raise Failed(f"{INVALID_VERSION}"
                     f'\t- Specified version to upgrade to "{target}" is higher than the kubeadm version '
                     f'"{VERSION}". Upgrade kubeadm first using the tool you used to install kubeadm')
    if wanted[:2] < own[:2]:
        raise Failed(f"{INVALID_VERSION}"
                     f'\t- Kubeadm version {VERSION} can only be used to upgrade to Kubernetes version '
                     f'{own[0]}.{own[1]}')
    etcd = Etcd(conf["etcd"])
    current = etcd.get("/cluster-version") or VERSION
    have = _semver(current)
    if wanted[:2] > (have[0], have[1] + 1):
        raise Failed(f"{INVALID_VERSION}"
                     f'\t- Specified version to upgrade to "{target}" is too high; kubeadm can upgrade '
                     'only 1 minor version at a time')
    if wanted < have:
        raise Failed(f"{INVALID_VERSION}"
                     f'\t- Specified version to downgrade to "{target}" is lower than the cluster version '
                     f'"{current}" (downgrades are not supported by the lab kube emulator)')
    print("[upgrade] Running cluster health checks")
    api = _api(conf["etcd"])
    import apiserver

    nodes, _ = api.list(apiserver.API._builtin("nodes"), None, "node-role.kubernetes.io/control-plane", "")
    not_ready = sorted(n["metadata"]["name"] for n in nodes
                       if not any(c.get("type") == "Ready" and c.get("status") == "True"
                                  for c in (n.get("status") or {}).get("conditions") or []))
    ignored = (_flag(argv, "--ignore-preflight-errors") or "").lower().split(",")
    if not_ready and "controlplanenodesready" not in ignored and "all" not in ignored:
        raise Failed("[upgrade/health] FATAL: [preflight] Some fatal errors occurred:\n\t[ERROR "
                     f"ControlPlaneNodesReady]: there are NotReady control-planes in the cluster: "
                     f"{not_ready}")
    if not ("-y" in argv or "--yes" in argv or "-f" in argv or "--force" in argv):
        print(f"[upgrade] Are you sure you want to proceed with the upgrade to {target}? [y/N]: ", end="",
              flush=True)
        if sys.stdin.readline().strip().lower() != "y":
            raise Failed("won't proceed; the user didn't answer (Y|y) in order to continue")
    print(f"[upgrade/version] You have chosen to change the cluster version to \"{target}\"")
    etcd.put("/cluster-version", target)
    changed = _upgrade_static_pods(conf, target)
    _log_upgrade("apply", target, changed)
    print(f'[upgrade/successful] SUCCESS! Your cluster was upgraded to "{target}". Enjoy!')
    return 0


def _cluster_version_from(kubeconfig: Path) -> str:
    """The cluster's version as a worker's kubeadm learns it: through the endpoint in kubelet.conf (the
    real one reads kubeadm-config with the node's credentials; the stand-in's /version follows the
    apiservers, which `upgrade apply` moved)."""
    doc = yaml.safe_load(kubeconfig.read_text()) or {}
    cluster = doc["clusters"][0]["cluster"]
    ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
    context = ssl.create_default_context(cadata=ca)
    try:
        with urllib.request.urlopen(f"{cluster['server']}/version", context=context, timeout=10) as reply:
            return str(json.loads(reply.read())["gitVersion"])
    except (OSError, urllib.error.URLError, ValueError, KeyError) as err:
        raise Failed(f"unable to fetch the kubeadm-config ConfigMap: {cluster['server']}: {err}") from err


def cmd_upgrade_node(argv: list[str]) -> int:
    """`kubeadm upgrade node`: on a control plane, move its static pods to the cluster's version (what
    `upgrade apply` recorded); on a worker, refresh the kubelet's configuration from the cluster. The
    kubelet binary itself is the operator's to replace and restart, as with the real one."""
    del argv
    _root()
    conf = _local_apiserver()
    if conf:
        current = Etcd(conf["etcd"]).get("/cluster-version") or VERSION
    elif KUBELET_CONF.is_file():
        current = _cluster_version_from(KUBELET_CONF)
    else:
        raise Failed(f"couldn't create a Kubernetes client from file \"{KUBELET_CONF}\": no such file or "
                     "directory (the node has not joined)")
    if _semver(current) > _semver(VERSION):
        raise Failed(f'the cluster runs "{current}", newer than this kubeadm "{VERSION}": upgrade kubeadm '
                     "first")
    changed = False
    if conf:
        print("[upgrade] Upgrading your Static Pod-hosted control plane instance to version "
              f"\"{current}\"...")
        changed = _upgrade_static_pods(conf, current)
    else:
        print("[upgrade] Skipping phase. Not a control plane node.")
    print("[upgrade] The configuration for this node was successfully upgraded!")
    _log_upgrade("node", current, changed)
    return 0


# -- kubeadm certs (renew all|<name>, check-expiration) ------------------------------------------------
# kubeadm 1.31's renewal manager (cmd/kubeadm/app/phases/certs/renewal/manager.go, cmd/certs.go): name ->
# (file under the certificate directory, its CA's base name, the CA's name as check-expiration prints it,
# kubeadm's long name). With external etcd (the roles' ClusterConfiguration; here: this control plane's
# apiserver.json names etcd) the certificates of etcd's CA are not kubeadm's: `renew <one of them>` prints
# MISSING! and `renew all` skips them. Renewals are unconditional, keep subject, SANs and usages, and make a
# NEW key (pkiutil.NewCertAndKey), signed by the CA on disk; a kubeconfig keeps everything but its client
# certificate and key and the embedded CA, rewritten from ca.crt.
RENEW_PKI = {
    "apiserver": ("apiserver", "ca", "ca", "certificate for serving the Kubernetes API"),
    "apiserver-kubelet-client": ("apiserver-kubelet-client", "ca", "ca",
                                 "certificate for the API server to connect to kubelet"),
    "front-proxy-client": ("front-proxy-client", "front-proxy-ca", "front-proxy-ca",
                           "certificate for the front proxy client"),
}
RENEW_ETCD = {
    "apiserver-etcd-client": ("apiserver-etcd-client", "etcd/ca", "etcd-ca",
                              "certificate the apiserver uses to access etcd"),
    "etcd-healthcheck-client": ("etcd/healthcheck-client", "etcd/ca", "etcd-ca",
                                "certificate for liveness probes to healthcheck etcd"),
    "etcd-peer": ("etcd/peer", "etcd/ca", "etcd-ca",
                  "certificate for etcd nodes to communicate with each other"),
    "etcd-server": ("etcd/server", "etcd/ca", "etcd-ca", "certificate for serving etcd"),
}
EMBEDDED = "certificate embedded in the kubeconfig file for the"
RENEW_KUBECONFIG = {
    "admin.conf": f"{EMBEDDED} admin to use and for kubeadm itself",
    "controller-manager.conf": f"{EMBEDDED} controller manager to use",
    "scheduler.conf": f"{EMBEDDED} scheduler manager to use",
    "super-admin.conf": f"{EMBEDDED} super-admin",
}
CERT_DAYS = 365  # ClusterConfiguration.certificateValidityPeriod's default, 8760h
CERTS_VALUE_FLAGS = ("--cert-dir", "--config", "--kubeconfig", "--rootfs", "-o", "--output")


def _certs_args(argv: list[str], command: str) -> tuple[list[str], dict[str, str]]:
    """Positional arguments and the flags kubeadm certs takes (cobra's `unknown flag` otherwise)."""
    positional, flags = [], {}
    args = iter(argv)
    for arg in args:
        name, eq, value = arg.partition("=")
        if name in CERTS_VALUE_FLAGS:
            flags[name] = value if eq else next(args, "")
        elif name.startswith("-v") or name == "--v":
            continue
        elif name.startswith("-"):
            raise Failed(f"unknown flag: {name}")
        else:
            positional.append(arg)
    for name in ("--config", "--rootfs", "-o", "--output"):
        if flags.get(name):
            raise Failed(f"kubeadm certs {command} {name}: not emulated (LAB KUBE EMULATOR)")
    return positional, flags


def _open(path: Path) -> bytes:
    """A file's bytes, failing as Go's os.Open does (a non-root user cannot read a 0600 file of root's)."""
    try:
        if os.geteuid() != 0 and path.exists() and not path.stat().st_mode & 0o004:
            raise PermissionError
        return path.read_bytes()
    except FileNotFoundError:
        raise Failed(f"open {path}: no such file or directory") from None
    except PermissionError:
        raise Failed(f"open {path}: permission denied") from None


def _pem_cert(path: Path) -> Any:
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificate(_open(path))
    except ValueError as err:
        raise Failed(f"{path}: data does not contain any valid RSA or ECDSA certificates ({err})") from None


class _Certs:
    """kubeadm's renewal manager over `pki` and /etc/kubernetes, for this node's configuration."""

    def __init__(self, pki: Path, external_etcd: bool):
        self.pki = pki
        self.handlers: dict[str, tuple[str, str, str, str, str]] = {}  # name -> kind, file, ca, ca name, long
        for name, (base, ca, ca_name, long) in {**RENEW_PKI, **({} if external_etcd else RENEW_ETCD)}.items():
            self.handlers[name] = ("pki", base, ca, ca_name, long)
        for name, long in RENEW_KUBECONFIG.items():
            self.handlers[name] = ("kubeconfig", name, "ca", "ca", long)
        self.cas = sorted({(h[3], h[2]) for h in self.handlers.values()})  # (name, base)

    def path(self, name: str) -> Path:
        kind, base = self.handlers[name][:2]
        return KUBERNETES_DIR / base if kind == "kubeconfig" else self.pki / f"{base}.crt"

    def exists(self, name: str) -> bool:
        return self.path(name).is_file()

    def external(self, ca: str) -> bool:
        """kubeadm's UsingExternalCA / UsingExternalFrontProxyCA: the CA's certificate must load; no key
        means an external CA, which needs the certificates it signed present and valid."""
        try:
            _pem_cert(self.pki / f"{ca}.crt")
        except Failed as err:
            raise Failed(f"Error checking external CA condition for {ca} certificate authority: failure "
                         f"loading {ca} certificate: couldn't load the certificate file: {err}") from None
        if ca.startswith("etcd/") or (self.pki / f"{ca}.key").exists():
            return False
        signed = ("apiserver", "apiserver-kubelet-client") if ca == "ca" else ("front-proxy-client",)
        for name in signed:
            if not self.exists(name):
                raise Failed(f"Error checking external CA condition for {ca} certificate authority: failure "
                             f"loading certificate for {name}: couldn't load the certificate file "
                             f"{self.path(name)}: open {self.path(name)}: no such file or directory")
        return True

    def read(self, name: str) -> tuple[Any, dict[str, Any] | None]:
        """The current certificate (and, of a kubeconfig, the parsed file)."""
        from cryptography import x509

        path = self.path(name)
        if self.handlers[name][0] == "pki":
            try:
                return _pem_cert(path), None
            except Failed as err:
                raise Failed(f"failed to load existing certificate {self.handlers[name][1]}: {err}") from None
        try:
            doc = yaml.safe_load(_open(path)) or {}
            context = {c["name"]: c["context"] for c in doc.get("contexts") or []}[doc["current-context"]]
            cluster = {c["name"]: c["cluster"] for c in doc.get("clusters") or []}[context["cluster"]]
            user = {u["name"]: u["user"] for u in doc.get("users") or []}[context["user"]]
        except Failed as err:
            raise Failed(f"failed to load kubeConfig file {path}: {err}") from None
        except (KeyError, TypeError, yaml.YAMLError) as err:
            raise Failed(f"invalid kubeConfig file {path}: {err}") from None
        if not cluster.get("certificate-authority-data"):
            raise Failed(f"kubeConfig file {path} does not have an embedded server certificate")
        if not user.get("client-certificate-data"):
            raise Failed(f"kubeConfig file {path} does not have an embedded client certificate")
        try:
            cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
        except ValueError as err:
            raise Failed(f"kubeConfig file {path} does not contain a valid client certificate: "
                         f"{err}") from None
        return cert, doc

    def renew(self, name: str) -> bool:
        """kubeadm's RenewUsingLocalCA: False for an external CA (nothing written)."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        kind, base, ca = self.handlers[name][:3]
        if self.external(ca):
            return False
        old, doc = self.read(name)
        ca_cert = _pem_cert(self.pki / f"{ca}.crt")
        try:
            ca_key = serialization.load_pem_private_key(_open(self.pki / f"{ca}.key"), None)
        except Failed as err:
            raise Failed(f"failure loading {ca} certificate authority: couldn't load the private key file "
                         f"{self.pki / ca}.key: {err}") from None
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        builder = (x509.CertificateBuilder().subject_name(old.subject).issuer_name(ca_cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5))
                   .not_valid_after(now + dt.timedelta(days=CERT_DAYS)))
        kept = (x509.SubjectAlternativeName, x509.ExtendedKeyUsage, x509.KeyUsage)  # certToConfig's
        for extension in old.extensions:
            if isinstance(extension.value, kept):
                builder = builder.add_extension(extension.value, extension.critical)
        cert = builder.sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        if kind == "pki":
            _write(self.pki / f"{base}.crt", cert_pem.decode(), 0o644)
            _write(self.pki / f"{base}.key", key_pem.decode(), 0o600)
            return True
        assert doc is not None
        context = {c["name"]: c["context"] for c in doc["contexts"]}[doc["current-context"]]
        for entry in doc["clusters"]:
            if entry["name"] == context["cluster"]:
                entry["cluster"]["certificate-authority-data"] = base64.b64encode(
                    ca_cert.public_bytes(serialization.Encoding.PEM)).decode()
        for entry in doc["users"]:
            if entry["name"] == context["user"]:
                entry["user"]["client-certificate-data"] = base64.b64encode(cert_pem).decode()
                entry["user"]["client-key-data"] = base64.b64encode(key_pem).decode()
        _write(self.path(name), yaml.safe_dump(doc), 0o600)
        return True


def _certs_manager(command: str, flags: dict[str, str]) -> _Certs:
    """The cluster's configuration as kubeadm reads it (here: this control plane's apiserver.json, which
    names the external etcd), else kubeadm's fallback: the default configuration, with local etcd."""
    print(f"[{command}] Reading configuration from the cluster...")
    conf = _local_apiserver()
    if conf and ADMIN_CONF.is_file():
        print(f"[{command}] FYI: You can look at this config file with 'kubectl -n kube-system get cm "
              "kubeadm-config -o yaml'\n")
    else:
        print(f"[{command}] Error reading configuration from the Cluster. Falling back to default "
              "configuration\n")
    return _Certs(Path(flags.get("--cert-dir") or PKI), bool(conf.get("etcd")))


def _renew_one(certs: _Certs, name: str) -> None:
    """kubeadm's renewCert."""
    if name not in certs.handlers or not certs.exists(name):
        long = certs.handlers[name][4] if name in certs.handlers else RENEW_ETCD[name][3]
        print(f"MISSING! {long}")
        return
    ca, long = certs.handlers[name][2], certs.handlers[name][4]
    if not certs.renew(name):
        print(f"Detected external {ca}, {long} can't be renewed")
        return
    print(f"{long} renewed")


def cmd_certs_renew(argv: list[str]) -> int:
    """`kubeadm certs renew all|<name> [--cert-dir D] [--kubeconfig F]`."""
    positional, flags = _certs_args(argv, "renew")
    names = {*RENEW_PKI, *RENEW_ETCD, *RENEW_KUBECONFIG, "all"}
    if not positional:
        raise Failed('missing subcommand; "renew" is not meant to be run on its own')
    if positional[0] not in names:
        raise Failed(f'invalid subcommand: "{positional[0]}"')
    if len(positional) > 1:
        raise Failed(f'unknown command "{positional[1]}" for "kubeadm certs renew {positional[0]}"')
    certs = _certs_manager("renew", flags)
    if positional[0] != "all":
        _renew_one(certs, positional[0])
        return 0
    for name in sorted(certs.handlers):
        _renew_one(certs, name)
    _log_renewal(sorted(certs.handlers))
    print("\nDone renewing certificates. You must restart the kube-apiserver, kube-controller-manager, "
          "kube-scheduler and etcd, so that they can use the new certificates.")
    return 0


def _log_renewal(names: list[str]) -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    with RENEWALS.open("a") as fh:
        fh.write(json.dumps({"time": time.time(), "node": HOST, "names": names}) + "\n")


def _not_after(cert: Any) -> dt.datetime:
    """notAfter in UTC (the lab image's python3-cryptography 38 has no not_valid_after_utc)."""
    utc = getattr(cert, "not_valid_after_utc", None)
    return utc if utc is not None else cert.not_valid_after.replace(tzinfo=dt.UTC)


def _residual(not_after: dt.datetime) -> str:
    """apimachinery's duration.ShortHumanDuration of the time left."""
    seconds = (not_after - dt.datetime.now(dt.UTC)).total_seconds()
    if seconds < -1:
        return "<invalid>"
    for unit, size, limit in (("s", 1, 60), ("m", 60, 3600), ("h", 3600, 86400), ("d", 86400, 86400 * 365)):
        if seconds < limit:
            return f"{int(max(seconds, 0) // size)}{unit}"
    return f"{int(seconds // (86400 * 365))}y"


def _table(rows: list[list[str]]) -> str:
    """Go's tabwriter with minwidth 10, padding 3, as kubeadm prints its tables."""
    columns = max(len(r) for r in rows)
    widths = [max([10, *(len(r[i]) + 3 for r in rows if i < len(r) - 1)]) for i in range(columns)]
    return "\n".join("".join(cell.ljust(widths[i]) if i < len(row) - 1 else cell
                             for i, cell in enumerate(row)) for row in rows)


def cmd_certs_check_expiration(argv: list[str]) -> int:
    """`kubeadm certs check-expiration [--cert-dir D] [--kubeconfig F]`: the two tables kubeadm prints."""
    positional, flags = _certs_args(argv, "check-expiration")
    if positional:
        raise Failed(f'unknown command "{positional[0]}" for "kubeadm certs check-expiration"')
    certs = _certs_manager("check-expiration", flags)
    when = "%b %d, %Y %H:%M UTC"
    rows = [["CERTIFICATE", "EXPIRES", "RESIDUAL TIME", "CERTIFICATE AUTHORITY", "EXTERNALLY MANAGED"]]
    for name in sorted(certs.handlers):
        if not certs.exists(name):
            rows.append([f"!MISSING! {name}", "", "", "", ""])
            continue
        external = certs.external(certs.handlers[name][2])
        cert = certs.read(name)[0]
        rows.append([name, _not_after(cert).strftime(when), _residual(_not_after(cert)),
                     certs.handlers[name][3], "yes" if external else "no"])
    cas = [["CERTIFICATE AUTHORITY", "EXPIRES", "RESIDUAL TIME", "EXTERNALLY MANAGED"]]
    for ca_name, base in certs.cas:
        if not (certs.pki / f"{base}.crt").is_file():
            cas.append([f"!MISSING! {ca_name}", "", "", ""])
            continue
        cert = _pem_cert(certs.pki / f"{base}.crt")
        cas.append([ca_name, _not_after(cert).strftime(when), _residual(_not_after(cert)),
                    "yes" if certs.external(base) else "no"])
    print(_table(rows) + "\n\n" + _table(cas))
    return 0


def _flag(args: list[str], name: str, default: str | None = None) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def _positional(args: list[str], value_flags: tuple[str, ...]) -> list[str]:
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in value_flags:
            skip = True
        elif not arg.startswith("-"):
            out.append(arg)
    return out


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["version"]:
            long = f'kubeadm version: {{"GitVersion":"{VERSION}", "Note":"LAB KUBE EMULATOR"}}'
            print(VERSION if _flag(argv, "-o") == "short" else long)
            return 0
        if argv[:1] == ["__apiserver"]:
            return serve()
        config = _flag(argv, "--config")
        if argv[:2] == ["config", "validate"] and config:
            return cmd_validate(config)
        if argv[:3] == ["init", "phase", "upload-certs"]:
            return cmd_upload_certs(argv[3:])
        if argv[:1] == ["init"] and config:
            return cmd_init(config)
        if argv[:1] == ["join"] and config:
            return cmd_join(config)
        if argv[:1] == ["reset"]:
            return cmd_reset(argv[1:])
        if argv[:2] == ["upgrade", "apply"]:
            return cmd_upgrade_apply(argv[2:])
        if argv[:2] == ["upgrade", "node"]:
            return cmd_upgrade_node(argv[2:])
        if argv[:2] in (["certs", "renew"], ["certificates", "renew"]):
            return cmd_certs_renew(argv[2:])
        if argv[:2] in (["certs", "check-expiration"], ["certificates", "check-expiration"]):
            return cmd_certs_check_expiration(argv[2:])
        if argv[:2] == ["token", "list"] and _flag(argv, "-o") == "json":
            return cmd_token_list()
        if argv[:2] == ["token", "create"]:
            given = argv[2] if len(argv) > 2 and not argv[2].startswith("-") else None
            return cmd_token_create(given, _flag(argv, "--ttl", "24h0m0s") or "24h0m0s",
                                    _flag(argv, "--description", "") or "")
        if argv[:2] == ["token", "delete"]:
            return cmd_token_delete([a for a in _positional(argv[2:], ("--kubeconfig",))])
    except Failed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"kubeadm {' '.join(argv)}: not emulated (LAB KUBE EMULATOR: version, config validate, init, join, "
          "reset, upgrade apply|node, certs renew|check-expiration, token create|delete, token list -o json, "
          "init phase upload-certs, each "
          "with the flags the roles use)",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
