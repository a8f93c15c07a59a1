"""Two worlds for the ask kinds' tests (and the guards' that read asks), without Django: one with plain names
(checkout, cart-api, billing-db, node) and one with the demo world's names (order-service,
payment-service, user-service). Tool results are built as the toolbox returns them (`ToolResult`, from
the output and refs a call would store); the recorded invocations the gatekeeper reads are small
dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.calls import slot_calls_run
from diagnosis.pipeline.asks.kind import SlotWorld
from diagnosis.pipeline.asks.reader import asks_read
from diagnosis.pipeline.asks.slots import slots_read
from diagnosis.pipeline.focus import Inventory, World
from diagnosis.pipeline.slot import Slot
from diagnosis.pipeline.windows import window_in
from tools.evidence.logs.record import LogLine
from tools.evidence.registry import kind_named
from tools.evidence.result import ToolResult
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

VOCABULARY = vocabulary_load(DEFAULT_VOCABULARY_FILE)
NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
SERVICE_LABELS = ("service", "app", "job")
ALL_TOOLS = frozenset(
    {"query_alerts", "query_promql", "query_logs", "count_logs", "lookup_knowledge", "query_targets"}
)
# The sources without Prometheus: alerts, logs and runbooks only.
NO_PROMETHEUS = frozenset({"query_alerts", "query_logs", "count_logs", "lookup_knowledge"})


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
    refs: list[dict] | None = None,
) -> ToolResult:
    """A tool result whose records under `key` are each cited by one evidence ref (`$.key[i]`), or by
    the `refs` given."""
    return ToolResult.from_stored(
        tool_name=tool_name,
        kind=kind_named(tool_name),
        invocation_id=invocation_id,
        arguments=arguments or {},
        success=success,
        output={key: records} | (extra or {}),
        retrieval_details={
            "evidence_status": "supported" if success else "failed",
            "evidence_refs": refs
            if refs is not None
            else [{"raw_path": f"$.{key}[{i}]", "text": text} for i, text in enumerate(texts)],
        },
        source=source,
    )


def failed(invocation_id: int, tool_name: str, *, arguments: dict, source: str) -> ToolResult:
    return ToolResult.from_stored(
        tool_name=tool_name,
        kind=kind_named(tool_name),
        invocation_id=invocation_id,
        arguments=arguments,
        success=False,
        output={"error": "connection refused"},
        retrieval_details={"evidence_status": "failed", "evidence_refs": []},
        source=source,
    )


@dataclass
class Invocation:
    """A recorded tool call as the gatekeeper reads it (a `ToolInvocation` row is one)."""

    pk: int
    tool_name: str
    output: dict
    input: dict = field(default_factory=dict)
    retrieval_details: dict = field(default_factory=dict)

    def tool_result(self) -> ToolResult:
        """The call as the pipeline reads it, as `ToolInvocation.tool_result` reads a row."""
        return ToolResult.from_stored(
            tool_name=self.tool_name,
            kind=kind_named(self.tool_name),
            invocation_id=self.pk,
            arguments=self.input,
            success=True,
            output=self.output,
            retrieval_details={"evidence_status": "supported"} | self.retrieval_details,
        )


def recorded(result: ToolResult) -> Invocation:
    """The invocation the session recorded for a tool result."""
    return Invocation(
        pk=result.invocation_id,
        tool_name=result.tool_name,
        output=result.output(),
        input=dict(result.arguments),
        retrieval_details={"evidence_refs": [ref.stored() for ref in result.refs]},
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
) -> ToolResult:
    return message(
        invocation_id,
        "query_alerts",
        "alerts",
        records,
        [alert_text(r) for r in records],
        arguments=arguments,
        source=source,
    )


# --- Reading slots and running calls, as every kind's tests do ---------------------------------


per_world = pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)
# How far each world's alert value is past its threshold (0.3279 / 0.023, 0.91 / 0.85).
RATIO = {"plain": "14.2565", "demo": "1.07059"}
T = NOW.timestamp()


def read(query: str, names: Names, results: list[ToolResult], *, tools=None) -> list[Slot]:
    world = slot_world(tools) if tools else slot_world()
    return slots_read(asks_of(query, names), results=results, world=world)


def only(slots: list[Slot]) -> Slot:
    assert len(slots) == 1, slots
    return slots[0]


def metric_of(series: str) -> dict:
    """The labels of a series written `name{label="value"}`."""
    name, _, rest = series.partition("{")
    labels = dict(part.split("=", 1) for part in rest.rstrip("}").split(",") if part)
    return {"__name__": name} | {key: value.strip('"') for key, value in labels.items()}


def series_message(
    invocation_id: int, query: str, records: list[dict], *, minutes: int = 0, extra: dict | None = None
) -> ToolResult:
    texts = [f"{query} {r.get('value') or r.get('values')}" for r in records]
    return message(
        invocation_id,
        "query_promql",
        "series",
        records,
        texts,
        arguments={"query": query, "minutes": minutes},
        extra=extra,
    )


def value_question(names: Names) -> str:
    return f"{names.service} 服务的{names.service_metric}现在是多少？"


def firing_world(names: Names) -> list[dict]:
    """A warning far past its threshold, a critical just past it and a critical far past it."""
    return [
        alert_record(names, other=True, value=str(float(names.other_threshold) * 50)),
        alert_record(names, value=str(float(names.alert_threshold) * 1.01)),
        alert_record(names, alert_name=f"{names.alert}Severe", value=str(float(names.alert_threshold) * 20)),
        alert_record(names, alert_name=f"{names.alert}Pending", state="pending"),
    ]


def block(document: str, title: str, content: str, *, section: str = "", named: tuple[str, ...] = ()) -> dict:
    """A lookup_knowledge record: `named` are the block's exact terms the query named."""
    return {
        "source_document": document,
        "title": title,
        "section": section,
        "content": content,
        "matched_terms": list(named),
    }


