"""Build the lab's real components from their Go modules, once per machine.

Each component is built into a cache folder named by component, tag, Go version, platform and a hash of
its wrapper module (go.mod, go.sum, tools.go): a second build with the same inputs builds nothing.
Go's own caches (GOCACHE, GOMODCACHE) make a rebuild after a pin change incremental.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tests.lab_build import gomod
from tests.lab_build.components import BY_NAME, COMPONENTS, Component
from ufcctl.engine.files import open_lock

CACHE_ENV = "UFC_LAB_BUILD_CACHE"
MANIFEST = "build.json"
# how often a running build says it is alive
PROGRESS_EVERY = 30.0


class BuildError(Exception):
    """A build that could not be done; the message names the module, the tag and what to do."""


@dataclass(frozen=True)
class Built:
    component: Component
    path: Path           # the cache folder holding the binaries and build.json
    cached: bool         # True: found, nothing built
    seconds: float       # build time (the recorded one when cached)

    def binary(self, name: str) -> Path:
        return self.path / name

    @property
    def record(self) -> dict:
        return json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))


def lab_cache(env_name: str, folder: str) -> Path:
    """$env_name when set, else <XDG cache>/ufcctl-lab/<folder>: what the lab built or fetched."""
    env = os.environ.get(env_name)
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "ufcctl-lab" / folder


def cache_root() -> Path:
    return lab_cache(CACHE_ENV, "components")


def go_env(*names: str) -> list[str]:
    try:
        proc = subprocess.run(["go", "env", *names], capture_output=True, text=True, check=False, timeout=60)
    except FileNotFoundError:
        raise BuildError("go is not installed: the lab builds Kubernetes and etcd from their Go modules "
                         "(install Go 1.26 or newer, e.g. Debian's golang or go.dev's tarball)") from None
    if proc.returncode != 0:
        raise BuildError(f"`go env` failed: {proc.stderr.strip()}")
    return proc.stdout.splitlines()


def module_hash(component: Component) -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "tools.go"):
        path = component.module_path / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b"") + b"\0")
    # a program of our own in the wrapper module (kwok's stages): its source too; a module without one
    # keeps the key it had
    for path in sorted(component.module_path.rglob("*.go")):
        if path.name != "tools.go":
            name = path.relative_to(component.module_path).as_posix()
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    # how it is built, where it is not the plain `go build` (version stamps, cgo): a changed recipe builds
    # again; a plain component keeps the key it had before the recipe was counted
    if component.ldflags or any(c.cgo for c in component.commands):
        recipe = {"ldflags": list(component.ldflags),
                  "cgo": sorted(c.name for c in component.commands if c.cgo)}
        digest.update(b"recipe\0" + json.dumps(recipe, sort_keys=True).encode() + b"\0")
    return digest.hexdigest()[:12]


def cache_dir(component: Component, goversion: str, goos: str, goarch: str, root: Path | None = None) -> Path:
    key = f"{component.name}-{component.tag}-{goversion}-{goos}_{goarch}-{module_hash(component)}"
    return (root or cache_root()) / key


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _run(argv: list[str], cwd: Path, env: dict[str, str], what: str, say: Callable[[str], None]) -> str:
    """Run a go command, saying every PROGRESS_EVERY seconds how long it has run and how many packages
    it has compiled (`go build -v` prints each); its stderr on failure."""
    start = time.monotonic()
    lines: list[str] = []
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    done = threading.Event()

    def tick() -> None:
        while not done.wait(PROGRESS_EVERY):
            say(f"  {what}: {_clock(time.monotonic() - start)}, {len(lines)} packages")

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
    rc = proc.wait()
    done.set()
    if rc != 0:
        errors = [line for line in lines if line and not line.startswith(("k8s.io/", "go.etcd.io/"))] or lines
        raise BuildError(f"{what} failed (exit {rc}): " + " | ".join(errors[-6:]))
    return "\n".join(lines)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def download(component: Component, env: dict[str, str]) -> None:
    """Fetch the module graph first, so a proxy that refuses a module is named as such."""
    proc = subprocess.run(["go", "mod", "download", "-json"], cwd=component.module_path, env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        return
    refused = []
    decoder = json.JSONDecoder()
    text = proc.stdout
    pos = 0
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            info, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        if info.get("Error"):
            refused.append(f"{info.get('Path')}@{info.get('Version')}: {info['Error']}")
    reason = refused[0] if refused else (proc.stderr.strip().splitlines() or ["no output"])[-1]
    raise BuildError(f"the Go module proxy ({env.get('GOPROXY') or 'GOPROXY'}) did not serve what "
                     f"{component.upstream}@{component.tag} needs: {reason}")


def cached(component: Component, root: Path | None = None) -> Built | None:
    """The component's cache entry for this machine's Go, or None when it has not been built."""
    goversion, goos, goarch = go_env("GOVERSION", "GOOS", "GOARCH")
    target = cache_dir(component, goversion, goos, goarch, root)
    if not (target / MANIFEST).is_file():
        return None
    record = json.loads((target / MANIFEST).read_text(encoding="utf-8"))
    return Built(component, target, cached=True, seconds=float(record.get("seconds", 0)))


def check_pins(components: Iterable[Component] = COMPONENTS) -> None:
    """Every wrapper module against its tag's go.mod (fetched: a few KB each), built or not: a pin that
    the proxy does not serve, or a replace list that no longer matches the tag, is named before anything
    builds (and the unit test finds the go.mod files in Go's module cache)."""
    for component in components:
        if not component.upstream:
            continue
        try:
            upstream = gomod.upstream_gomod(component.upstream, component.tag, component.module_path)
        except LookupError as exc:
            raise BuildError(f"the Go module proxy did not serve {exc}") from None
        wrong = gomod.problems(upstream, (component.module_path / "go.mod").read_text(encoding="utf-8"),
                               component.upstream, component.tag)
        if wrong:
            raise BuildError(f"{component.module_dir}/go.mod does not build {component.upstream} "
                             f"{component.tag}: {'; '.join(wrong[:3])}")


def build(component: Component, root: Path | None = None, say: Callable[[str], None] = print,
          force: bool = False) -> Built:
    if not force and (found := cached(component, root)) is not None:
        return found
    goversion, goos, goarch = go_env("GOVERSION", "GOOS", "GOARCH")
    target = cache_dir(component, goversion, goos, goarch, root)
    target.parent.mkdir(parents=True, exist_ok=True)
    # One build of a component at a time on a machine (setup.sh, a `lab up` and a test may all ask for
    # it): a second caller waits for the first and takes its result from the cache
    fd = open_lock(target.parent / f".{component.name}.lock")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"lab build: {component.name} {component.tag} is being built by another process; waiting")
            fcntl.flock(fd, fcntl.LOCK_EX)
        if not force and (found := cached(component, root)) is not None:
            return found
        return _build(component, target, say)
    finally:
        os.close(fd)


