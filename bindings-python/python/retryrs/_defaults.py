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
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Dict, Tuple, Type

_BUILTIN: Tuple[Type[BaseException], ...] = tuple(dict.fromkeys((ConnectionError, TimeoutError, asyncio.TimeoutError, socket.timeout)))

# (module, attribute) of each client error class, looked up once its module is loaded.
_CLIENTS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("requests", ("exceptions.ConnectionError", "exceptions.Timeout", "exceptions.ChunkedEncodingError")),
    ("httpx", ("TransportError",)),
    ("aiohttp", ("ClientConnectionError", "ServerDisconnectedError", "ClientPayloadError", "ServerTimeoutError")),
)

# Keyed by the client modules themselves (None: not imported), so a module imported,
# replaced or removed later is seen.
_cache: Dict[Tuple[object, ...], Tuple[Type[BaseException], ...]] = {}


def transient() -> Tuple[Type[BaseException], ...]:
    """The classes the default ``retry_on`` retries, for the clients imported now."""
    modules = sys.modules
    loaded = tuple(modules.get(name) for name, _ in _CLIENTS)
    classes = _cache.get(loaded)
    if classes is None:
        found = list(_BUILTIN)
        complete = True
        for (name, attributes), module in zip(_CLIENTS, loaded):
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
            _cache[loaded] = classes
    return classes
