#!/usr/bin/env bash
# `make demo-c`: starts scripts/flaky_server.py (it exits when our pipe to it closes),
# then runs the C rates client against it twice: with the blocking call, and driven by
# an event loop through the sans-IO engine. Same seed, so the same waits.
set -euo pipefail
client=${1:?usage: demo.sh PATH/TO/rates}
coproc SERVER { exec python3 scripts/flaky_server.py --until-stdin-closes; }
trap 'exec {SERVER[1]}>&- 2>/dev/null || true; wait 2>/dev/null || true' EXIT
read -r line <&"${SERVER[0]}"
base=${line#listening on }
echo "== $client $base/demo-c/rates/EURUSD"
"$client" "$base/demo-c/rates/EURUSD" | tee /dev/stderr | grep -o 'waiting [0-9]* ms' > "${TMPDIR:-/tmp}/retryrs-demo-c.$$.a"
echo "== $client --event-loop $base/demo-c-loop/rates/EURUSD"
"$client" --event-loop "$base/demo-c-loop/rates/EURUSD" | tee /dev/stderr | grep -o 'waiting [0-9]* ms' > "${TMPDIR:-/tmp}/retryrs-demo-c.$$.b"
if cmp -s "${TMPDIR:-/tmp}/retryrs-demo-c.$$.a" "${TMPDIR:-/tmp}/retryrs-demo-c.$$.b"; then
  echo "== the blocking call and the event loop waited alike: $(paste -sd, "${TMPDIR:-/tmp}/retryrs-demo-c.$$.a")"
  status=0
else
  echo "== the blocking call and the event loop disagree: a bug"
  status=1
fi
rm -f "${TMPDIR:-/tmp}/retryrs-demo-c.$$.a" "${TMPDIR:-/tmp}/retryrs-demo-c.$$.b"
exit $status
