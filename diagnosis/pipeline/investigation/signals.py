"""Which metric families are a service's key signals, and the one bounded range query each is read
by, aggregated by the label naming the service (one query for every service, not one per pod).

`key_signal` is the one place a family is judged: from its name, TYPE, HELP and label names (the
metric catalog's entries have these; until then the source's `/api/v1/metadata`), against the roles
of `tools/data/signal_roles.json`. No family of any stack is named here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from itertools import zip_longest

from tools.signal_roles import MetricFamily, SignalRoles, family_words, signal_roles

# A counter's rate is read over this range: several scrapes at the slowest usual interval (1 min).
RATE_RANGE = "3m"
# A histogram's latency is read at this quantile (a summary's quantiles are read as they are).
HISTOGRAM_QUANTILE = "0.9"
# The most families read (each one range query); the rest are left out, counted.
MAX_SIGNALS = 40
# Counter families a scrape of text format names with `_total`, OpenMetrics without.
COUNTER_SUFFIX = "_total"
# The most families the addresses services serve are read from (one per namespace: one exporter's).
MAX_SERVED = 3


@dataclass(frozen=True)
class KeySignal:
    role: str
    # How a mechanism names it (`CPU 使用`) and the unit its numbers are in (`cores`, `seconds`).
    label: str
    unit: str
    metric: str
    # The label naming the service a move of its series is said of; for a series between two
    # services (`caller` set), the callee's.
    by: str
    query: str
    caller: str = ""
    # The least spread its changes are measured in (`change.change_of`): 0 for a level, 1 for a count;
    # how much of the baseline's end its level is read over (None: `change.LEVEL_WINDOW`).
    floor: float = 0.0
    level_window: timedelta | None = None
    # The label naming the address its series are about (a probe's target, a scrape target's own).
    address: str = ""
    # The label naming the operation each series is the share of its service's spans of.
    operation: str = ""


@dataclass(frozen=True)
class EdgeSignal:
    """A service-graph counter: requests from the `caller` label's service to the `callee` label's."""

    metric: str
    caller: str
    callee: str

    def query(self, minutes: int) -> str:
        return f"sum by ({self.caller}, {self.callee}) (increase({self.metric}[{minutes}m]))"


@dataclass(frozen=True)
class ServedAddresses:
    """Which service serves which address: families whose series name, beside their service (`by`),
    the address of the server an exporter reads them from (`address`), one instant query."""

    metrics: tuple[str, ...]
    by: str
    address: str

    def query(self) -> str:
        return " or ".join(f"count by ({self.by}, {self.address}) ({metric})" for metric in self.metrics)


def served_addresses(
    families: Iterable[MetricFamily], *, service_labels: Sequence[str], series: Iterable[str] = ()
) -> ServedAddresses | None:
    """The families (their label names known) that say which address a service serves, one per
    namespace, by the first service label and served-address label they hold (None: none does)."""
    known, served = set(series), signal_roles().served_address
    naming: list[tuple[MetricFamily, str, str]] = []
    for family in sorted(families, key=lambda f: f.name):
        labels = set(family.labels)
        by = next((label for label in service_labels if label in labels), None)
        address = next((label for label in served if label in labels), None)
        if by is not None and address is not None:
            naming.append((family, by, address))
    if not naming:
        return None
    # One query: the families labelled as the first one is.
    _, by, address = naming[0]
    metrics: dict[str, str] = {}
    for family, *pair in naming:
        kind = family.type.lower()
        if pair == [by, address]:
            name = f"{family.name}_bucket" if kind == "histogram" else _series_name(family.name, kind, known)
            metrics.setdefault(_namespace(family.name), name)
    return ServedAddresses(metrics=tuple(metrics.values())[:MAX_SERVED], by=by, address=address)


def key_signal(
    family: MetricFamily,
    *,
    service_labels: Sequence[str],
    series: Iterable[str] = (),
    roles: SignalRoles | None = None,
) -> KeySignal | EdgeSignal | None:
    """The role a family plays (None: none), judged from its name, TYPE, HELP and label names; its
    query reads its series as the source names them (`series`: a counter with or without `_total`)."""
    roles = roles or signal_roles()
    if roles.configuration(family.name):
        return None
    words = family_words(family.name, family.help)
    kind = family.type.lower()
    labels = set(family.labels)
    metric = _series_name(family.name, kind, set(series))
    for shape in roles.edges:
        if not {shape.caller, shape.callee} <= labels:
            continue
        if kind == "counter" and (words & set(shape.any)):
            return EdgeSignal(metric=metric, caller=shape.caller, callee=shape.callee)
        role = next((role for role in roles.edge_roles if role.matches(type=kind, words=words)), None)
        if role is not None:
            query = _query(
                metric, kind=kind, by=f"{shape.caller}, {shape.callee}", role=role.role, labels=labels
            )
            return KeySignal(
                role=role.role, label=role.label, unit=role.unit, metric=metric, by=shape.callee, query=query,
                caller=shape.caller, floor=role.floor,
            )  # fmt: skip
    by = next((label for label in service_labels if label in labels), None)
    if by is None:
        return None
    for role in roles.roles:
        operation = next((label for label in role.operation if label in labels), "")
        if not role.matches(type=kind, words=words) or (role.operation and not operation):
            continue
        address = role.address if role.address in labels else ""
        by_labels = f"{by}, {address}" if address else by
        query = (
            _share_query(metric, by=by, operation=operation)
            if operation
            else _query(metric, kind=kind, by=by_labels, role=role.role, labels=labels)
        )
        return KeySignal(
            role=role.role, label=role.label, unit=role.unit, metric=metric, by=by, query=query, address=address,
            floor=role.floor, operation=operation,
        )  # fmt: skip
    return None


def target_signal(*, service_labels: Sequence[str], labels: Iterable[str]) -> KeySignal | None:
    """Whether each scrape target answered, by service and address (None: the source writes no such
    series, or not by a service label); `labels`: the label names of its series."""
    targets = signal_roles().targets
    names = set(labels)
    by = next((label for label in service_labels if label in names), None)
    if targets is None or by is None or targets.address not in names:
        return None
    return KeySignal(
        role=targets.role, label=targets.label, unit=targets.unit, metric=targets.metric, by=by,
        query=f"min by ({by}, {targets.address}) ({targets.metric})", address=targets.address,
    )  # fmt: skip


def may_signal(name: str, type: str, help: str = "") -> bool:
    """Whether a family could be a key signal, judged before its labels are known (they are asked of
    the source only for these)."""
    roles = signal_roles()
    if roles.configuration(name):
        return False
    words, kind = family_words(name, help), type.lower()
    return any(role.matches(type=kind, words=words) for role in (*roles.roles, *roles.edge_roles)) or (
        kind == "counter" and any(words & set(shape.any) for shape in roles.edges)
    )


def key_signals(
    families: Iterable[MetricFamily], *, service_labels: Sequence[str], series: Iterable[str] = ()
) -> tuple[list[KeySignal], list[EdgeSignal], int]:
    """The families' key signals (at most MAX_SIGNALS), the service-graph counters and how many signals
    were left out. The bound is shared among the roles in turn (one exporter's forty memory gauges do
    not crowd out every service's latency); within a role, a family whose name's namespace holds few
    of the role's families comes first: many are one program's breakdown (`node_memory_*`), few are
    what every service writes (`process_cpu_seconds_total`)."""
    known = set(series)
    families = list(families)
    found = [key_signal(family, service_labels=service_labels, series=known) for family in families]
    roles = signal_roles()
    order = [role.role for role in (*roles.roles, *roles.edge_roles)]
    signals = [s for s in found if isinstance(s, KeySignal)]
    by_role: dict[str, list[KeySignal]] = {}
    for signal in sorted(signals, key=lambda s: (order.index(s.role), s.metric)):
        by_role.setdefault(signal.role, []).append(signal)
    for role_signals in by_role.values():
        crowd = Counter(_namespace(s.metric) for s in role_signals)
        role_signals.sort(key=lambda s: (crowd[_namespace(s.metric)], s.metric))
    taken = [s for turn in zip_longest(*by_role.values()) for s in turn if s is not None]
    taken += edge_gaps(list(zip(families, found, strict=True)), roles=roles)
    edges = [s for s in found if isinstance(s, EdgeSignal)]
    return taken[:MAX_SIGNALS], edges[:1], max(0, len(taken) - MAX_SIGNALS)


def _namespace(metric: str) -> str:
    return metric.split("_", 1)[0]


def edge_gaps(
    judged: Sequence[tuple[MetricFamily, KeySignal | EdgeSignal | None]], *, roles: SignalRoles
) -> list[KeySignal]:
    """Per pair of edge-latency families by the same labels, one the caller's view (its words hold a
    `caller_side` word) and one the callee's: the caller's divided by the callee's, how much longer a
    call takes than the callee spends on it (a delay on the network raises it while the callee's own
    view stays flat; a ratio, so a fast edge's noise is judged against its own size)."""
    gap = roles.edge_gap
    if gap is None:
        return []
    edge_latency = [
        (family, signal)
        for family, signal in judged
        if isinstance(signal, KeySignal)
        and signal.caller
        and signal.role in {r.role for r in roles.edge_roles}
    ]

    def side(words: tuple[str, ...], other: tuple[str, ...]) -> list[tuple[MetricFamily, KeySignal]]:
        said = [(f, s, family_words(f.name, f.help)) for f, s in edge_latency]
        return [(f, s) for f, s, w in said if w & set(words) and not w & set(other)]

    found = []
    for client_family, client in side(gap.caller_side, gap.callee_side):
        for server_family, server in side(gap.callee_side, gap.caller_side):
            if (server.caller, server.by) != (client.caller, client.by) or server.metric == client.metric:
                continue
            labels = f"{client.caller}, {client.by}"
            query = (
                f"{_edge_view(client, client_family.type.lower())} / on ({labels}) "
                f"{_edge_view(server, server_family.type.lower())}"
            )
            found.append(
                KeySignal(
                    role=gap.role,
                    label=gap.label,
                    unit=gap.unit,
                    metric=client.metric,
                    by=client.by,
                    query=query,
                    caller=client.caller,
                )
            )
    return found[:1]


def _edge_view(signal: KeySignal, kind: str) -> str:
    """One edge's latency, one series per (caller, callee): a histogram's quantile, a summary's or a
    gauge's largest."""
    labels = f"{signal.caller}, {signal.by}"
    if kind == "histogram":
        bucket = signal.metric if signal.metric.endswith("_bucket") else f"{signal.metric}_bucket"
        return (
            f"histogram_quantile({HISTOGRAM_QUANTILE}, sum by ({labels}, le) (rate({bucket}[{RATE_RANGE}])))"
        )
    return f"max by ({labels}) ({signal.metric})"


def _series_name(name: str, kind: str, series: set[str]) -> str:
    if kind == "counter" and series and name not in series and f"{name}{COUNTER_SUFFIX}" in series:
        return f"{name}{COUNTER_SUFFIX}"
    return name


def _share_query(metric: str, *, by: str, operation: str) -> str:
    """Each operation's share of its service's spans (a counter's rates): a share moves when the
    service's code takes another path, not when its traffic grows or falls."""
    rate = f"rate({metric}[{RATE_RANGE}])"
    return f"sum by ({by}, {operation}) ({rate}) / on ({by}) group_left sum by ({by}) ({rate})"


def _query(metric: str, *, kind: str, by: str, role: str, labels: set[str]) -> str:
    # A CPU counter split by mode (a node's) counts busy time only.
    selector = '{mode!~"idle|iowait|steal"}' if role == "cpu" and "mode" in labels else ""
    if kind == "counter":
        return f"sum by ({by}) (rate({metric}{selector}[{RATE_RANGE}]))"
    if kind == "histogram":
        bucket = metric if metric.endswith("_bucket") else f"{metric}_bucket"
        return f"histogram_quantile({HISTOGRAM_QUANTILE}, sum by ({by}, le) (rate({bucket}[{RATE_RANGE}])))"
    if kind == "summary":
        return f"max by ({by}, quantile) ({metric})"
    if role.endswith("latency"):
        return f"max by ({by}) ({metric})"
    return f"sum by ({by}) ({metric})"
