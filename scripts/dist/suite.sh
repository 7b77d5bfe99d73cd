# Sourced by python-wheel and python-sdist: lays out the Python suite in DIR as the
# repository has it (DIR/bindings-python/tests, DIR/tests/<shared data>, DIR/scripts) but
# without the source package, so `import retryrs` finds only the installed one.
#   lay_python_suite REPO DIR
lay_python_suite() {
  local repo=$1 dir=$2 shared
  mkdir -p "$dir/bindings-python" "$dir/tests"
  cp -R "$repo/bindings-python/tests" "$dir/bindings-python/tests"
  for shared in "$repo"/tests/*/; do ln -s "${shared%/}" "$dir/tests/$(basename "$shared")"; done
  ln -s "$repo/scripts" "$dir/scripts"
  # The documents some tests check against (docs/policies.schema.json, docs/policies.md).
  ln -s "$repo/docs" "$dir/docs"
  # README.md: its migration snippets run against the installed module.
  ln -s "$repo/README.md" "$dir/README.md"
}
