"""README.md's "Across services": its Python block runs as written (its own loopback
server) and prints what its `# prints:` comment says."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def python_block() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Across services")
    following = re.search(r"\n## ", text[start + 1 :])
    section = text[start : start + 1 + following.start()] if following else text[start:]
    start = section.index("### Python")
    found = re.findall(r"```python\n(.*?)```", section[start:], re.S)
    assert found, "the Python block of Across services was not found"
    return found[0]


def test_the_across_services_python_block_runs_and_prints_what_it_says():
    code = python_block()
    expected = [m.strip() for m in re.findall(r"# prints: (.*)$", code, re.M)]
    assert expected, "the block says what it prints"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md Across services (Python)", "exec"), {"__name__": "readme_across_services"})
    assert out.getvalue().splitlines() == expected
