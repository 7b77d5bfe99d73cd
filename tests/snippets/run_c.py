#!/usr/bin/env python3
"""Compiles every plain ```c block of the given markdown files against include/retryrs.h,
as C11 with the C suite's warnings as errors; a block that defines `main` is a program:
it is linked against the built library and run, and must exit 0 (and print what its
`/* prints: ... */` comments say, when it has them). A block that is part of a program
(statements outside a function) is marked ```c fragment and counted as skipped. A
failure names the block's file and line, and the compiler's lines as lines of the
markdown file.

    run_c.py CC LIBDIR FILE.md...
"""

import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blocks import ROOT, printed_as_said, run_blocks, run_program  # noqa: E402

FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", str(ROOT / "include")]


def check(cc, libdir, block, scratch):
    source = Path(scratch) / f"block_{block.line}.c"
    source.write_text(block.code, encoding="utf-8")
    program = re.search(r"^\s*int\s+main\s*\(", block.code, re.M) is not None
    out = Path(scratch) / (f"block_{block.line}" if program else f"block_{block.line}.o")
    command = [cc, *FLAGS, str(source), "-o", str(out)]
    command += [f"-L{libdir}", f"-Wl,-rpath,{libdir}", "-lretryrs", "-lpthread", "-lm"] if program else ["-c"]
    # The compiler's lines, as lines of the markdown file.
    _, why = run_program(command, block, rf"{re.escape(str(source))}:(\d+)")
    if why:
        return f"does not compile: {why}"
    if not program:
        return None
    printed, why = run_program([str(out)], block)
    if why:
        return why
    expected = [m.strip() for m in re.findall(r"/\*.*?\bprints: (.*?)\s*\*/", block.code)]
    return printed_as_said(printed, expected)


def main(cc, libdir, paths):
    with tempfile.TemporaryDirectory(prefix="snippets-c-") as scratch:
        return run_blocks(("c",), paths, lambda block: check(cc, libdir, block, scratch))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
