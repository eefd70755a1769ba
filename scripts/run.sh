#!/usr/bin/env bash
# The main job on a fresh Debian machine: set up, bring up the container lab, deploy onto it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ufcctl lab up "$@"
.venv/bin/ufcctl deploy --inventory lab
# One screen from the monitoring the deploy installed: firing alerts, etcd, the VIP, nodes, NPUs.
# `|| true`: it exits 1 while an alert fires (a lab just deployed may show one until the first
# scrapes land); the deploy above is what this script's exit code reports.
sleep 15
.venv/bin/ufcctl health --inventory lab || true
