#!/usr/bin/env python3
"""Runs every plain ```python block of the given markdown files, each as its own program
with this interpreter (the project's venv, where the built package is installed), from
the checkout's root, as a reader who pasted it into a file would. A block whose
`# prints: ...` comments say what it prints must print exactly that, in order. Blocks
marked otherwise (```python fragment) are counted as skipped. A failure names the
block's file and line, and the traceback's lines as lines of the markdown file.

    run_python.py FILE.md...
"""

import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blocks import printed_as_said, run_blocks, run_program  # noqa: E402

def expected_output(code):
    return [m.strip() for m in re.findall(r"#.*?\bprints: (.*)$", code, re.M)]


def run(block, scratch):
    """None when the block ran as it says, else why not."""
    program = Path(scratch) / f"block_{block.line}.py"
    program.write_text(block.code, encoding="utf-8")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
    # A traceback's `File "...", line N`, as FILE.md:LINE.
    printed, why = run_program([sys.executable, str(program)], block,
                               rf'File "{re.escape(str(program))}", line (\d+)', env)
    return why or printed_as_said(printed, expected_output(block.code))


def main(paths):
    with tempfile.TemporaryDirectory(prefix="snippets-") as scratch:
        return run_blocks(("python",), paths, lambda block: run(block, scratch))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
