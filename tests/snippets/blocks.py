"""The fenced code blocks of markdown files, with where each starts, and the loop every
snippet runner (run_python.py, run_node.py, run_c.py) runs them in.

A block is a line that opens with three backticks and an info string, up to the next line
of three backticks alone. Its *language* is the info string's first word and it *runs*
only when the info string is that word alone: `python fragment`, `js fragment` or
`c fragment` mark a block that cannot stand alone (it is counted and reported as skipped).
"""

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60  # seconds; a snippet that runs longer is broken

FENCE = re.compile(r"^(\s*)```(.*)$")


@dataclass
class Block:
    path: str  # as given (relative to the checkout in every report)
    line: int  # 1-based line of the opening fence
    info: str  # the whole info string, e.g. "python" or "python fragment"
    code: str

    @property
    def language(self):
        return self.info.split()[0] if self.info.split() else ""

    @property
    def plain(self):
        """True when the info string is the language alone: the block must run."""
        return self.info.strip() == self.language

    @property
    def where(self):
        return f"{self.path}:{self.line}"


def blocks(path):
    """Every fenced block of the markdown file at path, in order."""
    found, current, indent = [], None, ""
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line)
        if current is None:
            if m:
                indent = m.group(1)
                current = Block(str(path), number, m.group(2).strip(), "")
                lines = []
        elif m and not m.group(2).strip():
            current.code = "\n".join(lines) + "\n"
            found.append(current)
            current = None
        else:
            lines.append(line[len(indent):] if line.startswith(indent) else line)
    if current is not None:
        raise SystemExit(f"{path}:{current.line}: a fenced block is never closed")
    return found


def printed_as_said(printed, expected):
    """None when a block printed the lines its `prints:` comments say (or says none), else
    what to tell the reader."""
    if not expected or printed == expected:
        return None
    return "printed:\n  " + "\n  ".join(printed) + "\nbut its comments say:\n  " + "\n  ".join(expected)


def tail(text, lines=30):
    """The end of a long stderr (a traceback's last frames say what broke)."""
    kept = text.rstrip().splitlines()
    return "\n".join((["  ..."] if len(kept) > lines else []) + kept[-lines:])


def run_program(command, block, location=None, env=None):
    """Runs a block's program from the checkout's root: (its stdout's lines, None), or
    (None, why not). `location` is a pattern whose group 1 is a line number of the
    program's file in what it wrote to stderr: each match becomes FILE.md:LINE, the line
    of the markdown file (the code starts one line below the fence)."""
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, f"still running after {TIMEOUT} s"
    if done.returncode != 0:
        errors = done.stderr
        if location:
            errors = re.sub(location, lambda m: f"{block.path}:{block.line + int(m.group(1))}", errors)
        return None, f"exit status {done.returncode}\n{tail(errors)}"
    return done.stdout.splitlines(), None


def run_blocks(languages, paths, check):
    """Runs check(block) on every plain block of the given languages (the info string's
    first word) in the files at paths (None: it ran as it says, else why not), then prints
    the failures, what ran and was skipped per file, and the closing line
    scripts/test-counts reads. Returns the exit status."""
    name = languages[0]
    counts, failures = {}, []
    for path in paths:
        count = counts.setdefault(path, [0, 0, 0])
        for block in blocks(path):
            if block.language not in languages:
                continue
            if not block.plain:
                count[1] += 1
                continue
            count[0] += 1
            why = check(block)
            if why:
                count[2] += 1
                failures.append(f"{block.where}: the ```{block.info} block fails: {why}")
    for failure in failures:
        print(failure, end="\n\n")
    print(f"{name} snippets:")
    for path, (ran, skipped, failed) in counts.items():
        extra = f", {failed} FAILED" if failed else ""
        print(f"  {path}: {ran} ran, {skipped} skipped (fragments){extra}")
    ran, skipped, failed = (sum(c[i] for c in counts.values()) for i in range(3))
    print(f"{name} snippets: {ran} ran, {skipped} skipped (fragments)")
    print(f"{ran - failed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0
