"""The roles a metric family may play as a service's key signal (CPU, memory, network, errors,
latency, requests) and the label pairs of service-graph counters, as language data
(`data/signal_roles.json`): told by TYPE and the words of a family's name and HELP, never by a name
of any one stack. Django-free: the pipeline's investigation reads it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SIGNAL_ROLES_FILE = Path(__file__).parent / "data" / "signal_roles.json"
WORD = re.compile(r"[A-Za-z0-9]+")
NAME_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@dataclass(frozen=True)
class MetricFamily:
    """A metric family as its source states it (`/api/v1/metadata`) and the label names of its series
    (asked of the source only where a role needs them)."""

    name: str
    type: str
    help: str = ""
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Role:
    role: str
    label: str
    types: tuple[str, ...]
    all: tuple[str, ...] = ()
    any: tuple[str, ...] = ()
    none: tuple[str, ...] = ()
    unit: str = ""
    # A label naming the address a series is about (a probe's target): its series are read by it too
    # and said of the service whose scrape target has that address.
    address: str = ""
    # The least spread a move of its series is measured in, in its unit: below three of it is noise.
    floor: float = 0.0
    # Labels naming the operation a series counts (a span's name): its series are read as each
    # operation's share of its service's, and a family without one of them plays the next role.
    operation: tuple[str, ...] = ()

    def matches(self, *, type: str, words: frozenset[str]) -> bool:
        return (
            type in self.types
            and all(word in words for word in self.all)
            and (not self.any or any(word in words for word in self.any))
            and not any(word in words for word in self.none)
        )


@dataclass(frozen=True)
class EdgeShape:
    """A counter of requests between two services, by the labels naming the caller and the callee."""

    caller: str
    callee: str
    any: tuple[str, ...] = ()


@dataclass(frozen=True)
class EdgeGap:
    """The time a call spends between two services: its latency as the caller sees it (a family of the
    edge role whose words hold one of `caller_side`) minus as the callee sees it (one of `callee_side`)."""

    role: str
    label: str
    caller_side: tuple[str, ...]
    callee_side: tuple[str, ...]
    unit: str = ""


@dataclass(frozen=True)
class Targets:
    """The series a metrics source writes of each scrape target (Prometheus's `up`): whether it
    answered, by the service and the target's `address` label."""

    metric: str
    role: str
    label: str
    address: str
    unit: str = ""


@dataclass(frozen=True)
class SignalRoles:
    roles: tuple[Role, ...]
    edges: tuple[EdgeShape, ...]
    # Roles of series between two services (a caller and a callee label): said of the callee.
    edge_roles: tuple[Role, ...] = ()
    edge_gap: EdgeGap | None = None
    targets: Targets | None = None
    # Labels naming the address of the server an exporter reads its series from: the service's address.
    served_address: tuple[str, ...] = ()
    # Words of a family's name that say it states a configuration: never a signal.
    never: frozenset[str] = frozenset()

    def configuration(self, name: str) -> bool:
        return bool(family_words(name) & self.never)

    def role(self, name: str) -> Role | None:
        return next((role for role in self.roles if role.role == name), None)


def family_words(name: str, help: str = "") -> frozenset[str]:
    """The words a family is known by, lower case: its name's snake_case and CamelCase parts and its
    HELP text's words."""
    parts = [part for chunk in name.split("_") for part in (chunk, *NAME_PART.findall(chunk))]
    return frozenset(word.lower() for word in [*parts, *WORD.findall(help)] if word)


@cache
def signal_roles(path: Path = SIGNAL_ROLES_FILE) -> SignalRoles:
    data = json.loads(path.read_text(encoding="utf-8"))
    return SignalRoles(
        roles=tuple(Role(**{key: _tupled(value) for key, value in role.items()}) for role in data["roles"]),
        edges=tuple(
            EdgeShape(**{key: _tupled(value) for key, value in edge.items()}) for edge in data["edges"]
        ),
        edge_roles=tuple(
            Role(**{key: _tupled(value) for key, value in role.items()})
            for role in data.get("edge_roles", [])
        ),
        edge_gap=EdgeGap(**{key: _tupled(value) for key, value in data["edge_gap"].items()})
        if "edge_gap" in data
        else None,
        targets=Targets(**data["targets"]) if data.get("targets") else None,
        served_address=tuple(data.get("served_address", ())),
        never=frozenset(data.get("never", ())),
    )


def _tupled(value: object) -> object:
    return tuple(value) if isinstance(value, Iterable) and not isinstance(value, str) else value
