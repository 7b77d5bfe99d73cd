"""Policy documents: ``load_policies`` hands the document to the core's loader (the same
one Rust, Node and C use) and returns its policies by name. Nothing here parses or
validates a document; see docs/policies.md for the format."""

from __future__ import annotations

import json
import os
from types import MappingProxyType
from typing import Any, Mapping, Optional, Union

from ._native import Policy, _load_policies


class PolicyDocumentError(ValueError):
    """A policy document that could not be loaded. ``path`` is where in the document
    (``policies.payments.initial_delay``), ``line`` and ``column`` where in the text
    (when known), ``file`` the file it came from."""

    def __init__(self, message: str, *, path: str, line: Optional[int], column: Optional[int], file: Optional[str]) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.column = column
        self.file = file


Source = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def load_policies(source: Source) -> Mapping[str, Policy]:
    """Loads a policy document: a path (``str`` or ``os.PathLike``), the JSON text itself
    (a ``str`` starting with ``{``, or ``[`` for the error it is), or a dict as ``json.load`` would give. Returns a
    read-only mapping of name to ``Policy``; raises ``PolicyDocumentError``."""
    text: Optional[str] = None
    path: Optional[str] = None
    if isinstance(source, Mapping):
        # A dict is handed over as the JSON it stands for; the core reads it.
        try:
            text = json.dumps(source, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise PolicyDocumentError(f"document: not JSON data: {exc}", path="document", line=None, column=None, file=None) from exc
    elif isinstance(source, str) and source.lstrip()[:1] in ("{", "["):
        text = source
    elif isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
    else:
        raise TypeError(f"load_policies needs a path, a JSON string or a dict, got {type(source).__name__}")
    policies, error = _load_policies(text, path)
    if error is not None:
        message, where, line, column, file = error
        raise PolicyDocumentError(message, path=where, line=line, column=column, file=file)
    assert policies is not None
    return MappingProxyType(policies)
