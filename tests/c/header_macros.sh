#!/usr/bin/env bash
# The public headers define no macro a program could collide with: every macro
# retryrs.h and retryrs_testing.h add to what their own system includes define is
# RETRYRS_* (constants, the include guards); retryrs_config_default and friends are
# inline functions, not macros.
#   usage: header_macros.sh CC INCLUDE_DIR
set -euo pipefail
cc=${1:?usage: header_macros.sh CC INCLUDE_DIR}
inc=${2:?}
macros() { printf '#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n%s\n' "$1" \
  | "$cc" -std=c11 -dM -E -I"$inc" -x c - | awk '{print $2}' | sed 's/(.*//' | sort -u; }
base=$(macros '')
bad=0
for h in retryrs.h retryrs_testing.h; do
  added=$(comm -13 <(echo "$base") <(macros "#include <$h>"))
  [[ -n $added ]] || { echo "header_macros: $h defines nothing? (the check is broken)" >&2; exit 1; }
  stray=$(grep -vE '^RETRYRS_[A-Z0-9_]+$' <<<"$added" || true)
  if [[ -n $stray ]]; then
    echo "header_macros: $h defines macros outside RETRYRS_*: $(paste -sd' ' <<<"$stray")" >&2
    bad=1
  else
    echo "$h: $(wc -l <<<"$added") macros, all RETRYRS_*"
  fi
done
exit $bad
