"""A real network guard for the adapter tests: only loopback names and addresses may be looked up or dialled."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


def is_local(host: Any) -> bool:
    """True for a loopback name or address (``None`` is the wildcard, also local)."""
    if host is None:
        return True
    name = host.decode() if isinstance(host, bytes) else str(host)
    if name.lower() in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.split("%")[0]).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def outside_host_guard() -> Iterator[list[str]]:
    """Patch ``socket.getaddrinfo`` and ``socket.socket.connect`` in-process: a non-local name or address is
    recorded in the yielded list and refused (as an offline machine would), so a test can assert it stays empty."""
    seen: list[str] = []
    real_gai, real_connect = socket.getaddrinfo, socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_local(host):
            seen.append(str(host))
            raise socket.gaierror(socket.EAI_NONAME, f"dimobench test guard: lookup of {host!r} refused")
        return real_gai(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and not is_local(address[0]):
            seen.append(f"connect {address[0]}")
            raise OSError(f"dimobench test guard: connection to {address!r} refused")
        return real_connect(self, address)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    socket.socket.connect = connect  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        socket.getaddrinfo = real_gai  # type: ignore[assignment]
        socket.socket.connect = real_connect  # type: ignore[method-assign]


def turn(n: int, user: str, ts: str = "2024-04-21T08:51:06") -> dict[str, Any]:
    """A public turn as the harness passes it (a plain dict works: adapters read by key)."""
    from dimobench.evaluate.protocol import TurnView

    return TurnView({"turn": n, "session": 1, "timestamp": ts, "user": user, "assistant": "Noted."})
