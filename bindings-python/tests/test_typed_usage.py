import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import typed_usage

HERE = Path(__file__).parent


def test_the_typed_example_runs():
    typed_usage.main()
    assert typed_usage.calls == 2


def test_pyright_accepts_the_typed_example():
    """mypy --strict checks the same file in `make test-python`; pyright reads the stubs
    differently (descriptors, overloads, ParamSpec), so it checks it too. The PyPI
    `pyright` wrapper runs the npm pyright package on the machine's own Node; without a
    Node it would download a Node build, which this project never does: skipped loudly."""
    if shutil.which("node") is None:
        pytest.skip("PYRIGHT NOT RUN: no `node` on PATH (the pyright wrapper would download a Node build); "
                    "install Node to type-check the stubs with pyright")
    try:
        import pyright  # noqa: F401
    except ImportError:
        pytest.skip("PYRIGHT NOT RUN: the `pyright` package is not installed (bindings-python/requirements-test.txt lists it)")
    env = dict(os.environ, PYRIGHT_PYTHON_IGNORE_WARNINGS="1")
    run = subprocess.run(
        [sys.executable, "-m", "pyright", "--pythonpath", sys.executable, str(HERE / "typed_usage.py")],
        capture_output=True, text=True, env=env, timeout=600,
    )
    out = run.stdout + run.stderr
    if run.returncode != 0 and "0 errors" not in out and ("npm" in out or "ENOTFOUND" in out or "EAI_AGAIN" in out):
        pytest.skip(f"PYRIGHT NOT RUN: the pyright wrapper could not fetch pyright from the npm registry:\n{out[-2000:]}")
    assert run.returncode == 0, out
    assert "0 errors" in out, out
