#!/usr/bin/env bash
# The interpreter-exit matrix of issue 22: RUNS runs of bindings-python/tests/daemon_exit.py
# in every mode on every supported CPython (3.9-3.13, found as the dist tests find them),
# against the native module built in place by `make python-dev` (one abi3 module serves
# them all). Prints one line per interpreter and mode: the runs that did not exit 0.
#   scripts/python-exit-matrix.sh [RUNS (default 20)] [MODE...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/dist/pythons.sh
runs=${1:-20}
shift || true
modes=("${@:-cancel wait attempt busy}")
read -r -a modes <<<"${modes[*]}"
pythons=$(supported_pythons)
failed=0
for python in $pythons; do
  version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  for mode in "${modes[@]}"; do
    crashes=0 codes=
    for _ in $(seq "$runs"); do
      code=0
      out=$(PYTHONPATH=bindings-python/python timeout 60 "$python" bindings-python/tests/daemon_exit.py "$mode" 2>/dev/null) || code=$?
      if [[ $code -ne 0 || $out != exiting ]]; then
        crashes=$((crashes + 1))
        codes+=" $code"
      fi
    done
    echo "CPython $version $mode: $crashes crashes in $runs runs${codes:+ (exit codes:$codes)}"
    failed=$((failed + crashes))
  done
done
exit $((failed > 0))
