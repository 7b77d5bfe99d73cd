"""Policy documents: ``load_policies`` hands the document to the core's loader (the same
one Rust, Node and C use) and returns its policies by name. Nothing here parses or
validates a document; see docs/policies.md for the format."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple, Union

from ._native import Policy, _Document, _load_policies


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


class PolicyDocument(Mapping[str, Policy]):
    """A loaded policy document: a read-only mapping of name to ``Policy``, with the
    loader's ``warnings`` (valid input that is probably not meant, such as a gRPC
    ``tokenRatio`` that A6's three decimals make 0) and ``for_method``, gRPC's lookup."""

    __slots__ = ("_policies", "_document", "_warnings")

    def __init__(self, policies: Dict[str, Policy], document: _Document) -> None:
        self._policies = policies
        self._document = document
        self._warnings: Tuple[str, ...] = tuple(document.warnings)

    def __getitem__(self, name: str) -> Policy:
        return self._policies[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._policies)

    def __len__(self) -> int:
        return len(self._policies)

    def __repr__(self) -> str:
        return f"PolicyDocument({sorted(self._policies)!r})"

    @property
    def warnings(self) -> Tuple[str, ...]:
        """The loader's warnings, in document order, each starting with its path."""
        return self._warnings

    def method_key(self, service: str, method: str = "") -> Optional[str]:
        """The name of the policy a call to ``method`` of ``service`` runs under, looked up
        as gRPC looks up a method config: ``service/method``, then ``service``, then
        ``default``; None when none is in the document (for a gRPC service config: one
        attempt). The core's lookup, as in every host."""
        return self._document.method_key(service, method)

    def for_method(self, service: str, method: str = "") -> Optional[Policy]:
        """The policy of ``method_key(service, method)``, or None."""
        key = self.method_key(service, method)
        return None if key is None else self._policies[key]


Source = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def load_policies(source: Source) -> PolicyDocument:
    """Loads a policy document: a path (``str`` or ``os.PathLike``), the JSON text itself
    (a ``str`` starting with ``{``, or ``[`` for the error it is), or a dict as ``json.load`` would give. Returns a
    read-only ``PolicyDocument``, a mapping of name to ``Policy``; raises ``PolicyDocumentError``."""
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
    loaded, error = _load_policies(text, path)
    if error is not None:
        message, where, line, column, file = error
        raise PolicyDocumentError(message, path=where, line=line, column=column, file=file)
    assert loaded is not None
    policies, document = loaded
    return PolicyDocument(policies, document)
