#!/usr/bin/python
"""Make one image present in a containerd namespace with ctr, through the node's registry mirrors."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: ufc_ctr_image
short_description: Pull one image into containerd (namespace k8s.io) unless it is already there
description:
  - Reads `ctr -n <namespace> images ls`; an image already listed under its reference (with the
    pinned digest when the reference has one) is left alone. Otherwise runs
    `ctr -n <namespace> images pull --hosts-dir <hosts_dir> <ref>`, so the node's
    certs.d/<registry>/hosts.toml mirrors (its registry caches) are used, then checks the image is
    listed with a digest (the pinned one, if any).
  - A tag reference already present is not pulled again (its digest is reported); pin a digest
    (name:tag@sha256:...) to make a moved tag count as missing.
  - >-
    unpack=false runs `ctr content fetch` instead (same resolver and mirrors, content and image
    record only; the CRI unpacks when a container starts): for hosts that may not mount (containers
    without CAP_SYS_ADMIN).
  - Check mode runs only the listing.
options:
  ref: {type: str, required: true, description: "Fully qualified, e.g. docker.io/library/busybox:1.36."}
  namespace: {type: str, default: k8s.io, description: containerd namespace (the CRI's is k8s.io).}
  hosts_dir: {type: str, default: /etc/containerd/certs.d, description: Per-registry hosts.toml files.}
  plain_http: {type: bool, default: false, description: "--plain-http (http, no hosts.toml)."}
  timeout: {type: int, default: 1800, description: Seconds the pull may take.}
  unpack: {type: bool, default: true, description: "Unpack into the snapshotter (false: content fetch)."}
"""


def listed(output):
    """REF -> DIGEST from `ctr images ls` (columns REF TYPE DIGEST SIZE PLATFORMS LABELS)."""
    images = {}
    for line in output.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 3 and fields[2].startswith("sha256:"):
            images[fields[0]] = fields[2]
    return images


def pinned(ref):
    """The digest a reference pins (name[:tag]@sha256:...), or None."""
    _, sep, digest = ref.rpartition("@")
    return digest if sep and digest.startswith("sha256:") else None


def present(images, ref):
    """The digest of ref in the listing when it satisfies ref, else None."""
    digest = images.get(ref)  # ctr names an image by the reference it was pulled as
    want = pinned(ref)
    if digest is None or (want is not None and digest != want):
        return None
    return digest


def main():
    module = AnsibleModule(
        argument_spec={
            "ref": {"type": "str", "required": True},
            "namespace": {"type": "str", "default": "k8s.io"},
            "hosts_dir": {"type": "str", "default": "/etc/containerd/certs.d"},
            "plain_http": {"type": "bool", "default": False},
            "timeout": {"type": "int", "default": 1800},
            "unpack": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    ctr = module.get_bin_path("ctr", required=True)
    ref, ns = p["ref"], p["namespace"]

    def listing():
        rc, out, err = module.run_command([ctr, "-n", ns, "images", "ls"])
        if rc != 0:
            module.fail_json(msg=f"ctr -n {ns} images ls: rc {rc}: {(err or out).strip()[-300:]}")
        return listed(out)

    before = present(listing(), ref)
    if before is not None:
        module.exit_json(changed=False, ref=ref, digest=before, pulled=False,
                         msg=f"{ref}: already in {ns} ({before})")
    if module.check_mode:
        module.exit_json(changed=True, ref=ref, digest=None, pulled=False, msg=f"{ref}: would be pulled")
    verb = ["images", "pull"] if p["unpack"] else ["content", "fetch"]
    cmd = [ctr, "-n", ns, *verb, "--hosts-dir", p["hosts_dir"]]
    if p["plain_http"]:
        cmd.append("--plain-http")
    cmd.append(ref)
    # `timeout` bounds a pull hung on a dead mirror; ctr itself has no overall deadline
    rc, out, err = module.run_command(["timeout", str(p["timeout"])] + cmd)
    if rc != 0:
        tail = (err or out).strip().splitlines()[-1:] or ["no output"]
        why = "timed out after {}s".format(p["timeout"]) if rc == 124 else f"rc {rc}: {tail[0][-300:]}"
        module.fail_json(msg=f"{ref}: pull failed: {why}", cmd=" ".join(cmd))
    after = present(listing(), ref)
    if after is None:
        module.fail_json(msg="{}: pulled, but ctr -n {} images ls does not list it{}".format(
            ref, ns, " with " + pinned(ref) if pinned(ref) else ""))
    module.exit_json(changed=True, ref=ref, digest=after, pulled=True,
                     msg=f"{ref}: pulled into {ns} ({after})")


if __name__ == "__main__":
    main()
