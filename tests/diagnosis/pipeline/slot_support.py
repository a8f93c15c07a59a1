"""Two worlds for the asks, slots and slot-calls tests, without Django: one with plain names
(checkout, cart-api, billing-db, node) and one with the demo world's names (order-service,
payment-service, user-service). Tool messages are plain dicts as the toolbox returns them
(invocation_id, tool_name, success, source, output, arguments, evidence_refs); the recorded
invocations the gatekeeper reads are small dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import SlotWorld
from diagnosis.pipeline.asks.reader import asks_read
from diagnosis.pipeline.focus import Inventory, World
from diagnosis.pipeline.windows import window_in
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

VOCABULARY = vocabulary_load(DEFAULT_VOCABULARY_FILE)
NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
SERVICE_LABELS = ("service", "app", "job")
ALL_TOOLS = frozenset({"query_metrics", "query_promql", "query_logs", "lookup_knowledge", "query_targets"})
# The sources without Prometheus: alerts, logs and runbooks only.
NO_PROMETHEUS = frozenset({"query_metrics", "query_logs", "lookup_knowledge"})


@dataclass(frozen=True)
class Names:
    """The names one world's questions and records use."""

    id: str
    services: tuple[str, ...]
    alerts: tuple[str, ...]
    # A service with a firing critical alert on a ratio series, and how a question names its metric.
    service: str
    service_metric: str
    alert: str
    alert_series: str
    alert_threshold: str
    alert_value: str
    # A second service, its metric word and its warning alert.
    other: str
    other_metric: str
    other_alert: str
    other_series: str
    other_threshold: str
    other_value: str
    # A third service, whose alert questions ask about.
    third: str
    third_metric: str
    # A scrape job of the world.
    job: str

    @property
    def alert_expr(self) -> str:
        return f"{self.alert_series} > {self.alert_threshold}"

    @property
    def other_expr(self) -> str:
        return f"{self.other_series} > {self.other_threshold}"


PLAIN = Names(
    id="plain",
    services=("checkout", "payments", "cart-api", "billing-db"),
    alerts=("CheckoutErrorRatio", "BillingDbConnectionsSaturated"),
    service="checkout",
    service_metric="错误率",
    alert="CheckoutErrorRatio",
    alert_series="checkout:error_ratio",
    alert_threshold="0.023",
    alert_value="0.3279",
    other="billing-db",
    other_metric="连接数",
    other_alert="BillingDbConnectionsSaturated",
    other_series='pg_stat_activity_count{service="billing-db"}',
    other_threshold="80",
    other_value="89",
    third="cart-api",
    third_metric="p99 延迟",
    job="node",
)
DEMO = Names(
    id="demo",
    services=("payment-service", "order-service", "user-service"),
    alerts=("HighCPUUsage", "HighMemoryUsage", "SlowResponse"),
    service="order-service",
    service_metric="内存使用率",
    alert="HighMemoryUsage",
    alert_series='jvm_memory_used_ratio{service="order-service"}',
    alert_threshold="0.85",
    alert_value="0.91",
    other="payment-service",
    other_metric="CPU",
    other_alert="HighCPUUsage",
    other_series='cpu_usage_ratio{service="payment-service"}',
    other_threshold="0.8",
    other_value="0.92",
    third="user-service",
    third_metric="响应时间",
    job="kubernetes-pods",
)
WORLDS = [PLAIN, DEMO]
WORLD_IDS = [names.id for names in WORLDS]


def world(names: Names) -> World:
    return World(
        vocabulary=VOCABULARY,
        inventory=Inventory.build(services=names.services, alerts=names.alerts, vocabulary=VOCABULARY),
        service_labels=SERVICE_LABELS,
        now=NOW,
    )


def slot_world(tools: frozenset[str] = ALL_TOOLS) -> SlotWorld:
    return SlotWorld(
        vocabulary=VOCABULARY, service_labels=SERVICE_LABELS, tools=tools, now=NOW, logs_window_minutes=60
    )


def asks_of(query: str, names: Names) -> list[Ask]:
    """The asks code reads from a question, in that world."""
    return asks_read(
        query=query,
        focus=world(names).focus_of(query=query),
        vocabulary=VOCABULARY,
        window=window_in(query, now=NOW, default_minutes=60),
    )


def message(
    invocation_id: int,
    tool_name: str,
    key: str,
    records: list[dict],
    texts: list[str],
    *,
    arguments: dict | None = None,
    success: bool = True,
    source: str = "prometheus",
    extra: dict | None = None,
) -> dict:
    """A tool message whose records under `key` are each cited by one evidence ref (`$.key[i]`)."""
    return {
        "invocation_id": invocation_id,
        "tool_name": tool_name,
        "success": success,
        "source": source,
        "output": {key: records} | (extra or {}),
        "arguments": arguments or {},
        "evidence_refs": [{"raw_path": f"$.{key}[{i}]", "text": text} for i, text in enumerate(texts)],
    }


def failed(invocation_id: int, tool_name: str, *, arguments: dict, source: str) -> dict:
    return {
        "invocation_id": invocation_id,
        "tool_name": tool_name,
        "success": False,
        "source": source,
        "output": {"error": "connection refused"},
        "arguments": arguments,
        "evidence_refs": [],
    }


@dataclass
class Invocation:
    """A recorded tool call as the gatekeeper reads it (a `ToolInvocation` row is one)."""

    pk: int
    tool_name: str
    output: dict
    input: dict = field(default_factory=dict)
    retrieval_details: dict = field(default_factory=dict)


def recorded(tool_message: dict) -> Invocation:
    """The invocation the session recorded for a tool message."""
    return Invocation(
        pk=tool_message["invocation_id"],
        tool_name=tool_message["tool_name"],
        output=tool_message["output"],
        input=tool_message["arguments"],
        retrieval_details={"evidence_refs": [dict(ref) for ref in tool_message["evidence_refs"]]},
    )


# --- Records of each world --------------------------------------------------------------------


def alert_record(names: Names, *, other: bool = False, **changes) -> dict:
    record = (
        {
            "alert_name": names.other_alert,
            "service": names.other,
            "state": "firing",
            "severity": "warning",
            "value": names.other_value,
            "expr": names.other_expr,
        }
        if other
        else {
            "alert_name": names.alert,
            "service": names.service,
            "state": "firing",
            "severity": "critical",
            "value": names.alert_value,
            "expr": names.alert_expr,
        }
    )
    return record | changes


def alert_text(record: dict) -> str:
    return (
        f"{record['alert_name']} {record['state']} service={record['service']} severity={record['severity']} "
        f"value={record.get('value', '')} expr: {record.get('expr', '')}"
    )


def alerts_message(
    invocation_id: int, records: list[dict], *, arguments: dict | None = None, source: str = "alertmanager"
) -> dict:
    return message(
        invocation_id,
        "query_metrics",
        "alerts",
        records,
        [alert_text(r) for r in records],
        arguments=arguments,
        source=source,
    )
