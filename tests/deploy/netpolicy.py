"""A small evaluator of Kubernetes NetworkPolicy semantics over rendered manifests (tests only).

Implements the rules of the NetworkPolicy API (networking.k8s.io/v1, kubernetes.io/docs/concepts/
services-networking/network-policies): a pod selected by no policy of a direction is open in that
direction; a selected pod admits a connection only if some rule of some selecting policy matches
the peer and the port; a connection needs both the source's egress and the destination's ingress.
Peers: podSelector (policy's namespace), namespaceSelector (+ podSelector), ipBlock (outside pods).
Ports are numeric (the manifests use no named ports in policies). No API server is involved.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Endpoint:
    """A pod (namespace + labels) or, with `ip`, an address outside the cluster's pods."""

    namespace: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    ip: str | None = None


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """LabelSelector semantics: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist).

    An empty selector matches everything. Raises: ValueError on an unknown operator.
    """
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"unknown selector operator {op!r}")
    return True


class Network:
    """NetworkPolicies and namespace labels from rendered objects; answers `allowed(src, dst, port)`."""

    def __init__(self, docs: list[dict[str, Any]], extra_namespaces: dict[str, dict[str, str]]) -> None:
        self.policies = [d for d in docs if d.get("kind") == "NetworkPolicy"]
        self.namespaces: dict[str, dict[str, str]] = {}
        for name, labels in extra_namespaces.items():
            self.namespaces[name] = {"kubernetes.io/metadata.name": name, **labels}
        for doc in docs:
            if doc.get("kind") == "Namespace":
                name = doc["metadata"]["name"]
                self.namespaces[name] = {"kubernetes.io/metadata.name": name, **doc["metadata"].get("labels", {})}

    def _peer_matches(self, peer: dict[str, Any], policy_ns: str, other: Endpoint) -> bool:
        if "ipBlock" in peer:
            if other.ip is None:
                return False  # pods are matched by selectors (the manifests use ipBlock for the outside)
            block = peer["ipBlock"]
            address = ipaddress.ip_address(other.ip)
            if address not in ipaddress.ip_network(block["cidr"]):
                return False
            return not any(address in ipaddress.ip_network(c) for c in block.get("except", []))
        if other.ip is not None:
            return False
        if "namespaceSelector" in peer:
            if not selector_matches(peer["namespaceSelector"], self.namespaces.get(other.namespace, {})):
                return False
        elif other.namespace != policy_ns:
            return False
        return selector_matches(peer.get("podSelector"), other.labels)

    def _direction_allows(self, pod: Endpoint, other: Endpoint, port: int, direction: str) -> bool:
        if pod.ip is not None:
            return True  # outside the cluster: no policy applies
        key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
        selecting = [p for p in self.policies
                     if p["metadata"]["namespace"] == pod.namespace
                     and direction in p["spec"].get("policyTypes", ["Ingress"])
                     and selector_matches(p["spec"].get("podSelector"), pod.labels)]
        if not selecting:
            return True
        for policy in selecting:
            for rule in policy["spec"].get(key) or []:
                ports = rule.get("ports")
                if ports and not any(p.get("port") == port for p in ports):
                    continue
                peers = rule.get(peers_key)
                if not peers or any(self._peer_matches(peer, pod.namespace, other) for peer in peers):
                    return True
        return False

    def allowed(self, src: Endpoint, dst: Endpoint, port: int) -> bool:
        """True when a TCP connection from `src` to `dst:port` passes both sides' policies."""
        return (self._direction_allows(src, dst, port, "Egress")
                and self._direction_allows(dst, src, port, "Ingress"))