def _build(component: Component, target: Path, say: Callable[[str], None]) -> Built:
    goversion, goos, goarch, goproxy = go_env("GOVERSION", "GOOS", "GOARCH", "GOPROXY")
    env = dict(os.environ, GOFLAGS="-mod=mod -buildvcs=false", GOPROXY=goproxy)
    say(f"lab build: {component.name} {component.tag} ({component.upstream}) with {goversion}; the first "
        "build on a machine takes many minutes, later ones are cached")
    start = time.monotonic()
    download(component, env)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        ldflags = " ".join(("-s", "-w", *component.ldflags))
        # the static binaries first, then the cgo ones (kubelet), as upstream builds them
        for command in sorted(component.commands, key=lambda c: c.cgo):
            argv = ["go", "build", "-v", "-trimpath", "-ldflags", ldflags, "-o",
                    str(staging / command.name), command.package]
            _run(argv, component.module_path, dict(env, CGO_ENABLED="1" if command.cgo else "0"),
                 f"{command.name} {component.tag}", say)
        seconds = time.monotonic() - start
        record = {
            "component": component.name, "upstream": component.upstream, "tag": component.tag,
            "go": goversion, "platform": f"{goos}/{goarch}", "seconds": round(seconds, 1),
            # the largest process go ran (a compile or a link), in MiB
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
            "binaries": {c.name: {"bytes": (staging / c.name).stat().st_size,
                                  "sha256": _sha256(staging / c.name)} for c in component.commands},
        }
        (staging / MANIFEST).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        staging.chmod(0o755)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    say(f"lab build: {component.name} {component.tag} built in {_clock(seconds)}")
    return Built(component, target, cached=False, seconds=seconds)


def select(only: Iterable[str] | None) -> list[Component]:
    if not only:
        return [c for c in COMPONENTS if c.default]
    chosen = []
    for name in only:
        if name not in BY_NAME:
            raise BuildError(f"no lab component {name!r}: choose from {', '.join(BY_NAME)}")
        chosen.append(BY_NAME[name])
    return chosen


def build_all(only: Iterable[str] | None = None, root: Path | None = None,
              say: Callable[[str], None] = print) -> dict[str, Built]:
    return {c.name: build(c, root, say) for c in select(only)}


def _images(built: dict[str, Built], out: Path, say: Callable[[str], None]) -> dict[str, dict]:
    """The images of every Kubernetes tag in `built` (tests/lab_build/archives.py), by component name."""
    from tests.lab_build.archives import write_kubernetes_images
    from tests.lab_build.debs import DebError
    from tests.lab_build.netfilter import NetfilterError, Userspace, kube_proxy_userspace

    records: dict[str, dict] = {}
    userspace: dict[str, Userspace] = {}  # by arch: every tag's kube-proxy gets the same files
    try:
        for name, b in built.items():
            if b.component.upstream == "k8s.io/kubernetes":
                arch = b.record["platform"].split("/")[1]
                if arch not in userspace:
                    userspace[arch] = kube_proxy_userspace(arch, say=say)
                records[name] = write_kubernetes_images(b, out, userspace[arch], arch, say)
    except (DebError, NetfilterError) as exc:
        raise BuildError(f"kube-proxy's image: {exc}") from None
    return records


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.lab_build",
                                     description="Build the lab's Kubernetes and etcd from their Go modules.")
    parser.add_argument("--only", help="comma-separated components (default: "
                        + ", ".join(c.name for c in COMPONENTS if c.default) + ")")
    parser.add_argument("--json", action="store_true", help="print the build records as JSON")
    parser.add_argument("--force", action="store_true", help="build again even when cached")
    parser.add_argument("--images", metavar="DIR", type=Path,
                        help="also write each built Kubernetes tag's images (the control plane, and "
                        "kube-proxy with Debian 12's iptables) as an OCI archive and a record into DIR")
    args = parser.parse_args(argv)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    try:
        components = select(args.only.split(",") if args.only else None)
        check_pins()
        built = {c.name: build(c, say=say, force=args.force) for c in components}
        images = _images(built, args.images, say) if args.images else {}
    except BuildError as exc:
        print(f"lab build: {exc}", file=sys.stderr)
        return 1
    if args.json:
        records = {name: dict(b.record, path=str(b.path), cached=b.cached,
                              **({"images": images[name]} if name in images else {}))
                   for name, b in built.items()}
        print(json.dumps(records,
                         indent=1))
    else:
        for name, b in built.items():
            state = "cached" if b.cached else "built"
            print(f"{name} {b.component.tag}: {state} ({_clock(b.seconds)} to build) in {b.path}")
    return 0
