#!/usr/bin/env bash
# retryrs.hpp at its edges, against an include and a lib dir (the build's or the release
# tarball's): tests/c/cpp_edges.cpp built with exceptions and with -fno-exceptions (the
# factories, 0 operator new per call), the clear #error before C++17, and the cost of a
# call through retryrs.hpp against the C API in instructions (cachegrind: the difference
# between N and 2N calls, so start-up cancels out): at most 1.2x.
#   usage: cpp_edges.sh CXX INCLUDE_DIR LIB_DIR WORKDIR
set -euo pipefail
cxx=${1:?usage: cpp_edges.sh CXX INCLUDE_DIR LIB_DIR WORKDIR}
inc=${2:?}
lib=${3:?}
mkdir -p "${4:?}"
work=$(cd "$4" && pwd)
src=$(cd "$(dirname "$0")" && pwd)/cpp_edges.cpp
fail() { echo "cpp_edges: $*" >&2; exit 1; }
for mode in exceptions no-exceptions; do
  flags=(-std=c++17 -Wall -Wextra -Werror -pedantic -O2)
  [[ $mode == no-exceptions ]] && flags+=(-fno-exceptions)
  "$cxx" "${flags[@]}" -I"$inc" "$src" -o "$work/cpp-edges-$mode" -L"$lib" -Wl,-rpath,"$lib" -lretryrs
  "$work/cpp-edges-$mode" alloc
done
for std in c++11 c++14; do
  if out=$(echo '#include <retryrs.hpp>' | "$cxx" -std=$std -I"$inc" -x c++ -fsyntax-only - 2>&1); then
    fail "retryrs.hpp compiled under -std=$std"
  fi
  [[ $(grep -c 'error:' <<<"$out") == 1 ]] && grep -q 'retryrs.hpp needs C++17' <<<"$out" \
    || fail "under -std=$std, want the one #error, got: $out"
done
echo "retryrs.hpp under -std=c++11 and c++14: one error, \"retryrs.hpp needs C++17 ...\""
instructions() { # mode calls
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$work/cpp-edges-exceptions" "$1" "$2" 2>&1 \
    | sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d ,
}
n=2000
c=$((($(instructions c $((2 * n))) - $(instructions c $n)) / n))
cpp=$((($(instructions cpp $((2 * n))) - $(instructions cpp $n)) / n))
((c > 0)) || fail "no instruction count for the C API"
echo "a call failing once then succeeding: C API $c instructions, retryrs.hpp $cpp ($(awk -v a="$cpp" -v b="$c" 'BEGIN {printf "%.2f", a / b}')x)"
((cpp * 10 <= c * 12)) || fail "retryrs.hpp costs more than 1.2x the C API per call"
