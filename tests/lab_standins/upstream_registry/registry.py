"""LAB UPSTREAM REGISTRY: Debian's docker-registry (distribution 2.8) as a plain registry in a lab
container, with access logging, and a parser for its log.

The registry is not a pull-through cache here: it is the upstream the caches and nodes pull from.
`start_in_container` writes the configuration with `podman exec` and starts
`/usr/bin/docker-registry serve <config>` detached inside the container, stdout and stderr to
LOG_PATH; `blob_gets(read_log(...))` counts the blob downloads per client address.

docker-registry writes two lines per request: the access log (Apache combined format, on stdout:
`10.88.0.1 - - [25/Nov/2026:22:50:00 +0000] "GET /v2/x/blobs/sha256:... HTTP/1.1" 200 6291891 "" "ctr"`)
and its own "response completed" entry (logrus text format, on stderr, with
`http.request.remoteaddr=... http.request.method=GET http.request.uri=... http.response.status=200`).
The parser reads both; counts use one source so a request is never counted twice.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

BINARY = "/usr/bin/docker-registry"
CONFIG_PATH = "/etc/ufc-lab-upstream-registry.yml"
LOG_PATH = "/var/log/ufc-lab-upstream-registry.log"
ROOT_DIR = "/var/lib/ufc-lab-upstream-registry"
DEFAULT_PORT = 5000
ACCESS = "access"
APP = "app"


def config_yaml(port: int = DEFAULT_PORT, root_dir: str = ROOT_DIR) -> str:
    """A plain (no proxy section) registry on :port, filesystem storage, access log on, info level."""
    return (
        "# LAB UPSTREAM REGISTRY (ufcctl lab tests): plain registry, not a cache\n"
        "version: 0.1\n"
        "log:\n"
        "  level: info\n"
        "  formatter: text\n"
        "  accesslog:\n"
        "    disabled: false\n"
        "storage:\n"
        "  filesystem:\n"
        f"    rootdirectory: {root_dir}\n"
        "  delete:\n"
        "    enabled: true\n"
        "http:\n"
        f"  addr: :{port}\n"
    )


def command(config_path: str = CONFIG_PATH) -> list[str]:
    return [BINARY, "serve", config_path]


def start_script(port: int = DEFAULT_PORT, config_path: str = CONFIG_PATH, log_path: str = LOG_PATH,
                 root_dir: str = ROOT_DIR) -> str:
    """Shell (run as root in the container): write the config, start the registry in the background."""
    cmd = " ".join(shlex.quote(c) for c in command(config_path))
    return (
        f"test -x {BINARY} || {{ echo '{BINARY} missing: rebuild the lab image' >&2; exit 3; }}\n"
        f"mkdir -p {shlex.quote(root_dir)}\n"
        f"cat > {shlex.quote(config_path)} <<'UFC_EOF'\n{config_yaml(port, root_dir)}UFC_EOF\n"
        f"nohup {cmd} >>{shlex.quote(log_path)} 2>&1 </dev/null &\n"
    )


def start_in_container(container: str, port: int = DEFAULT_PORT, podman: str = "podman") -> None:
    """Start the registry inside a running lab container (docker-registry from the lab image)."""
    done = subprocess.run([podman, "exec", container, "sh", "-c", start_script(port)],
                          capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"starting docker-registry in {container}: rc {done.returncode}: "
                           f"{(done.stderr or done.stdout).strip()[-300:]}")


def ensure_running(container: str, address: str, port: int = DEFAULT_PORT, podman: str = "podman") -> bool:
    """Start the registry in `container` unless http://address:port/v2/ already answers; True when it
    was started. `lab up` calls it for the mirror container, so the registry caches' upstream exists
    before a deploy starts them (docker-registry 2.8 in proxy mode exits when its upstream does not
    answer at start)."""
    base = f"http://{address}:{port}"
    try:
        wait_ready(base, timeout=1)
        return False
    except TimeoutError:
        start_in_container(container, port, podman=podman)
        wait_ready(base)
        return True


def wait_ready(base_url: str, timeout: float = 30.0) -> None:
    """Until GET <base_url>/v2/ answers 200 (the API version check)."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url.rstrip('/')}/v2/", timeout=2) as response:  # noqa: S310
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
        except (urllib.error.URLError, OSError) as err:
            last = str(getattr(err, "reason", err))
        time.sleep(0.2)
    raise TimeoutError(f"{base_url}/v2/ not ready after {timeout:.0f} s: {last}")


def read_log(container: str, log_path: str = LOG_PATH, podman: str = "podman") -> list[str]:
    done = subprocess.run([podman, "exec", container, "cat", log_path], capture_output=True, text=True,
                          timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"reading {log_path} in {container}: {done.stderr.strip()[-300:]}")
    return done.stdout.splitlines()


@dataclass(frozen=True)
class Request:
    source: str  # ACCESS (combined access log) or APP (logrus "response completed")
    remote: str  # client address, without port
    method: str
    uri: str
    status: int


_COMBINED = re.compile(r'^(?P<remote>\S+) \S+ \S+ \[[^\]]*\] "(?P<method>[A-Z]+) (?P<uri>\S+) [^"]*" '
                       r"(?P<status>\d{3}) ")
_FIELD = re.compile(r'(?P<key>[\w.]+)=(?P<value>"(?:[^"\\]|\\.)*"|\S*)')
_BLOB = re.compile(r"^/v2/.+/blobs/sha256:[0-9a-f]{64}(?:\?.*)?$")


def _host(addr: str) -> str:
    """An address without its port: 10.0.0.1:41234 -> 10.0.0.1, [fd00::1]:5 -> fd00::1."""
    if addr.startswith("["):
        return addr[1:addr.find("]")] if "]" in addr else addr
    return addr.rsplit(":", 1)[0] if addr.count(":") == 1 else addr


def parse_line(line: str) -> Request | None:
    """One request from a log line of either format, or None for any other line."""
    match = _COMBINED.match(line)
    if match:
        return Request(ACCESS, _host(match["remote"]), match["method"], match["uri"], int(match["status"]))
    if "response completed" not in line:
        return None
    fields = {m["key"]: m["value"].strip('"') for m in _FIELD.finditer(line)}
    try:
        return Request(APP, _host(fields["http.request.remoteaddr"]), fields["http.request.method"],
                       fields["http.request.uri"], int(fields["http.response.status"]))
    except (KeyError, ValueError):
        return None


def requests(lines: Iterable[str], source: str = ACCESS) -> list[Request]:
    return [r for r in map(parse_line, lines) if r is not None and r.source == source]


def blob_gets(lines: Iterable[str], source: str = ACCESS, statuses: tuple[int, ...] = (200,)) -> Counter[str]:
    """Successful blob downloads (GET /v2/<name>/blobs/sha256:...) per client address."""
    return Counter(r.remote for r in requests(lines, source)
                   if r.method == "GET" and r.status in statuses and _BLOB.match(r.uri))
