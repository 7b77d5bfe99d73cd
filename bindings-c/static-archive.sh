#!/usr/bin/env bash
# libretryrs.a as C programs link it: one object whose only global symbols are the API's
# (retryrs_*), so Rust's std, serde, compiler-rt and rust_eh_personality, which a Rust
# staticlib exports by the thousand, cannot collide with another Rust library in the
# same program.
#   1. strip the debug info Rust's std brings and the LLVM bitcode rustc embeds (.llvmbc,
#      only for cross-language LTO): 22 MB -> 4 MB, the same machine code;
#   2. partial link (ld -r) of every member into one object, keeping only the sections
#      the exports reach (--gc-sections rooted at each retryrs_* symbol): what the API
#      cannot reach goes, with its references to glibc's getaddrinfo and getpwuid_r
#      (std's DNS lookup and home_dir), whose warnings fail a `-static` link with
#      -Wl,--fatal-warnings;
#   3. every global but retryrs_* made local, and the undefined symbols no relocation
#      needs any more dropped (the references --gc-sections removed).
#   usage: static-archive.sh RUST_STATICLIB OUT.a
set -euo pipefail
in=${1:?usage: static-archive.sh RUST_STATICLIB OUT.a}
out=${2:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
strip --strip-debug --remove-section=.llvmbc --remove-section=.llvmcmd -o "$work/stripped.a" "$in"
roots=$(nm -g --defined-only "$work/stripped.a" 2>/dev/null | awk '$3 ~ /^retryrs_/ {print "-u " $3}' | sort -u)
[[ -n $roots ]] || { echo "static-archive: $in defines no retryrs_* symbol" >&2; exit 1; }
# shellcheck disable=SC2086 # one -u per export
ld -r --gc-sections $roots --whole-archive "$work/stripped.a" -o "$work/all.o"
# Only undefined symbols are dropped when unneeded: the functions keep their names, which
# debuggers, profilers and the thread checkers' suppressions (valgrind.supp) read.
undefined=$(nm -u "$work/all.o" | awk '{print "--strip-unneeded-symbol=" $2}')
# shellcheck disable=SC2086 # one option per undefined symbol
objcopy --keep-global-symbol='retryrs_*' --wildcard $undefined "$work/all.o" "$work/retryrs.o"
rm -f "$out"
ar rcsD "$out" "$work/retryrs.o"
