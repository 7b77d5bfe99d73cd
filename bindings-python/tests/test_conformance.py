"""Runs every conformance vector through the Python API; writes
build/conformance/python.txt for `make test`'s summary."""

import os


import conformance


def _report(failures):
    return "\n".join(f"{vid}: " + "; ".join(p) for vid, p in failures)


def test_vectors_are_there():
    assert len(conformance.load()) > 0, f"no vectors in {conformance.VECTOR_DIR}"


def test_conformance_sync(capsys):
    passed, failures, skipped = conformance.run_all(use_async=False)
    out_dir = os.path.join(conformance.ROOT, "build", "conformance")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "python.txt"), "w") as f:
        f.write(f"python {passed} {len(failures)} {skipped}\n")
    with capsys.disabled():
        print(f"\nconformance: {passed} passed, {len(failures)} failed, {skipped} skipped")
        if failures:
            print(_report(failures))
    assert not failures, _report(failures)


def test_conformance_through_the_asyncio_driver():
    passed, failures, _ = conformance.run_all(use_async=True)
    assert passed > 0
    assert not failures, _report(failures)
