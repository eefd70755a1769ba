"""Reading what the in-node prepare script printed: systemd state, failed units, host key."""

from __future__ import annotations

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
