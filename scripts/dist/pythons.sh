# Sourced by the dist tests: `supported_pythons` prints one interpreter path per
# supported CPython minor version (3.9 to 3.13), found at run time: with pyenv (this
# machine), the newest patch release of each in `pyenv versions --bare` under
# `pyenv root`; without pyenv (a CI runner with actions/setup-python), `python3.X` on
# PATH. A missing one is an error, not a skip: the wheel claims 3.9+, and a claim nobody
# ran is not tested.
SUPPORTED_PYTHONS=(3.9 3.10 3.11 3.12 3.13)

supported_pythons() {
  local root versions minor best python missing=()
  if command -v pyenv >/dev/null; then
    root=$(pyenv root)
    versions=$(pyenv versions --bare)
  fi
  for minor in "${SUPPORTED_PYTHONS[@]}"; do
    python=
    if [[ -n ${root:-} ]]; then
      best=$(grep -E "^${minor//./\\.}\.[0-9]+$" <<<"$versions" | sort -t. -k3,3n | tail -n1 || true)
      [[ -n $best && -x $root/versions/$best/bin/python3 ]] && python=$root/versions/$best/bin/python3
    fi
    [[ -z $python ]] && python=$(command -v "python$minor" || true)
    if [[ -z $python ]]; then
      missing+=("$minor")
      continue
    fi
    echo "$python"
  done
  if ((${#missing[@]})); then
    echo "dist test: MISSING CPython ${missing[*]}: not under pyenv${root:+ ($root has: $(tr '\n' ' ' <<<"$versions"))} nor as python3.X on PATH; run \`pyenv install ${missing[*]}\`" >&2
    return 1
  fi
}
