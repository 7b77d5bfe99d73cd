#!/usr/bin/env python3
"""The ```rust blocks of the given markdown files run as doctests (make test-rust): a file
with a plain one must be included as a doctest by the core (core/src/lib.rs,
`#[doc = include_str!("../../FILE")]`); blocks marked otherwise (```rust fragment,
```rust ignore) are counted as skipped. Fails naming any block no doctest covers.

    check_rust.py FILE.md...
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blocks import ROOT, blocks  # noqa: E402


def main(paths):
    lib = (ROOT / "core" / "src" / "lib.rs").read_text(encoding="utf-8")
    uncovered, doctests, skipped = [], 0, 0
    for path in paths:
        covered = f'include_str!("../../{Path(path).as_posix()}")' in lib
        for block in blocks(path):
            if block.language != "rust":
                continue
            if not block.plain:
                skipped += 1
            elif covered:
                doctests += 1
            else:
                uncovered.append(block)
    for block in uncovered:
        print(f"{block.where}: a ```rust block no doctest runs: include {block.path} as a doctest in "
              "core/src/lib.rs (as RepositoryReadmeDoctests does), or mark the block ```rust fragment")
    print(f"rust snippets: {doctests} run as doctests by make test-rust, {len(uncovered)} uncovered, {skipped} skipped (fragments)")
    return 1 if uncovered else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
