"""The wrapper modules' go.mod, checked against the pinned tag's own go.mod.

k8s.io/kubernetes requires its ~31 staging modules (k8s.io/api, k8s.io/client-go, ...) at v0.0.0 and
replaces each with `./staging/src/<module>`. Replace directives of a dependency are ignored, so a module
that requires k8s.io/kubernetes must itself replace each staging module by its published release, v0.X.Y
for Kubernetes v1.X.Y. The list changes between releases (1.37 added k8s.io/streaming), so it is read
from the tag's go.mod, never written by hand. etcd's server, etcdctl and etcdutl modules replace their
siblings with `../api` and so on but also require them at the same tag: the wrapper needs no replace,
only those requires at the tag.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

_LOCAL_REPLACE = re.compile(r"^\s*(\S+)(?:\s+\S+)?\s*=>\s*(\.\.?/\S*)\s*$", re.M)
_REPLACE = re.compile(r"^\s*(\S+)\s*=>\s*(\S+)\s+(v\S+)\s*$", re.M)
_REQUIRE = re.compile(r"^\s*(\S+)\s+(v\S+?)(?:\s*//.*)?$", re.M)
_GODEBUG = re.compile(r"^godebug\s+.*$", re.M)


def local_replaces(gomod: str) -> list[str]:
    """Modules an upstream go.mod replaces with a folder of its own tree (`=> ./staging/...`, `=> ../api`),
    in file order; `./FORBIDDEN_DEPENDENCY` guards (etcd's) are not modules anyone builds."""
    return [m for m, target in _LOCAL_REPLACE.findall(gomod) if "FORBIDDEN" not in target]


def staging_version(tag: str) -> str:
    """k8s.io/kubernetes v1.34.4 -> its staging modules' published v0.34.4."""
    match = re.fullmatch(r"v1\.(\d+\.\d+(?:-[0-9A-Za-z.-]+)?)", tag)
    if not match:
        raise ValueError(f"not a Kubernetes release tag: {tag!r}")
    return f"v0.{match.group(1)}"


def replaces(gomod: str) -> dict[str, str]:
    """module -> version of every `module => module version` line of a go.mod."""
    return {m: v for m, target, v in _REPLACE.findall(gomod) if m == target}


def requires(gomod: str) -> dict[str, str]:
    """module -> version of the require block(s)."""
    found: dict[str, str] = {}
    for block in re.findall(r"^require\s*\((.*?)^\)", gomod, re.M | re.S):
        found.update(_REQUIRE.findall(block))
    found.update(re.findall(r"^require\s+(\S+)\s+(v\S+)", gomod, re.M))
    return found


def godebug(gomod: str) -> str | None:
    match = _GODEBUG.search(gomod)
    return match.group(0) if match else None


def problems(upstream_gomod: str, wrapper_gomod: str, upstream: str, tag: str) -> list[str]:
    """What the wrapper's go.mod gets wrong for the upstream tag's go.mod; [] when it builds that tag.

    Kubernetes: every staging module replaced by itself at v0.X.Y, nothing else replaced, the tag's
    godebug line kept. etcd (and any module whose siblings are published at the same tag): every
    sibling the upstream replaces locally is required at the tag."""
    found: list[str] = []
    wanted_require = requires(wrapper_gomod).get(upstream)
    if wanted_require != tag:
        found.append(f"{upstream} is required at {wanted_require or 'no version'}, not {tag}")
    local = local_replaces(upstream_gomod)
    have = replaces(wrapper_gomod)
    if upstream == "k8s.io/kubernetes":
        version = staging_version(tag)
        for module in local:
            if have.get(module) != version:
                has = have.get(module) or "none"
                found.append(f"{module} must be replaced by {module} {version} (has {has})")
        for module in sorted(set(have) - set(local)):
            found.append(f"{module} is replaced but is no staging module of {upstream} {tag}")
        if godebug(upstream_gomod) != godebug(wrapper_gomod):
            found.append(f"the godebug line must be {godebug(upstream_gomod)!r} as in {upstream} {tag}")
    else:
        required = requires(wrapper_gomod)
        for module in local:
            if required.get(module) != tag:
                found.append(f"{module} must be required at {tag} (has {required.get(module) or 'none'})")
    return found


def upstream_gomod(module: str, tag: str, module_dir: Path, offline: bool = False) -> str:
    """The tag's go.mod (`go list -m -json`: the go.mod alone, not the module's source); offline: Go's
    module cache only."""
    env = dict(os.environ)
    if offline:
        env["GOPROXY"] = "off"
    proc = subprocess.run(["go", "list", "-m", "-json", f"{module}@{tag}"], cwd=module_dir, env=env,
                          capture_output=True, text=True, check=False)
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError:
        info = {}
    if proc.returncode != 0 or "GoMod" not in info:
        reason = info.get("Error") or (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise LookupError(f"{module}@{tag}: {reason}")
    return Path(info["GoMod"]).read_text(encoding="utf-8")


def kubernetes_wrapper(upstream: str, tag: str, module_name: str) -> str:
    """A wrapper go.mod for k8s.io/kubernetes at `tag` (before `go mod tidy` adds the indirect requires)."""
    version = staging_version(tag)
    go_line = re.search(r"^go\s+\S+$", upstream, re.M)
    lines = [f"module {module_name}", "", go_line.group(0) if go_line else "go 1.24.0", ""]
    if godebug(upstream):
        lines += [godebug(upstream) or "", ""]
    lines += [f"require k8s.io/kubernetes {tag}", "", "replace ("]
    lines += [f"\t{m} => {m} {version}" for m in local_replaces(upstream)]
    lines += [")", ""]
    return "\n".join(lines)
