#!/usr/bin/env bash
# Every test on a fresh Debian machine: set up, build the lab image, then one pytest run covering
# unit tests, every molecule scenario (tests/integration/test_molecule.py) and the lab integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
export CONTAINERS_CONF="$PWD/templates/lab/containers.conf"
ufcctl lab image
exec pytest -p no:cacheprovider -ra "$@" tests/unit tests/integration
