#!/usr/bin/env bash
# Set up a fresh Debian 12 machine for ufcctl: system packages and a venv (.venv) with the package
# and its test dependencies, plus Debian's victoria-metrics binaries (vmalert) unpacked into
# .venv/opt/victoria-metrics for the rule tests. Safe to rerun: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(podman runc netavark aardvark-dns debootstrap uidmap slirp4netns fuse-overlayfs containernetworking-plugins
              openssh-client iproute2 ca-certificates git)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Each lab node (systemd as PID 1) holds ~6 inotify instances charged to root; Debian's default of
# 128 stops systemd booting at about 20 containers (ufcctl/lab/nodes.py). Raise it, never lower it.
if [ "$(id -u)" -eq 0 ] && [ "$(sysctl -n fs.inotify.max_user_instances)" -lt 1024 ]; then
  sysctl -q -w fs.inotify.max_user_instances=1024
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.ufcctl-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing ufcctl and test dependencies into .venv"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -e '.[test]'
  touch "$stamp"
fi
# The monitoring tests run `vmalert -dryRun` on the rendered rules (tests/unit/domain/monitoring). Unpack
# the package rather than install it: installing would enable and start a victoria-metrics service.
VM_DIR=.venv/opt/victoria-metrics
if [ ! -x "$VM_DIR/usr/bin/vmalert" ]; then
  echo "setup: unpacking victoria-metrics (vmalert) into $VM_DIR"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq victoria-metrics)
  mkdir -p "$VM_DIR"
  dpkg-deb -x "$tmp"/victoria-metrics_*.deb "$VM_DIR"
  rm -rf "$tmp"
fi
# The lab's real components (etcd, Kubernetes, kwok, the pause program) built from their Go modules at
# pinned tags (tests/lab_build): ~12 min on a machine's first run (2 cores), a cache hit after that.
command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"  # go.dev's tarball's place
if ! command -v go >/dev/null 2>&1; then
  echo "setup: go is not installed: the lab builds etcd and Kubernetes from their Go modules; install Go" \
       "1.26 or newer from go.dev (Debian 12's golang-go is 1.19, too old)" >&2
  exit 1
fi
.venv/bin/python -m tests.lab_build
echo "setup: ok ($(.venv/bin/ufcctl --version))"
