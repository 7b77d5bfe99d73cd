"""The default ``retry_on``: the transient network errors, and nothing else.

Builtins: ``ConnectionError`` (refused, reset, aborted, broken pipe), ``TimeoutError``
(which is ``socket.timeout`` from 3.10 and ``asyncio.TimeoutError`` from 3.11; both are
added where they are still distinct classes). The HTTP clients' transport errors count
too, but only once the client is imported (``sys.modules`` is looked at, nothing is ever
imported here): requests' ``ConnectionError``, ``Timeout`` and ``ChunkedEncodingError``
(a connection broken mid-body; never ``HTTPError``, a response: a 404 from
``raise_for_status()`` is not retried), httpx's ``TransportError``,
aiohttp's ``ClientConnectionError``, ``ServerDisconnectedError``, ``ClientPayloadError``
and ``ServerTimeoutError``. ``FileNotFoundError``, ``PermissionError`` and the other
``OSError``s are permanent unless ``retry_on`` says otherwise.

A TLS certificate that fails verification (expired, self-signed, an unknown CA, a
hostname mismatch: ``ssl.SSLCertVerificationError``, alias ``ssl.CertificateError``,
anywhere in the exception's ``__cause__``/``__context__`` chain or its arguments, which is
how requests' ``SSLError`` and httpx's ``ConnectError`` carry it; aiohttp's
``ClientConnectorCertificateError`` and ``ServerFingerprintMismatch``; urllib3's own
``CertificateError``) is permanent too, although the client files it under its connection
errors: it fails the same way every time (got and undici do not retry it either). So is
the server's refusal of our certificate (a TLS alert: unknown CA, bad, expired, revoked or
missing client certificate, the ``reason`` of an ``ssl.SSLError``), as in Node's helpers.
A TLS handshake that is reset or cut short (EOF) stays transient.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import sys
from collections import deque
from typing import Dict, Iterator, Tuple, Type

_BUILTIN: Tuple[Type[BaseException], ...] = tuple(dict.fromkeys((ConnectionError, TimeoutError, asyncio.TimeoutError, socket.timeout)))

# (module, attribute) of each client error class, looked up once its module is loaded.
_CLIENTS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("requests", ("exceptions.ConnectionError", "exceptions.Timeout", "exceptions.ChunkedEncodingError")),
    ("httpx", ("TransportError",)),
    ("aiohttp", ("ClientConnectionError", "ServerDisconnectedError", "ClientPayloadError", "ServerTimeoutError")),
)

# Certificate failures, looked up like _CLIENTS: deterministic, never retried.
_CERTIFICATE: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("aiohttp", ("ClientConnectorCertificateError", "ServerFingerprintMismatch")),
    ("urllib3.util.ssl_match_hostname", ("CertificateError",)),
)

# Keyed by the client modules themselves (None: not imported), so a module imported,
# replaced or removed later is seen.
_cache: Dict[Tuple[object, ...], Tuple[Type[BaseException], ...]] = {}


def transient() -> Tuple[Type[BaseException], ...]:
    """The classes the default ``retry_on`` retries, for the clients imported now (less
    the certificate failures among them: ``certificate_failure``)."""
    return _classes(_CLIENTS, _BUILTIN, _cache)


_cert_cache: Dict[Tuple[object, ...], Tuple[Type[BaseException], ...]] = {}

# The alerts of a peer that refused our certificate (ssl.SSLError.reason). OpenSSL 3.2
# renamed the "SSLV3_ALERT_*" reasons "SSL/TLS_ALERT_*": both spellings.
_REFUSED_ALERTS = frozenset(
    ["TLSV1_ALERT_UNKNOWN_CA", "TLSV13_ALERT_CERTIFICATE_REQUIRED"]
    + [
        f"{prefix}_ALERT_{alert}"
        for prefix in ("SSLV3", "SSL/TLS")
        for alert in ("BAD_CERTIFICATE", "UNSUPPORTED_CERTIFICATE", "CERTIFICATE_REVOKED", "CERTIFICATE_EXPIRED", "CERTIFICATE_UNKNOWN")
    ]
)


def certificate_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was caused by, a TLS certificate that failed verification
    (see the module's docstring): a failure the default ``retry_on`` and the HTTP helpers
    never retry, whatever class the client wraps it in."""
    classes = _classes(_CERTIFICATE, (ssl.SSLCertVerificationError,), _cert_cache)
    return any(isinstance(e, classes) or isinstance(e, ssl.SSLError) and getattr(e, "reason", None) in _REFUSED_ALERTS for e in linked(exc))


def linked(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions behind it, nearest first: its ``__cause__``,
    ``__context__``, a ``reason`` attribute (urllib3's) and the exceptions among its
    ``args`` (how clients wrap the error they caught), each once."""
    seen = set()
    todo = deque((exc,))
    while todo:
        e = todo.popleft()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo.extend(x for x in (e.__cause__, e.__context__, _reason(e)) if isinstance(x, BaseException))
        todo.extend(a for a in e.args if isinstance(a, BaseException))


def _reason(exc: BaseException) -> object:
    """``exc.reason``, or None: a client's ``reason`` property that raises (it reads a
    response that is not there) must not replace the caller's error with its own."""
    try:
        return getattr(exc, "reason", None)
    except Exception:
        return None


def _classes(
    clients: Tuple[Tuple[str, Tuple[str, ...]], ...],
    builtin: Tuple[Type[BaseException], ...],
    cache: Dict[Tuple[object, ...], Tuple[Type[BaseException], ...]],
) -> Tuple[Type[BaseException], ...]:
    """``builtin`` and the ``clients``' classes whose modules are imported now."""
    modules = sys.modules
    loaded = tuple(modules.get(name) for name, _ in clients)
    classes = cache.get(loaded)
    if classes is None:
        found = list(builtin)
        complete = True
        for (name, attributes), module in zip(clients, loaded):
            if module is not None:
                for attribute in attributes:
                    obj: object = module
                    for part in attribute.split("."):
                        obj = getattr(obj, part, None)
                    if isinstance(obj, type) and issubclass(obj, BaseException):
                        found.append(obj)
                    else:
                        complete = False  # (a module still being imported: ask again)
        classes = tuple(dict.fromkeys(found))
        if complete:
            cache[loaded] = classes
    return classes
