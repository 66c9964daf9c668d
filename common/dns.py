"""DNS names of service URLs expanded into one URL per address: compose replicas behind one service
name, a Kubernetes headless Service. Used by the runner's `static` env provider and the gateway's
replica list, so each replica is leased / balanced and health-checked on its own.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlparse, urlunparse

#: `(host, port) -> sorted IPv4 addresses` ([] when the name does not resolve).
Resolver = Callable[[str, int], list[str]]


def resolve_ipv4(host: str, port: int) -> list[str]:
    """Every IPv4 address of `host` (system resolver, as compose's embedded DNS answers), sorted;
    [] when the name does not resolve."""
    try:
        infos = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)
    except socket.gaierror:
        return []
    return sorted({str(info[4][0]) for info in infos})


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def expand_urls(urls: list[str], resolver: Resolver = resolve_ipv4) -> tuple[list[str], list[str]]:
    """`(expanded URLs, unresolvable names)`, both in input order: each URL with a DNS name becomes one
    URL per address (port and path kept); IP-literal URLs stay as they are.

    Raises: ValueError for a URL without a host."""
    expanded: list[str] = []
    unresolved: list[str] = []
    for url in urls:
        parsed = urlparse(url)
        host = parsed.hostname or ""
        if not host:
            raise ValueError(f"URL {url!r} has no host")
        if _is_ip(host):
            expanded.append(url.rstrip("/"))
            continue
        addresses = resolver(host, parsed.port or 80)
        if not addresses:
            unresolved.append(host)
        for address in addresses:
            netloc = f"{address}:{parsed.port}" if parsed.port else address
            expanded.append(urlunparse(parsed._replace(netloc=netloc)).rstrip("/"))
    return expanded, unresolved
