# Sourced by the dist tests: `supported_pythons` prints one interpreter path per
# supported CPython minor version (3.9 to 3.13), the newest patch release that pyenv has
# of each, found at run time (`pyenv root`, `pyenv versions --bare`). A missing one is an
# error, not a skip: the wheel claims 3.9+, and a claim nobody ran is not tested.
SUPPORTED_PYTHONS=(3.9 3.10 3.11 3.12 3.13)

supported_pythons() {
  local root versions minor best missing=()
  if ! command -v pyenv >/dev/null; then
    echo "dist test: pyenv is not on PATH; the wheel must be tested on CPython ${SUPPORTED_PYTHONS[*]} (install pyenv and those versions)" >&2
    return 1
  fi
  root=$(pyenv root)
  versions=$(pyenv versions --bare)
  for minor in "${SUPPORTED_PYTHONS[@]}"; do
    best=$(grep -E "^${minor//./\\.}\.[0-9]+$" <<<"$versions" | sort -t. -k3,3n | tail -n1 || true)
    if [[ -z $best || ! -x $root/versions/$best/bin/python3 ]]; then
      missing+=("$minor")
      continue
    fi
    echo "$root/versions/$best/bin/python3"
  done
  if ((${#missing[@]})); then
    echo "dist test: MISSING CPython ${missing[*]} under pyenv ($root has: $(tr '\n' ' ' <<<"$versions")); run \`pyenv install ${missing[*]}\`" >&2
    return 1
  fi
}
