#!/usr/bin/env bash
# Runs the Node rates client against a fresh scripted flaky server (503, 503, 429 with
# Retry-After: 1, then 200). The server lives exactly as long as this script: it stops
# when its stdin (our coprocess pipe) closes.
set -euo pipefail
cd "$(dirname "$0")/../.."
coproc SERVER { exec python3 scripts/flaky_server.py --until-stdin-closes; }
trap 'exec {SERVER[1]}>&- 2>/dev/null || true; wait 2>/dev/null || true' EXIT
read -r line <&"${SERVER[0]}"
base=${line#listening on }
node examples/node/rates.mjs "$base/demo-node/rates/EURUSD"
