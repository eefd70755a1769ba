"""The lab's Go build (tests/lab_build): the wrapper modules against the pinned tags' go.mod, the cache,
the errors, the mirror layouts."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.lab_build import build as lab_build
from tests.lab_build import gomod, mirror
from tests.lab_build.components import BY_NAME, COMPONENTS, ETCD, KUBERNETES, Command, Component

UPSTREAM_K8S = """module k8s.io/kubernetes

go 1.24.0

godebug default=go1.24

require (
\tk8s.io/api v0.0.0
\tk8s.io/client-go v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
)
"""


def test_a_wrapper_made_from_the_tag_has_no_problem() -> None:
    wrapper = gomod.kubernetes_wrapper(UPSTREAM_K8S, "v1.34.4", "ufcctl.lab/kubernetes")
    assert "\tk8s.io/api => k8s.io/api v0.34.4" in wrapper
    assert gomod.problems(UPSTREAM_K8S, wrapper, "k8s.io/kubernetes", "v1.34.4") == []


@pytest.mark.parametrize(("edit", "problem"), [
    # a staging module the tag has and the wrapper forgot (1.37 added k8s.io/streaming this way)
    (lambda w: w.replace("\tk8s.io/client-go => k8s.io/client-go v0.34.4\n", ""),
     "k8s.io/client-go must be replaced by k8s.io/client-go v0.34.4 (has none)"),
    # a staging module left at another release
    (lambda w: w.replace("k8s.io/api v0.34.4", "k8s.io/api v0.33.0"), "k8s.io/api must be replaced"),
    # a module the tag no longer has
    (lambda w: w.replace("replace (", "replace (\n\tk8s.io/gone => k8s.io/gone v0.34.4"),
     "k8s.io/gone is replaced but is no staging module"),
    (lambda w: w.replace("godebug default=go1.24", "godebug default=go1.23"), "the godebug line"),
    (lambda w: w.replace("require k8s.io/kubernetes v1.34.4", "require k8s.io/kubernetes v1.34.3"),
     "k8s.io/kubernetes is required at v1.34.3, not v1.34.4"),
])
def test_the_check_names_what_a_wrapper_gets_wrong(edit, problem) -> None:
    wrapper = edit(gomod.kubernetes_wrapper(UPSTREAM_K8S, "v1.34.4", "ufcctl.lab/kubernetes"))
    found = gomod.problems(UPSTREAM_K8S, wrapper, "k8s.io/kubernetes", "v1.34.4")
    assert any(problem in line for line in found), found


def test_etcd_siblings_must_be_required_at_the_tag() -> None:
    upstream = ("module go.etcd.io/etcd/server/v3\n\nreplace (\n\tgo.etcd.io/etcd/api/v3 => ../api\n"
                "\tgo.etcd.io/etcd => ./FORBIDDEN_DEPENDENCY\n)\n")
    good = ("module x\n\nrequire (\n\tgo.etcd.io/etcd/server/v3 v3.6.17\n"
            "\tgo.etcd.io/etcd/api/v3 v3.6.17 // indirect\n)\n")
    assert gomod.problems(upstream, good, "go.etcd.io/etcd/server/v3", "v3.6.17") == []
    bad = good.replace("api/v3 v3.6.17", "api/v3 v3.6.16")
    assert gomod.problems(upstream, bad, "go.etcd.io/etcd/server/v3", "v3.6.17") == [
        "go.etcd.io/etcd/api/v3 must be required at v3.6.17 (has v3.6.16)"]


def test_staging_versions() -> None:
    assert gomod.staging_version("v1.35.4") == "v0.35.4"
    with pytest.raises(ValueError):
        gomod.staging_version("v3.6.17")


@pytest.mark.parametrize("component", [c for c in COMPONENTS if c.upstream], ids=lambda c: c.name)
def test_the_committed_wrappers_match_their_pinned_tags(component: Component) -> None:
    """The real check, against the tag's go.mod in Go's module cache (the lab build downloads it before
    any test runs: scripts/setup.sh); a missing cache entry fails, naming the command that fills it."""
    if shutil.which("go") is None:
        pytest.fail("go is not installed: scripts/setup.sh installs it")
    wrapper_file = component.module_path / "go.mod"
    if not wrapper_file.is_file():
        pytest.fail(f"{wrapper_file} is missing")
    try:
        upstream = gomod.upstream_gomod(component.upstream, component.tag, component.module_path,
                                        offline=True)
    except LookupError as exc:
        pytest.fail(f"{exc}: run `python -m tests.lab_build --only {component.name}` (downloads the modules)")
    assert gomod.problems(upstream, wrapper_file.read_text(), component.upstream, component.tag) == []


def test_kubernetes_binaries_are_stamped_with_their_tag() -> None:
    flags = " ".join(KUBERNETES.ldflags)
    assert "k8s.io/component-base/version.gitVersion=v1.34.4" in flags
    assert "k8s.io/component-base/version.gitMinor=34" in flags
    assert "k8s.io/client-go/pkg/version.gitVersion=v1.34.4" in flags
    # all static, the kubelet too (components.py says why)
    assert [c.name for c in KUBERNETES.commands if c.cgo] == []


def _fake_go(tmp_path: Path, monkeypatch, script: str) -> Path:
    """A `go` on PATH that answers `go env` and runs `script` (bash) for everything else."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    go = bindir / "go"
    go.write_text("#!/bin/bash\n"
                  'if [ "$1" = env ]; then shift; for v in "$@"; do case $v in GOVERSION) echo go1.99.0;; '
                  'GOOS) echo linux;; GOARCH) echo amd64;; GOPROXY) echo https://proxy.example;; esac; done; '
                  'exit 0; fi\n'
                  'echo "$@" >> "' + str(tmp_path / "calls") + '"\n' + script)
    go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    return tmp_path / "calls"


