"""Host ports in use on a node (upstream framework/types.go HostPortInfo)."""
from __future__ import annotations

_WILDCARD_IP = "0.0.0.0"


class HostPortInfo:
    """ip -> {(protocol, port)}; 0.0.0.0 conflicts with every IP (upstream HostPortInfo)."""

    __slots__ = ("ports",)

    def __init__(self) -> None:
        self.ports: dict[str, set[tuple[str, int]]] = {}

    @staticmethod
    def _sanitize(ip: str, protocol: str) -> tuple[str, str]:
        return (ip or _WILDCARD_IP, protocol or "TCP")

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        self.ports.setdefault(ip, set()).add((protocol, port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        s = self.ports.get(ip)
        if s is not None:
            s.discard((protocol, port))
            if not s:
                del self.ports[ip]

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        if port <= 0:
            return False
        ip, protocol = self._sanitize(ip, protocol)
        pp = (protocol, port)
        if ip == _WILDCARD_IP:
            return any(pp in s for s in self.ports.values())
        return pp in self.ports.get(ip, ()) or pp in self.ports.get(_WILDCARD_IP, ())

    def __len__(self) -> int:
        return sum(len(s) for s in self.ports.values())

    def clone(self) -> "HostPortInfo":
        c = HostPortInfo()
        c.ports = {ip: set(s) for ip, s in self.ports.items()}
        return c
