#!/usr/bin/env bash
# The main job on a fresh Debian machine: set up, bring up the container lab, deploy onto it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ufcctl lab up "$@"
.venv/bin/ufcctl deploy --inventory lab
# One screen from the monitoring the deploy installed: firing alerts, etcd, the VIP, nodes, NPUs. A lab
# just deployed may show an alert until the first scrapes land (the lab scrapes and evaluates rules every
# 10 s), so it asks again for up to two minutes; still unhealthy then, the script exits 1.
for attempt in 1 2 3 4 5 6 7 8 9 10 11 12; do
  sleep 10
  if .venv/bin/ufcctl health --inventory lab; then
    exit 0
  fi
  echo "run.sh: the lab is not healthy yet (ask $attempt of 12)"
done
exit 1
