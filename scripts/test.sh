#!/usr/bin/env bash
# Every test on a fresh Debian machine: set up, build the lab image, then one pytest run covering
# unit tests, every molecule scenario (tests/integration/test_molecule.py) and the lab integration tests.
#   scripts/test.sh          the full lane (CI runs exactly this)
#   scripts/test.sh --fast   lint + unit tests only: no containers, no lab image (a few minutes)
#   scripts/test.sh --changed   unit lane + the molecule scenarios and lab modules the change touches
#                               (since the merge base with main; tests/helpers/changed.py maps paths)
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
changed=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
elif [ "${1:-}" = "--changed" ]; then
  changed=1
  shift
fi
./scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"  # the lab build's tests read Go's module cache
if [ "$fast" = 1 ]; then
  exec pytest -p no:cacheprovider -ra --durations=15 -n "${UFC_TEST_WORKERS:-2}" "$@" tests/unit
fi
export CONTAINERS_CONF="$PWD/ufcctl/lab/containers.conf"
if [ "$changed" = 1 ]; then
  ids="$(python -m tests.helpers.changed)"
  selected=()
  if [ -n "$ids" ]; then
    mapfile -t selected <<<"$ids"
    printf 'selected by the change:\n%s\n' "$ids"
    ufcctl lab image
  fi
  exec pytest -p no:cacheprovider -ra --durations=15 -n "${UFC_TEST_WORKERS:-3}" --dist loadgroup \
    "$@" tests/unit ${selected[@]+"${selected[@]}"}
fi
ufcctl lab image
# Parallel workers (pytest-xdist): each lab test module stays on one worker (tests/integration/
# conftest.py); molecule scenarios and unit tests spread, at nice 10 beside the shared lab's tests, the
# critical path (tests/helpers/worker_priority.py). UFC_TEST_WORKERS=0 runs serially.
exec pytest -p no:cacheprovider -ra --durations=30 -n "${UFC_TEST_WORKERS:-3}" --dist loadgroup \
  "$@" tests/unit tests/integration