def _toy(tmp_path: Path) -> Component:
    module = tmp_path / "toy"
    module.mkdir()
    (module / "go.mod").write_text("module toy\n")
    comp = Component("toy", "toy", "example.com/toy", "v1.0.0", (Command("example.com/toy/cmd/a", "a"),))
    object.__setattr__(comp, "module_dir", str(module))  # absolute: HERE / abs == abs
    return comp


def test_a_second_build_is_a_cache_hit_and_runs_no_go_build(tmp_path, monkeypatch) -> None:
    calls = _fake_go(tmp_path, monkeypatch,
                     'if [ "$1" = build ]; then out="${@: -2:1}"; echo bin > "$out"; fi\n')
    comp = _toy(tmp_path)
    first = lab_build.build(comp, root=tmp_path / "cache", say=lambda _: None)
    assert not first.cached and first.binary("a").read_text() == "bin\n"
    assert first.record["binaries"]["a"]["sha256"] == hashlib.sha256(b"bin\n").hexdigest()
    assert "go1.99.0" in first.path.name and "v1.0.0" in first.path.name
    builds = calls.read_text().count("build ")
    second = lab_build.build(comp, root=tmp_path / "cache", say=lambda _: None)
    assert second.cached and second.path == first.path
    assert calls.read_text().count("build ") == builds  # nothing built
    # a changed pin (go.mod) is another cache entry
    (tmp_path / "toy" / "go.mod").write_text("module toy\n// v2\n")
    assert lab_build.build(comp, root=tmp_path / "cache", say=lambda _: None).path != first.path


def test_a_refused_module_is_named_with_its_tag(tmp_path, monkeypatch) -> None:
    _fake_go(tmp_path, monkeypatch, 'if [ "$1" = mod ]; then echo \'{"Path":"k8s.io/kubernetes","Version":'
             '"v1.34.4","Error":"not found: 410 Gone"}\'; exit 1; fi\n')
    with pytest.raises(lab_build.BuildError) as err:
        lab_build.build(_toy(tmp_path), root=tmp_path / "cache", say=lambda _: None)
    assert "k8s.io/kubernetes@v1.34.4: not found: 410 Gone" in str(err.value)
    assert "example.com/toy@v1.0.0" in str(err.value)
    assert not any((tmp_path / "cache").glob("toy-*/build.json"))  # no half entry left behind


def test_a_failed_compile_leaves_no_cache_entry(tmp_path, monkeypatch) -> None:
    _fake_go(tmp_path, monkeypatch,
             'if [ "$1" = build ]; then echo "cmd/a/main.go:3: undefined: x" >&2; exit 1; fi\n')
    with pytest.raises(lab_build.BuildError, match="a v1.0.0 failed .*undefined: x"):
        lab_build.build(_toy(tmp_path), root=tmp_path / "cache", say=lambda _: None)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [".toy.lock"]


def test_two_builds_of_one_component_at_once_build_it_once(tmp_path, monkeypatch) -> None:
    """setup.sh, a `lab up` and a test may ask for the same component together: the second waits for the
    first and takes the cache entry instead of compiling it again."""
    import threading

    calls = _fake_go(tmp_path, monkeypatch,
                     'if [ "$1" = build ]; then sleep 1; out="${@: -2:1}"; echo bin > "$out"; fi\n')
    comp = _toy(tmp_path)
    said: list[str] = []
    results = []

    def one() -> None:
        results.append(lab_build.build(comp, root=tmp_path / "cache", say=said.append))

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls.read_text().count("build ") == 1
    assert sorted(r.cached for r in results) == [False, True] and results[0].path == results[1].path
    assert any("being built by another process" in line for line in said)


