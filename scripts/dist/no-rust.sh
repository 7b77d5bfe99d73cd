# Sourced by the dist tests: `no_rust_path` prints $PATH without every folder that holds
# cargo, rustc or rustup, so an artefact that quietly falls back to building from source
# fails instead of passing. Callers also point CARGO_HOME and RUSTUP_HOME nowhere.
no_rust_path() {
  local dir out=() IFS=:
  for dir in $PATH; do
    [[ -n $dir && ( -x $dir/cargo || -x $dir/rustc || -x $dir/rustup ) ]] && continue
    out+=("$dir")
  done
  printf '%s' "${out[*]}"
}

# Runs "$@" with no Rust toolchain reachable, after proving it is not.
without_rust() {
  local path
  path=$(no_rust_path)
  if PATH=$path command -v cargo >/dev/null || PATH=$path command -v rustc >/dev/null; then
    echo "dist test: cannot hide cargo/rustc from PATH ($path)" >&2
    return 1
  fi
  PATH=$path CARGO_HOME=/nonexistent/cargo RUSTUP_HOME=/nonexistent/rustup "$@"
}
