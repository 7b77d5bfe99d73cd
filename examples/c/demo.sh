#!/usr/bin/env bash
# `make demo-c`: starts scripts/flaky_server.py (it exits when our pipe to it closes),
# then runs the C rates client against a fresh session on it.
set -euo pipefail
client=${1:?usage: demo.sh PATH/TO/rates}
coproc SERVER { exec python3 scripts/flaky_server.py --until-stdin-closes; }
trap 'exec {SERVER[1]}>&- 2>/dev/null || true; wait 2>/dev/null || true' EXIT
read -r line <&"${SERVER[0]}"
base=${line#listening on }
echo "$client $base/demo-c/rates/EURUSD"
"$client" "$base/demo-c/rates/EURUSD"
