"""The Python surface derived from the core's knob table: the stub, the runtime
signature and the repr must list exactly the table's knobs (plus Python's own options),
with the table's defaults in Python's units. Adding a knob to the core without the stub
fails here, not in a user's type checker."""
import ast
import pathlib

import pytest

import retryrs
from retryrs import _native

STUB = pathlib.Path(retryrs.__file__).with_name("_native.pyi")
KNOBS = _native._knobs()


def stub_new() -> ast.FunctionDef:
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Retrier":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__new__":
                    return item
    raise AssertionError("Retrier.__new__ is not in _native.pyi")


def test_the_stub_declares_exactly_the_tables_options_with_its_defaults() -> None:
    fn = stub_new()
    args = fn.args.kwonlyargs
    defaults = dict(zip((a.arg for a in args), fn.args.kw_defaults))
    annotations = {a.arg: ast.unparse(a.annotation) for a in args if a.annotation is not None}
    assert sorted(defaults) == sorted(name for name, *_ in KNOBS)
    for name, unit, default, can_be_off in KNOBS:
        node = defaults[name]
        assert node is not None
        if unit != "host" and not (isinstance(node, ast.Constant) and node.value is ...):
            assert ast.literal_eval(node) == default, f"{name}: stub default {ast.unparse(node)}, table {default!r}"
        if can_be_off:
            ann = annotations[name]
            assert ann.startswith("Optional[") or "None" in ann, f"{name} can be off: its stub type must admit None"


def runtime_defaults() -> "dict[str, object]":
    """Retrier's runtime signature (pyo3's text_signature), read without inspect, which
    cannot see a native type's signature on CPython 3.9."""
    sig = retryrs.Retrier.__text_signature__
    if not sig:
        # abi3 on CPython < 3.10 exposes no signature for a native class: nothing to compare.
        pytest.skip("no runtime signature for native classes on this CPython (checked on 3.10+)")
    fn = ast.parse(f"def f{sig}: pass").body[0]
    assert isinstance(fn, ast.FunctionDef)
    return {a.arg: ast.literal_eval(d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None}


def test_the_runtime_signature_matches_the_table() -> None:
    params = runtime_defaults()
    assert sorted(params) == sorted(name for name, *_ in KNOBS)
    for name, unit, default, _ in KNOBS:
        if unit != "host" and default is not None:
            assert params[name] == default, name


@pytest.mark.parametrize(
    "knob", [k for k in KNOBS if k[1] in ("count", "seconds", "factor")], ids=lambda k: str(k[0])
)
def test_every_numeric_knob_is_in_the_repr_and_readable(knob: "tuple[str, str, object, bool]") -> None:
    name, _, default, _ = knob
    # A knob that is off by default (attempt_timeout) is read back set.
    r = retryrs.Retrier() if default is not None else retryrs.Retrier(**{name: 1})
    assert f"{name}=" in repr(r)
    assert getattr(r, name) is not None


@pytest.mark.parametrize("knob", [k for k in KNOBS if k[1] != "host"], ids=lambda k: str(k[0]))
def test_every_knob_reads_back_from_a_retrier_with_its_default(knob: "tuple[str, str, object, bool]") -> None:
    # Retrier's getters and the stub's properties are written from the table (knobgen), so
    # a new knob reads back with no hand-written binding code.
    name, _, default, _ = knob
    assert getattr(retryrs.Retrier(), name) == default
    assert name in dir(retryrs.Retrier())


def test_a_name_that_is_no_knob_is_an_attribute_error() -> None:
    r = retryrs.Retrier()
    with pytest.raises(AttributeError, match="has no attribute 'max_atempts'"):
        r.max_atempts  # type: ignore[attr-defined]  # noqa: B018
    assert getattr(r, "max_atempts", "fallback") == "fallback"


def test_an_unknown_option_names_every_known_one() -> None:
    with pytest.raises(TypeError) as e:
        retryrs.Retrier(max_atempts=3)  # type: ignore[call-arg]
    for name, *_ in KNOBS:
        assert name in str(e.value)


def test_the_conformance_runner_rejects_a_misspelt_key() -> None:
    import conformance

    assert conformance.run_vector({"id": "x", "policy": {"max_attempt": 3}, "calls": []})
    assert conformance.run_vector({"id": "x", "calls": [{"attempts": [], "expect": {"outcome": "success", "event": []}}]})
