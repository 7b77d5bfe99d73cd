#!/usr/bin/env python3
"""Runs every plain ```js, ```javascript, ```mjs and ```cjs block of the given markdown
files with Node, each as its own program, from the checkout's root, against the built
package (bindings-node, resolved as `retryrs` the way an installed package is, beside the
optional peers in its node_modules), as a reader who pasted it into a file would. A plain
js block is an ES module when it imports or exports, else CommonJS: so a block that mixes
`require` with top-level `await` fails here, as it does for its readers. A block whose
`// prints: ...` comments say what it prints must print exactly that, in order. Blocks
marked otherwise (```js fragment) are counted as skipped. A failure names the block's
file and line, and the stack's lines as lines of the markdown file.

    run_node.py SCRATCH_DIR FILE.md...
"""

import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blocks import ROOT, printed_as_said, run_blocks, run_program  # noqa: E402

PACKAGE = ROOT / "bindings-node"
LANGUAGES = ("js", "javascript", "mjs", "cjs")


def prepare(scratch):
    """SCRATCH/node_modules: `retryrs` is the package as built in the checkout, beside its
    own node_modules' entries (the optional peers a snippet may import)."""
    shutil.rmtree(scratch, ignore_errors=True)
    modules = scratch / "node_modules"
    modules.mkdir(parents=True)
    (modules / "retryrs").symlink_to(PACKAGE, target_is_directory=True)
    own = PACKAGE / "node_modules"
    for entry in sorted(own.iterdir()) if own.is_dir() else []:
        if not entry.name.startswith(".") and entry.name != "retryrs":
            (modules / entry.name).symlink_to(entry, target_is_directory=True)


def is_module(block):
    if block.language in ("mjs", "cjs"):
        return block.language == "mjs"
    return re.search(r"^\s*(import\s[^(]|import\{|export\s)", block.code, re.M) is not None


def run(block, scratch):
    program = scratch / f"block_{block.line}.{'mjs' if is_module(block) else 'cjs'}"
    program.write_text(block.code, encoding="utf-8")
    printed, why = run_program(["node", "--unhandled-rejections=strict", str(program)], block,
                               rf"(?:file://)?{re.escape(str(program))}:(\d+)")
    expected = [m.strip() for m in re.findall(r"//.*?\bprints: (.*)$", block.code, re.M)]
    return why or printed_as_said(printed, expected)


def main(scratch, paths):
    scratch = Path(scratch).resolve()
    prepare(scratch)
    return run_blocks(LANGUAGES, paths, lambda block: run(block, scratch))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
