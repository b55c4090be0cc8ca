"""Which inbox URLs the broker will POST to: never its own network's services (SSRF).

A member registers the URL the broker delivers to, so a hostile member could point it at the
broker's neighbours (a database, a cloud's metadata service at 169.254.169.254, an admin page on
localhost). An inbox URL is accepted when it is ``http`` or ``https`` without credentials and
either its host is in ``allowed_hosts`` or every address it resolves to is in
``allowed_networks`` or is a global (public) address. Loopback, private, link-local, shared,
multicast and reserved addresses are refused unless allowed, and so is an IPv6 address that
reaches one of them through a translator or tunnel (NAT64, 6to4, Teredo, IPv4-mapped). The
check runs at registration (the answer says why a URL is refused) and again before every
delivery, since a name can resolve elsewhere later; redirects are never followed.

Known limit: between the check and the connection a name could be made to resolve elsewhere
(DNS rebinding); allow-list host names you control, or networks, to close it.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class InboxPolicy:
    """The operator's allow-lists, as :func:`refusal` takes them."""

    networks: tuple[Network, ...] = ()
    hosts: tuple[str, ...] = ()

    @classmethod
    def of(cls, networks: Sequence[str], hosts: Sequence[str]) -> InboxPolicy:
        return cls(tuple(parse_networks(networks)), tuple(hosts))

    def refusal(self, url: str) -> str | None:
        return refusal(url, self.networks, self.hosts)


def parse_networks(values: Sequence[str]) -> list[Network]:
    """``["127.0.0.0/8", "10.1.2.3"]`` -> networks; raises ``ValueError`` naming a bad one."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{value!r} is not an IP network (such as 10.0.0.0/8)") from None
    return networks


def refusal(
    url: str, allowed_networks: Sequence[Network] = (), allowed_hosts: Sequence[str] = ()
) -> str | None:
    """Why the broker will not deliver to ``url``, or None when it may.

    Examples
    --------
    >>> refusal("http://169.254.169.254/latest/meta-data")[:54]
    'it resolves to 169.254.169.254, a link-local address: '
    >>> refusal("http://127.0.0.1:8101/inbox", parse_networks(["127.0.0.0/8"])) is None
    True
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"the scheme {parts.scheme!r} is not http or https"
    if parts.username or parts.password:
        return "it carries a user name or password"
    host = parts.hostname
    if not host:
        return "it has no host"
    if host.lower().rstrip(".") in {h.lower().rstrip(".") for h in allowed_hosts}:
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError) as error:
        return f"its host {host!r} does not resolve ({error})"
    for info in infos:
        resolved = ipaddress.ip_address(info[4][0].split("%")[0])
        for address in (resolved, *_embedded(resolved)):
            if any(address in network for network in allowed_networks) or address.is_global:
                continue
            within = "" if address == resolved else f" (within {resolved})"
            return (
                f"it resolves to {address}{within}, {_kind(address)}: the broker does not "
                "deliver to its own network unless an operator allows it "
                "(BROKER_INBOX_ALLOWED_NETWORKS or BROKER_INBOX_ALLOWED_HOSTS)"
            )
    return None


def _embedded(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list:
    """The IPv4 addresses an IPv6 address reaches through a translator or tunnel: IPv4-mapped,
    NAT64 (64:ff9b::/96, RFC 6052; 64:ff9b:1::/48, RFC 8215), 6to4 and Teredo. Each is held to
    the same rule as the address itself (``[64:ff9b::a9fe:a9fe]`` is 169.254.169.254)."""
    if address.version != 6:
        return []
    found = [address.ipv4_mapped, address.sixtofour, *(address.teredo or ())]
    if any(address in network for network in _NAT64):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [embedded for embedded in found if embedded is not None]


_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


def _kind(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    for name, flag in (
        ("an unspecified", address.is_unspecified),
        ("a loopback", address.is_loopback),
        ("a link-local", address.is_link_local),
        ("a private", address.is_private),
        ("a multicast", address.is_multicast),
        ("a reserved", address.is_reserved),
    ):
        if flag:
            return f"{name} address"
    return "a non-public address"
