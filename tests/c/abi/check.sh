#!/usr/bin/env bash
# ABI growth (retryrs.h, "ABI growth"): programs built against retryrs 0.1's layout meet
# today's library. Usage: check.sh CC BUILD_DIR LIB_DIR
# - v01_program.c (a 0.1 config filled by hand) runs under valgrind and must be refused
#   with RETRYRS_INVALID_ARGUMENT naming struct_size, with no invalid read;
# - v01_default.c (a 0.1 program calling 0.1's retryrs_config_default) must fail to link,
#   and for that reason only: an old binary is stopped by the loader;
# - the library exports retryrs_config_init and not retryrs_config_default.
set -euo pipefail
cc=${1:?CC} out=${2:?BUILD_DIR} lib=${3:?LIB_DIR}
here=$(dirname "$0")
mkdir -p "$out"
"$cc" -std=c11 -Wall -Wextra -Werror "$here/v01_program.c" -o "$out/abi-v01-program" -L"$lib" -Wl,-rpath,"$lib" -lretryrs
valgrind --quiet --error-exitcode=99 "$out/abi-v01-program"
if "$cc" -std=c11 "$here/v01_default.c" -o "$out/abi-v01-default" -L"$lib" -Wl,-rpath,"$lib" -lretryrs 2> "$out/abi-v01-default.log"; then
  echo "abi: a 0.1 program calling retryrs_config_default linked against this library" >&2
  exit 1
fi
grep -q "undefined reference to .retryrs_config_default" "$out/abi-v01-default.log" || {
  echo "abi: the 0.1 program failed to link, but not for the missing retryrs_config_default:" >&2
  cat "$out/abi-v01-default.log" >&2
  exit 1
}
nm -D --defined-only "$lib/libretryrs.so" | grep -qw retryrs_config_init
! nm -D --defined-only "$lib/libretryrs.so" | grep -qw retryrs_config_default
echo "abi: a 0.1 program is refused cleanly (config by hand) or stopped at link (retryrs_config_default)"
