"""README.md's "Migrating from tenacity or stamina": every python block of that section
runs against the installed module and prints what its `# prints:` comments say."""

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def blocks():
    text = README.read_text(encoding="utf-8")
    start = text.index("#### Migrating from tenacity or stamina")
    following = re.search(r"\n#{2,4} ", text[start + 1 :])  # the next heading
    section = text[start : start + 1 + following.start()] if following else text[start:]
    found = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(found) >= 3, "the section's python blocks were not found"
    return found


@pytest.mark.parametrize("index", range(3))
def test_each_migration_snippet_runs_and_prints_what_it_says(index):
    code = blocks()[index]
    expected = [m.strip() for m in re.findall(r"# .*?prints: (.*)$", code, re.M)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"README.md migration block {index + 1}", "exec"), {"__name__": f"readme_{index}"})
    assert out.getvalue().splitlines() == expected


def test_every_block_is_tested():
    assert len(blocks()) == 3