def test_no_go_is_a_clear_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(lab_build.BuildError, match="go is not installed"):
        lab_build.build(_toy(tmp_path), root=tmp_path / "cache", say=lambda _: None)


def test_an_unknown_component_is_refused() -> None:
    with pytest.raises(lab_build.BuildError, match="no lab component 'kubelet'"):
        lab_build.select(["kubelet"])
    assert [c.name for c in lab_build.select(None)] == [c.name for c in COMPONENTS if c.default]


def _built(tmp_path: Path, comp: Component) -> lab_build.Built:
    folder = tmp_path / "built"
    folder.mkdir()
    for command in comp.commands:
        (folder / command.name).write_bytes(command.name.encode() * 3)
    (folder / "build.json").write_text(json.dumps({"seconds": 1}))
    return lab_build.Built(comp, folder, cached=True, seconds=1)


def test_kubernetes_is_published_in_dl_k8s_io_layout(tmp_path) -> None:
    built = _built(tmp_path, KUBERNETES)
    mirror.publish_kubernetes(built, tmp_path / "mirror", "amd64")
    folder = tmp_path / "mirror" / "kubernetes" / "v1.34.4" / "bin" / "linux" / "amd64"
    assert (folder / "kubeadm").read_bytes() == b"kubeadmkubeadmkubeadm"
    assert (folder / "kubeadm.sha256").read_text() == hashlib.sha256(b"kubeadm" * 3).hexdigest() + "\n"
    assert (folder / "kubelet").stat().st_mode & 0o111


def test_etcd_is_published_as_its_release_tarball_with_sha256sums(tmp_path) -> None:
    built = _built(tmp_path, ETCD)
    target = mirror.publish_etcd(built, tmp_path / "mirror", "amd64")
    assert target.name == "etcd-v3.6.17-linux-amd64.tar.gz"
    with tarfile.open(target) as tar:
        names = tar.getnames()
        assert tar.extractfile("etcd-v3.6.17-linux-amd64/etcdutl").read() == b"etcdutl" * 3
    assert set(names) == {"etcd-v3.6.17-linux-amd64"} | {f"etcd-v3.6.17-linux-amd64/{n}" for n in
                                                          ("etcd", "etcdctl", "etcdutl")}
    sums = (target.parent / "SHA256SUMS").read_text()
    assert sums == f"{hashlib.sha256(target.read_bytes()).hexdigest()}  {target.name}\n"
    # reproducible: the same build makes the same bytes
    assert mirror.build_etcd_tarball(built, "amd64") == target.read_bytes()
    assert io.BytesIO(target.read_bytes()).read(2) == b"\x1f\x8b"


def test_the_etcd_tarball_is_made_once_per_build_and_kept_beside_it(tmp_path, monkeypatch) -> None:
    built = _built(tmp_path, ETCD)
    name, first = mirror.etcd_tarball(built, "amd64")
    kept = built.path / f"release-{mirror.TARBALL_FORMAT}" / name
    assert kept.read_bytes() == first

    def build_again(*_args):
        raise AssertionError("made again although the build's folder keeps it")

    monkeypatch.setattr(mirror, "build_etcd_tarball", build_again)
    assert mirror.etcd_tarball(built, "amd64") == (name, first)
    assert mirror.publish_etcd(built, tmp_path / "other-mirror", "amd64").read_bytes() == first
    with pytest.raises(AssertionError, match="made again"):  # another arch is another tarball
        mirror.etcd_tarball(built, "arm64")


def test_every_component_is_listed_once() -> None:
    assert set(BY_NAME) == {c.name for c in COMPONENTS}
    assert len(BY_NAME) == len(COMPONENTS)


def test_a_wrapper_that_no_longer_matches_its_tag_stops_the_build_before_anything_builds(tmp_path,
                                                                                        monkeypatch) -> None:
    upstream = tmp_path / "upstream.mod"
    upstream.write_text(UPSTREAM_K8S)
    calls = _fake_go(tmp_path, monkeypatch, 'if [ "$1" = list ]; then echo \'{"GoMod": "' + str(upstream)
                     + '"}\'; exit 0; fi\n')
    module = tmp_path / "k8s"
    module.mkdir()
    wrapper = gomod.kubernetes_wrapper(UPSTREAM_K8S, "v1.34.4", "x").replace(
        "\tk8s.io/api => k8s.io/api v0.34.4\n", "")
    (module / "go.mod").write_text(wrapper)
    comp = Component("k", str(module), "k8s.io/kubernetes", "v1.34.4",
                     (Command("k8s.io/kubernetes/cmd/a", "a"),))
    with pytest.raises(lab_build.BuildError, match="k8s/go.mod does not build k8s.io/kubernetes v1.34.4: "
                       "k8s.io/api must be replaced"):
        lab_build.check_pins([comp])
    assert "build" not in calls.read_text()
    (module / "go.mod").write_text(gomod.kubernetes_wrapper(UPSTREAM_K8S, "v1.34.4", "x"))
    lab_build.check_pins([comp])  # matches: no error