def knowledge_message(
    names: Names, *, with_runbook: bool = True, blocks: list[dict] | None = None
) -> ToolResult:
    blocks = (
        blocks
        or [
            block("case:17", f"{names.alert} 历史案例", "上次扩容后恢复", named=(names.alert,)),
            block(
                f"runbooks/{names.alert}.md",
                f"{names.alert} 处理手册",
                "1. 查看最近一次发布\n2. 检查下游依赖",
                named=(names.alert,),
            ),
        ][: 2 if with_runbook else 1]
    )
    texts = [f"{b['title']}: {b['content']}" for b in blocks]
    return message(
        9,
        "lookup_knowledge",
        "evidence_blocks",
        blocks,
        texts,
        arguments={"query": names.alert},
        source="knowledge",
    )


@dataclass
class FakeToolbox:
    """Records every turn of calls; answers alert queries with the world's firing alerts."""

    names: Names
    # Annotations of the world's alerts (a `runbook_url`).
    annotations: dict = field(default_factory=dict)
    remaining_calls: int = 10
    parallel_safe: bool = False
    turns: list[list[tuple[str, dict]]] = field(default_factory=list)
    next_id: int = 100

    def call(self, tool_name: str, arguments: dict) -> ToolResult:
        return self.call_many([(tool_name, arguments)])[0]

    def call_many(self, calls) -> list[ToolResult]:
        self.turns.append([(tool, dict(arguments)) for tool, arguments in calls])
        self.remaining_calls -= len(calls)
        return [self._answer(tool, arguments) for tool, arguments in calls]

    def tool_definitions(self) -> list[dict]:
        return [{"name": "query_alerts"}]

    @property
    def calls(self) -> list[tuple[str, dict]]:
        return [call for turn in self.turns for call in turn]

    def _answer(self, tool: str, arguments: dict) -> ToolResult:
        self.next_id += 1
        if tool == "query_alerts":
            records = [
                alert_record(self.names, annotations=self.annotations),
                alert_record(self.names, other=True, annotations=self.annotations),
            ]
            wanted = [r for r in records if all(r.get(k) == v for k, v in arguments.items())]
            return alerts_message(self.next_id, wanted, arguments=arguments)
        return message(self.next_id, tool, "series", [], [], arguments=arguments)


def run(query: str, names: Names, toolbox: FakeToolbox, *, prior=(), tools=None) -> list[ToolResult]:
    world = slot_world(tools) if tools else slot_world()
    return slot_calls_run(asks_of(query, names), toolbox=toolbox, world=world, prior=list(prior))


def logs_message(names: Names, lines: list[tuple[str, str]]) -> ToolResult:
    records = [
        {"timestamp": f"2026-11-29 14:5{9 - i}:00", "service": names.service, "level": level, "message": text}
        for i, (level, text) in enumerate(lines)
    ]
    texts = [LogLine.model_validate(record).ref_text() for record in records]
    return message(
        7,
        "query_logs",
        "logs",
        records,
        texts,
        arguments={"query": "error", "service": names.service},
        source="loki",
    )
