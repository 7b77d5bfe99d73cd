#!/usr/bin/env bash
# libretryrs.a defines no global symbol outside the API (retryrs_*), and a fully static
# program links it with -Wl,--fatal-warnings (no glibc warning about getaddrinfo or
# getpwuid_r: bindings-c/static-archive.sh) and runs.
#   usage: static_archive.sh CC INCLUDE_DIR LIB_DIR VERSION
set -euo pipefail
cc=${1:?usage: static_archive.sh CC INCLUDE_DIR LIB_DIR VERSION}
inc=${2:?}
lib=${3:?}
version=${4:?}
repo=$(cd "$(dirname "$0")/../.." && pwd)
archive=$lib/libretryrs.a
globals=$(nm -g --defined-only "$archive" 2>/dev/null | awk 'NF == 3 {print $3}')
api=$(grep -c '^retryrs_' <<<"$globals" || true)
others=$(grep -v '^retryrs_' <<<"$globals" || true)
if [[ -n $others ]]; then
  echo "static_archive: $archive defines $(wc -l <<<"$others") global symbols outside retryrs_*, e.g. $(head -5 <<<"$others" | paste -sd' ')" >&2
  exit 1
fi
((api > 40)) || { echo "static_archive: only $api retryrs_* symbols in $archive: is nm reading it?" >&2; exit 1; }
app=$(mktemp)
trap 'rm -f "$app"' EXIT
libs=$(sed -n 's/^Libs.private: //p' "$repo/bindings-c/retryrs.pc.in")
# shellcheck disable=SC2086 # the library list is meant to be split into words
"$cc" -std=c11 -Wall -Wextra -Werror -static "$repo/tests/c/pkgconfig_app.c" -I"$inc" -o "$app" "$archive" $libs \
  -Wl,--fatal-warnings
"$app" "$version" >/dev/null
echo "libretryrs.a: $api global symbols, all retryrs_*; a -static program links it with --fatal-warnings and runs"