def test_images_are_reproducible_oci_images_under_the_upstream_names(tmp_path) -> None:
    from tests.lab_build import images

    pause = images.pause_image(b"\x7fELF pause")
    assert pause.reference == "registry.k8s.io/pause:3.10.1"
    assert pause.registry == "registry.k8s.io" and pause.repository == "pause"
    config = json.loads(pause.config)
    assert config["config"]["Entrypoint"] == ["/pause"] and config["architecture"] == "amd64"
    assert images.pause_image(b"\x7fELF pause").digest == pause.digest  # same bytes, same digest
    with tarfile.open(fileobj=io.BytesIO(__import__("gzip").decompress(pause.layers[0]))) as tar:
        assert tar.extractfile("pause").read() == b"\x7fELF pause"
        assert tar.getmember("pause").mode == 0o755
    built = images.kubernetes_images({"kube-apiserver": b"a", "kubectl": b"c"}, "v1.34.4")
    assert [i.reference for i in built] == ["registry.k8s.io/kube-apiserver:v1.34.4"]
    with tarfile.open(fileobj=io.BytesIO(images.oci_archive([pause, *built]))) as tar:
        index = json.loads(tar.extractfile("index.json").read())
        names = {m["annotations"]["io.containerd.image.name"] for m in index["manifests"]}
        assert names == {"registry.k8s.io/pause:3.10.1", "registry.k8s.io/kube-apiserver:v1.34.4"}
        for image in (pause, *built):
            for digest in (image.digest, *image.blobs):
                assert tar.extractfile(f"blobs/sha256/{digest[7:]}") is not None


def test_a_program_of_ours_in_a_wrapper_is_part_of_its_cache_key(tmp_path) -> None:
    """kwok's wrapper builds kwok-stages from its own source: editing it must rebuild; a wrapper with
    only go.mod, go.sum and tools.go keeps the key it had before such programs were counted."""
    module = tmp_path / "wrapper"
    module.mkdir()
    for name in ("go.mod", "go.sum", "tools.go"):
        (module / name).write_text(f"{name}\n")
    component = Component("x", str(module), "example.com/x", "v1.0.0", ())
    plain = lab_build.module_hash(component)
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "tools.go"):
        digest.update(name.encode() + b"\0" + f"{name}\n".encode() + b"\0")
    assert plain == digest.hexdigest()[:12]  # the key of a wrapper without a program of ours
    (module / "stages").mkdir()
    (module / "stages" / "main.go").write_text("package main\n")
    with_program = lab_build.module_hash(component)
    assert with_program != plain
    (module / "stages" / "main.go").write_text("package main // edited\n")
    assert lab_build.module_hash(component) not in (plain, with_program)


def test_how_a_component_is_built_is_part_of_its_cache_key(tmp_path) -> None:
    """A kubelet built with cgo must not be served for a recipe that builds it static (or the other way):
    the version stamps and the cgo commands are in the key; a plain component's key is the module's."""
    module = tmp_path / "wrapper"
    module.mkdir()
    (module / "go.mod").write_text("module x\n")
    plain = Component("x", str(module), "example.com/x", "v1.0.0", (Command("example.com/x", "x"),))
    static = Component("x", str(module), "example.com/x", "v1.0.0", (Command("example.com/x", "x"),),
                       ("-X v=1",))
    cgo = Component("x", str(module), "example.com/x", "v1.0.0", (Command("example.com/x", "x", cgo=True),),
                    ("-X v=1",))
    restamped = Component("x", str(module), "example.com/x", "v1.0.0", (Command("example.com/x", "x"),),
                          ("-X v=2",))
    keys = {lab_build.module_hash(c) for c in (plain, static, cgo, restamped)}
    assert len(keys) == 4
    bare = hashlib.sha256()
    for name in ("go.mod", "go.sum", "tools.go"):
        bare.update(name.encode() + b"\0" + (b"module x\n" if name == "go.mod" else b"") + b"\0")
    assert lab_build.module_hash(plain) == bare.hexdigest()[:12]
