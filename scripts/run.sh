#!/usr/bin/env bash
# The main job on a fresh Debian machine: set up, bring up the container lab, deploy onto it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ufcctl lab up "$@"
.venv/bin/ufcctl deploy --inventory lab
