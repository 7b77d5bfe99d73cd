"""A native class's constructor as the type stub declares it: what CPython cannot show
for a native class on 3.9 under the stable ABI (no runtime signature). stubtest keeps
the stub equal to the module, so the stub is a faithful stand-in."""

import ast
import inspect
import pathlib

import retryrs


def _value(node):
    """A default as written: its value when it is a literal, else its source text."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def stub_defaults(cls):
    """``cls``'s constructor parameters (its ``__new__``, else ``__init__``, in the stub)
    and their defaults (``inspect.Parameter.empty`` for none), in order."""
    stub = pathlib.Path(retryrs.__file__).with_name("_native.pyi")
    for node in ast.walk(ast.parse(stub.read_text())):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name in ("__new__", "__init__"):
                    a = f.args
                    positional = a.posonlyargs + a.args
                    given = [None] * (len(positional) - len(a.defaults)) + list(a.defaults) + list(a.kw_defaults)
                    out = {}
                    for arg, default in zip(positional + a.kwonlyargs, given):
                        out[arg.arg] = inspect.Parameter.empty if default is None else _value(default)
                    for arg in (a.vararg, a.kwarg):
                        if arg is not None:
                            out[arg.arg] = inspect.Parameter.empty
                    out.pop("self", None)
                    out.pop("cls", None)
                    return out
    raise AssertionError(f"{cls.__name__} has no constructor in the stub")
