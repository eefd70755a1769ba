"""Reading what the in-node prepare script printed: systemd state, failed units, host key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ufcctl.lab.nodes import PREPARE_SCRIPT, Prepared, parse_prepare_output

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJWGdKHEdfnQVDHELz28y7c0cT8EmKmiiUzZw8uAy8zd"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (f"state=running\nhostkey={KEY} root@n1\n", Prepared("running", (), KEY)),
        (f"state=degraded\nfailed=a.service\nfailed=b.mount\nhostkey={KEY}\n",
         Prepared("degraded", ("a.service", "b.mount"), KEY)),
        ("state=starting\n", Prepared("starting", (), None)),
        ("state=running\nhostkey=\n", Prepared("running", (), None)),
        ("state=running\nhostkey=ssh-rsa AAAAB3\n", Prepared("running", (), None)),
        ("", Prepared("", (), None)),
    ],
    ids=["running", "degraded-with-units", "gave-up-booting", "no-host-key", "wrong-key-type", "no-output"],
)
def test_parse_prepare_output(output: str, expected: Prepared) -> None:
    assert parse_prepare_output(output) == expected


def test_script_takes_gateway_and_timeout_as_arguments() -> None:
    # Values reach the script as $1/$2, never pasted into its text (no quoting pitfalls).
    assert '"$1"' in PREPARE_SCRIPT and "$2" in PREPARE_SCRIPT
    assert "{" + "gateway" + "}" not in PREPARE_SCRIPT


def test_a_lab_node_can_run_containers_with_the_real_kubelet(tmp_path) -> None:
    """docs/reference/real-kubernetes.md §3: each of these is what a nested runc/kubelet failed without."""
    from ufcctl.lab.layout import plan_layout
    from ufcctl.lab.nodes import container_spec
    from ufcctl.lab.podman import Podman

    layout = plan_layout("ufc", 2)
    spec = container_spec(layout.nodes[0], layout, "img", {}, tmp_path)
    assert {"SYS_ADMIN", "SYS_RESOURCE", "SYSLOG"} <= set(spec.capabilities)
    assert ("/sys/fs/cgroup", "/sys/fs/cgroup") in spec.volumes
    assert spec.devices == ("/dev/kmsg",)
    assert spec.anonymous_volumes == ("/var/lib/containerd",)
    assert spec.command == ("/usr/local/sbin/ufcctl-lab-init",)
    calls = []

    class Recording(Podman):
        def run(self, args, **kwargs):
            calls.append(list(args))

    Recording().run_container(spec)
    args = calls[0]
    assert args[args.index("--device") + 1] == "/dev/kmsg"
    assert "type=volume,dst=/var/lib/containerd" in args
    assert "/sys/fs/cgroup:/sys/fs/cgroup:rw" in args
    assert args[args.index("--device-cgroup-rule") + 1] == "a *:* rwm"
    assert args[-1] == "/usr/local/sbin/ufcctl-lab-init"


def test_the_node_image_carries_the_init_and_the_runc_wrapper() -> None:
    from ufcctl.lab import image

    folder = Path(image.__file__).parent / "image"
    recipe = (folder / "Containerfile").read_text()
    assert 'CMD ["/usr/local/sbin/ufcctl-lab-init"]' in recipe
    assert "COPY sbin/runc /usr/local/sbin/runc" in recipe
    for name in ("ufcctl-lab-init", "runc"):
        assert (folder / "sbin" / name).stat().st_mode & 0o111, name


def test_the_runc_wrapper_raises_a_negative_oom_score_adj_only(tmp_path) -> None:
    import json
    import subprocess

    from ufcctl.lab import image

    wrapper = (Path(image.__file__).parent / "image" / "sbin" / "runc").read_text()
    fake = tmp_path / "runc-real"
    fake.write_text("#!/bin/sh\necho \"$@\" > " + str(tmp_path / "args") + "\n")
    fake.chmod(0o755)
    script = tmp_path / "runc"
    script.write_text(wrapper.replace('RUNC = "/usr/sbin/runc"', f'RUNC = "{fake}"'))
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for adj, want in ((-998, 0), (-1, 0), (0, 0), (1000, 1000)):
        (bundle / "config.json").write_text(json.dumps({"process": {"oomScoreAdj": adj, "args": ["/pause"]}}))
        subprocess.run(["python3", str(script), "--root", "/r", "create", "--bundle", str(bundle), "id1"],
                       check=True)
        spec = json.loads((bundle / "config.json").read_text())
        assert spec["process"] == {"oomScoreAdj": want, "args": ["/pause"]}
        expected = ["--root", "/r", "create", "--bundle", str(bundle), "id1"]
        assert (tmp_path / "args").read_text().split() == expected
    (bundle / "config.json").write_text(json.dumps({"process": {"oomScoreAdj": -998}}))
    subprocess.run(["python3", str(script), "state", "id1"], check=True)  # not a create: untouched
    assert json.loads((bundle / "config.json").read_text())["process"]["oomScoreAdj"] == -998


# The node init's step 0 (image/sbin/ufcctl-lab-init): the cgroup v1 hierarchies the host leaves unmounted
# get a root of each node's own, instead of the one root systemd in every node would mount and share.

PROC_CGROUPS = """#subsys_name\thierarchy\tnum_cgroups\tenabled
cpuset\t3\t1\t1
cpu\t1\t1\t1
cpuacct\t2\t1\t1
blkio\t7\t1\t1
memory\t4\t49\t1
devices\t5\t1\t1
freezer\t6\t1\t1
net_cls\t0\t1\t1
perf_event\t0\t1\t1
net_prio\t0\t1\t1
hugetlb\t0\t1\t1
pids\t8\t1\t1
rdma\t0\t1\t0
"""
MOUNTINFO = """31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime shared:9 - cgroup cgroup rw,cpuset
35 31 0:32 /libpod_parent/libpod-1 /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 23 0:39 / /mnt/hugetlb rw,relatime - cgroup cgroup rw,hugetlb
"""


def _init_root(tmp_path: Path, mountinfo: str = MOUNTINFO) -> Path:
    root = tmp_path / "root"
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "cgroups").write_text(PROC_CGROUPS)
    (root / "proc" / "self" / "mountinfo").write_text(mountinfo)
    (root / "sys" / "fs" / "cgroup" / "cpu").mkdir(parents=True)
    return root


INIT = Path(__file__).resolve().parents[3] / "ufcctl" / "lab" / "image" / "sbin" / "ufcctl-lab-init"
SOURCED_ONLY = "(return 0 2>/dev/null) && return 0"


def _source_init(tmp_path: Path, root: Path, call: str, refuse: str = "none"):
    """Source the node init with its root at `root` and call its functions. Its steps would mount over this
    machine's /sys and /proc and exec systemd: a script without the guard that stops a sourced run after
    its functions is not run, and `mount` is a fake that only logs (and refuses `-o <refuse>`)."""
    import subprocess

    assert SOURCED_ONLY in INIT.read_text(), "the init would run its steps when sourced"
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "mount").write_text(
        f'#!/bin/sh\necho "$*" >> {tmp_path / "mounts"}\ncase "$*" in *"-o {refuse} "*) exit 32 ;; esac\n')
    (fake_bin / "mount").chmod(0o755)
    env = {**os.environ, "UFC_LAB_INIT_ROOT": str(root), "PATH": f"{fake_bin}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", f'. "$0"; {call}', str(INIT)], env=env, capture_output=True,
                          text=True, timeout=30, check=False)


@pytest.mark.parametrize(("extra", "expected"), [
    ("", ["net_cls,net_prio", "perf_event", "hugetlb"]),
    ("43 31 0:40 / /sys/fs/cgroup/net_prio rw - cgroup cgroup rw,net_prio\n",
     ["net_cls", "perf_event", "hugetlb"]),
    ("43 31 0:40 / /sys/fs/cgroup/perf_event rw - cgroup cgroup rw,perf_event\n"
     "44 31 0:41 / /sys/fs/cgroup/hugetlb rw - cgroup cgroup rw,hugetlb\n"
     "45 31 0:42 / /sys/fs/cgroup/net_cls,net_prio rw - cgroup cgroup rw,net_cls,net_prio\n", []),
], ids=["host-leaves-four", "net_prio-mounted-alone", "all-mounted"])
def test_the_node_init_finds_the_v1_hierarchies_no_mount_holds(tmp_path: Path, extra: str,
                                                              expected: list[str]) -> None:
    # rdma is disabled; hugetlb mounted outside /sys/fs/cgroup does not count; sourcing runs no step
    proc = _source_init(tmp_path, _init_root(tmp_path, MOUNTINFO + extra), "unmounted_v1_hierarchies")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == expected


@pytest.mark.parametrize("refuse", ["none", "perf_event"])
def test_the_node_init_gives_the_node_a_root_of_its_own_in_each_unmounted_hierarchy(tmp_path: Path,
                                                                                    refuse: str) -> None:
    import socket

    root = _init_root(tmp_path)
    cg, own = root / "sys" / "fs" / "cgroup", f"ufcctl-lab-{socket.gethostname()}"
    stale = cg / "hugetlb" / own / "kubepods.slice" / "pod1"  # left by a former node of this name
    stale.mkdir(parents=True)
    proc = _source_init(tmp_path, root, 'own_unmounted_v1_hierarchies; echo "rc=$?"', refuse)
    assert proc.returncode == 0 and proc.stdout.strip() == "rc=0", proc.stderr
    every = ["net_cls,net_prio", "perf_event", "hugetlb"]
    done = [name for name in every if name != refuse]
    expected = []
    for name in every:
        expected.append(f"-t cgroup -o {name} cgroup {cg / name}")
        if name in done:
            expected += [f"--bind {cg / name / own} {cg / name}", f"--bind {cg / name} {cg / name / own}"]
    assert (tmp_path / "mounts").read_text().splitlines() == expected
    for name in done:
        assert (cg / name / own / "cgroup.procs").read_text().strip().isdigit()  # the init moved into it
    assert os.readlink(cg / "net_cls") == os.readlink(cg / "net_prio") == "net_cls,net_prio"
    assert not (cg / "hugetlb" / own / "kubepods.slice").exists()
    if refuse == "perf_event":  # optional: a warning, and the boot goes on
        assert "warning: cgroup v1 hierarchy perf_event: no root of this node's own" in proc.stderr
    else:
        assert proc.stderr == ""


def test_the_node_init_owns_the_unmounted_hierarchies_before_rebinding_the_hosts() -> None:
    text = INIT.read_text()
    body = text[text.index(SOURCED_ONLY):]
    assert body.index("host_cgroups=$(cat /proc/self/cgroup)") < body.index("own_unmounted_v1_hierarchies") \
        < body.index("while IFS=: read") < body.index("exec /lib/systemd/systemd")
