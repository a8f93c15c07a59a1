"""The recorded world's eval cases (`rec-*`), their expected values read from `recording.json`.

`make record-world` writes them after each recording: the values (a sample, a range's min and max,
an alert's value, a flap count, a down target) are looked up here in the raw answers Prometheus,
Alertmanager and Loki gave, never through the product's code, so the eval measures the product
against what the sources said. Run alone (`python -m tests.integration.recorded_cases`) it rewrites
the cases from the recording in place.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORLD = ROOT / "diagnosis" / "evaluation" / "worlds" / "recorded"
CASES = ROOT / "diagnosis" / "evaluation" / "cases"
PREFIX = "rec-"


class Recorded:
    """Lookups over the raw exchanges of one recording."""

    def __init__(self, folder: Path) -> None:
        self.exchanges = json.loads((folder / "recording.json").read_text(encoding="utf-8"))["exchanges"]

    def _results(self, path: str) -> list[tuple[dict, dict]]:
        found = []
        for exchange in self.exchanges:
            if exchange["path"] == path and exchange["status"] == 200:
                data = json.loads(exchange["body"]).get("data") or {}
                found += [(dict(exchange["params"]), series) for series in data.get("result") or []]
        return found

    def _series(self, path: str, metric: str, service: str) -> list[tuple[dict, dict]]:
        return [
            (params, series)
            for params, series in self._results(path)
            if series["metric"].get("__name__") == metric and series["metric"].get("service") == service
        ]

    def sample(self, metric: str, service: str) -> str:
        """The instant sample of a series, as Prometheus wrote it."""
        return self._series("/api/v1/query", metric, service)[0][1]["value"][1]

    def range_extremes(self, metric: str, service: str, minutes: int) -> tuple[str, str]:
        """(min, max) of the range query over that many minutes, as Prometheus wrote them."""
        for params, series in self._series("/api/v1/query_range", metric, service):
            if round((float(params["end"]) - float(params["start"])) / 60) == minutes:
                values = [value for _, value in series["values"]]
                return min(values, key=float), max(values, key=float)
        raise LookupError(f"no {minutes}-minute range of {metric} for {service} in the recording")

    def _rules(self) -> list[dict]:
        for exchange in self.exchanges:
            if exchange["path"] == "/api/v1/rules":
                return [
                    rule
                    for group in json.loads(exchange["body"])["data"]["groups"]
                    for rule in group["rules"]
                ]
        return []

    def alert_value(self, alert: str) -> str:
        """The firing alert's value, its float written plainly (`7.51`, `25276502016`)."""
        [rule] = [rule for rule in self._rules() if rule["name"] == alert]
        number = float(rule["alerts"][0]["value"])
        return str(int(number)) if number.is_integer() else repr(number)

    def expr(self, alert: str) -> str:
        [rule] = [rule for rule in self._rules() if rule["name"] == alert]
        return rule["query"]

    def firing_episodes(self, alert: str, minutes: int) -> int:
        """Episodes in the window: one more than the `changes()` of its ALERTS_FOR_STATE."""
        for params, series in self._results("/api/v1/query"):
            if params["query"].startswith(f'changes(ALERTS_FOR_STATE{{alertname="{alert}"}}[{minutes}m]'):
                return int(float(series["value"][1])) + 1
        raise LookupError(f"no {minutes}-minute changes() of {alert} in the recording")

    def down_target(self) -> tuple[str, str]:
        """(job, lastError) of the one target that is down."""
        for exchange in self.exchanges:
            if exchange["path"] == "/api/v1/targets":
                targets = json.loads(exchange["body"])["data"]["activeTargets"]
                [down] = [t for t in targets if t["health"] == "down"]
                return down["labels"]["job"], down["lastError"]
        raise LookupError("no targets in the recording")

    def firing(self, service: str | None = None) -> list[str]:
        """The alerts Alertmanager held active, most severe first (critical, then the rest)."""
        for exchange in self.exchanges:
            if exchange["path"] == "/api/v2/alerts":
                alerts = [
                    a["labels"]
                    for a in json.loads(exchange["body"])
                    if a["status"]["state"] == "active"
                    and (service is None or a["labels"].get("service") == service)
                ]
                alerts.sort(key=lambda labels: labels.get("severity") != "critical")
                return [labels["alertname"] for labels in alerts]
        raise LookupError("no Alertmanager alerts in the recording")

    def log_lines(self, service: str, *, level: str | None = None) -> list[str]:
        """Lines Loki served for the service (of the given stream level), each once."""
        lines: dict[str, None] = {}
        for exchange in self.exchanges:
            if exchange["path"] == "/loki/api/v1/query_range" and exchange["status"] == 200:
                for stream in json.loads(exchange["body"])["data"]["result"]:
                    labels = stream["stream"]
                    if labels.get("service") == service and (level is None or labels.get("level") == level):
                        lines.update(dict.fromkeys(line for _, line in stream["values"]))
        return list(lines)


@dataclass(frozen=True)
class Case:
    name: str
    question: str
    ask: str
    expected: Callable[[Recorded], list[str]]
    description: str
    tags: tuple[str, ...] = ()
    verdict: str = "PASS"
    subjects: tuple[str, ...] = ()
    # The answer the product still gets wrong, said in the description: run with `--exclude-tag known_gap`.
    known_gap: bool = False
    # A gap that depends on what the recording caught: the reason, or "" when the product answers it.
    gap: Callable[[Recorded], str] | None = None


def _first_step(runbook: str, section: str) -> str:
    """The first line of a runbook section, as the file has it."""
    text = (WORLD / "runbooks" / runbook).read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return next(line.strip() for line in body.splitlines() if line.strip())


def _not_active(alert: str) -> Callable[[Recorded], str]:
    """A rule not firing at the recording's instant: its threshold is still in the rule, but the
    product reads thresholds from the active alerts only (a known gap)."""

    def reason(recorded: Recorded) -> str:
        if alert in recorded.firing():
            return ""
        return (
            f"录制时 {alert} 未处于 firing，阈值仍在规则里，应从 /api/v1/rules 回答；现在回答不了（已知缺口）"
        )

    return reason


def _trend(recorded: Recorded, metric: str, service: str, minutes: int) -> list[str]:
    """The range's min and max; a range the session never asked for has none: then its window and the
    current sample, which a trend answer over that window would state."""
    try:
        return list(recorded.range_extremes(metric, service, minutes))
    except LookupError:
        return [f"{minutes} 分钟", recorded.sample(metric, service)]


EVERY_ALERT = (
    "billing",
    "ledger-service",
    "DbConnectionsSaturated",
    "KubePodCrashLooping",
    "HighMemoryUsage",
)

CASES_OF_THE_WORLD = (
    Case("value-load-billing", "billing 的 node_load1 当前是多少？", "value",
         lambda r: [r.sample("node_load1", "billing"), 'service="billing"'], "当前值：node_load1{service=billing} 的录制样本"),
    Case("value-load-billing-english", "What is node_load1 on billing right now?", "value",
         lambda r: [r.sample("node_load1", "billing"), 'service="billing"'], "当前值（英文）", ("english",)),
    Case("value-memtotal-ledger", "ledger-service 的 node_memory_MemTotal_bytes 当前值", "value",
         lambda r: [r.sample("node_memory_MemTotal_bytes", "ledger-service"), 'job="ledger-node"'], "当前值：字节数"),
    Case("value-memavailable-ledger-english", "What's the current node_memory_MemAvailable_bytes of ledger-service?",
         "value", lambda r: [r.sample("node_memory_MemAvailable_bytes", "ledger-service")], "当前值（英文）", ("english",)),
    Case("value-memavailable-billing", "billing 的 node_memory_MemAvailable_bytes 当前是多少？", "value",
         lambda r: [r.sample("node_memory_MemAvailable_bytes", "billing"), 'service="billing"'], "当前值"),
    Case("value-filesystem-billing", "billing 的 node_filesystem_avail_bytes 当前是多少？", "value",
         lambda r: [r.sample("node_filesystem_avail_bytes", "billing"), 'mountpoint="/"'], "词表不认识的指标名：按原名查询"),
    Case("threshold-replication-lag", "PostgresReplicationLag 的阈值是多少？", "threshold",
         lambda r: [r.expr("PostgresReplicationLag")], "阈值：规则 expr", gap=_not_active("PostgresReplicationLag")),
    Case("threshold-high-memory-english", "What is the threshold of HighMemoryUsage?", "threshold",
         lambda r: [r.expr("HighMemoryUsage")], "阈值（英文）", ("english",), gap=_not_active("HighMemoryUsage")),
    Case("threshold-db-connections-english", "What is the threshold of DbConnectionsSaturated?", "threshold",
         lambda r: [r.expr("DbConnectionsSaturated")], "阈值（英文）", ("english",),
         gap=_not_active("DbConnectionsSaturated")),
    Case("threshold-filesystem", "NodeFilesystemAlmostFull 的阈值是多少？", "threshold",
         lambda r: [r.expr("NodeFilesystemAlmostFull")], "阈值：规则 expr", gap=_not_active("NodeFilesystemAlmostFull")),
    Case("value-threshold-replication-lag", "PostgresReplicationLag 当前值是多少，阈值是多少？", "threshold",
         lambda r: [r.expr("PostgresReplicationLag"), r.alert_value("PostgresReplicationLag")], "当前值与阈值"),
    Case("value-threshold-high-memory-english", "HighMemoryUsage current value and threshold?", "threshold",
         lambda r: [r.expr("HighMemoryUsage"), r.alert_value("HighMemoryUsage")], "当前值与阈值（英文）", ("english",)),
    Case("trend-load-billing", "过去 10 分钟 billing 的 node_load1 趋势", "trend",
         lambda r: [f"最小 {v}" for v in r.range_extremes("node_load1", "billing", 10)[:1]]
         + [f"最大 {r.range_extremes('node_load1', 'billing', 10)[1]}"], "趋势：10 分钟 range 的最小与最大"),
    Case("trend-memavailable-billing", "最近 15 分钟 billing 的 node_memory_MemAvailable_bytes 趋势", "trend",
         lambda r: list(r.range_extremes("node_memory_MemAvailable_bytes", "billing", 15)), "趋势：15 分钟"),
    Case("trend-memavailable-ledger-english",
         "How did node_memory_MemAvailable_bytes on ledger-service change over the last 5 minutes?", "trend",
         lambda r: _trend(r, "node_memory_MemAvailable_bytes", "ledger-service", 5),
         "英文趋势问句（change over the last 5 minutes）：应做 5 分钟 range 查询；现在没有", ("english",),
         known_gap=True),
    Case("history-flapping", "DbConnectionsSaturated 是不是在反复触发？", "history",
         lambda r: [f"触发 {r.firing_episodes('DbConnectionsSaturated', 60)} 次"], "反复触发：changes(ALERTS_FOR_STATE) + 1"),
    Case("history-flapping-english", "Has DbConnectionsSaturated been flapping in the last 30 minutes?", "history",
         lambda r: [f"触发 {r.firing_episodes('DbConnectionsSaturated', 30)} 次"], "反复触发（英文，30 分钟）", ("english",)),
    Case("history-last-week-billing", "上周 billing 出过什么告警？", "history",
         lambda r: ["DbConnectionsSaturated", "KubePodCrashLooping", "PostgresReplicationLag"], "过去 7 天 billing 的告警历史"),
    Case("history-yesterday-billing-english", "What alerts fired for billing yesterday?", "history",
         lambda r: ["00:00–24:00", "未见"], "昨天：栈是今天启动的，没有样本", ("english", "negative")),
    Case("list-firing", "现在有哪些告警？", "list", lambda r: r.firing(), "录制时 Alertmanager 里 active 的告警",
         subjects=("billing", "ledger-service")),
    Case("list-firing-english", "Which alerts are firing right now?", "list", lambda r: r.firing(), "active 的告警（英文）",
         ("english",), subjects=("billing", "ledger-service")),
    Case("list-ledger-english", "Are there any alerts on ledger-service?", "list",
         lambda r: ["HighMemoryUsage", r.alert_value("HighMemoryUsage")], "ledger-service 只有 HighMemoryUsage", ("english",)),
    Case("list-billing", "billing 有哪些告警？", "list", lambda r: r.firing("billing"), "billing 的 active 告警"),
    Case("priority-first", "哪个告警最需要先处理？", "priority", lambda r: [r.firing()[0], "critical"],
         "唯一 critical 的是 PostgresReplicationLag", subjects=EVERY_ALERT),
    Case("priority-first-english", "Which alert should I handle first?", "priority",
         lambda r: [r.firing()[0], "critical"], "唯一 critical（英文）", ("english",), subjects=EVERY_ALERT),
    Case("health-targets", "有没有抓取目标挂了？", "health", lambda r: [r.down_target()[0], "connection refused"],
         "/api/v1/targets 里唯一 down 的目标", subjects=("payments",)),
    Case("health-targets-english", "Is Prometheus healthy? Any scrape targets down?", "health",
         lambda r: [r.down_target()[0], "connection refused"], "down 的目标（英文）", ("english",), subjects=("payments",)),
    Case("health-payments", "payments 的抓取目标正常吗？", "health", lambda r: [r.down_target()[0], "down"], "payments 的目标 down"),
    Case("existence-crashloop", "是否存在 KubePodCrashLooping 告警？", "existence",
         lambda r: ["billing", r.alert_value("KubePodCrashLooping")], "firing on billing", ("narrow",), subjects=("billing",)),
    Case("existence-replication-english", "Is PostgresReplicationLag firing?", "existence",
         lambda r: ["critical", r.alert_value("PostgresReplicationLag")], "firing，critical", ("english", "narrow"),
         subjects=("billing",)),
    Case("existence-high-memory-ledger", "ledger-service 的 HighMemoryUsage 告警持续多久了？", "existence",
         lambda r: ["已持续", r.alert_value("HighMemoryUsage")], "持续时间"),
    Case("logs-billing-errors", "billing 最近的错误日志有哪些？", "logs",
         lambda r: [r.log_lines("billing", level="error")[0].split(":")[0]], "billing 的 level=error 流"),
    Case("logs-billing-errors-english", "Show me billing's error logs", "logs",
         lambda r: [r.log_lines("billing", level="error")[0].split(":")[0]], "错误日志（英文）", ("english",)),
    Case("logs-ledger-none", "ledger-service 最近有错误日志吗？", "logs", lambda r: ["未检索到", "60 分钟"],
         "ledger-service 只有 info 流", ("negative",)),
    Case("runbook-crashloop", "KubePodCrashLooping 的 runbook 怎么说？", "runbook",
         lambda r: [_first_step("KubePodCrashLooping.md", "Mitigation")],
         "runbooks/KubePodCrashLooping.md 的处置步骤（Mitigation）", ("knowledge",), subjects=("billing",)),
    Case("runbook-crashloop-english", "What does the KubePodCrashLooping runbook recommend?", "runbook",
         lambda r: [_first_step("KubePodCrashLooping.md", "Mitigation")], "处置步骤（英文）", ("english", "knowledge"),
         subjects=("billing",)),
    Case("runbook-replication", "PostgresReplicationLag 怎么处理？", "runbook", lambda r: ["postgres-replication.md"],
         "runbooks/databases/postgres-replication.md", ("knowledge",), subjects=("billing",)),
    Case("cause-billing-restarts", "billing 为什么一直重启？", "cause", lambda r: ["KubePodCrashLooping", "OOMKilled"],
         "KubePodCrashLooping firing + Loki 的 OOMKilled 行"),
    Case("cause-ledger-replication-english", "Why is ledger-service's replication behind?", "cause",
         lambda r: ["HighMemoryUsage", "ledger_replica"], "HighMemoryUsage + Loki 的 replication slot 行", ("english",)),
    Case("action-restart-billing", "帮我重启 billing", "action", lambda r: ["不能执行「重启」"], "只读"),
    Case("action-restart-ledger-english", "Restart ledger-service for me", "action", lambda r: ["不能执行「restart」"],
         "只读（英文）", ("english",)),
    Case("action-scale-billing", "帮我扩容 billing", "action", lambda r: ["不能执行「扩容」"], "只读"),
)  # fmt: skip


def cases_write(recorded: Recorded) -> int:
    """Rewrite every `rec-*` case from the recording."""
    documents = {}
    for case in CASES_OF_THE_WORLD:
        tags = ["slot", "recorded", "grounded", *case.tags]
        if "negative" not in tags:
            tags.insert(1, "positive")
        gap = case.gap(recorded) if case.gap else ""
        if case.known_gap or gap:
            tags.append("known_gap")
        expect: dict = {"verdict": case.verdict, "output_type": "NORMAL" if case.verdict == "PASS" else None}
        expect = {key: value for key, value in expect.items() if value}
        if case.subjects:
            expect["subjects"] = list(case.subjects)
        expect["slot"] = {"ask": case.ask, "answer_contains": case.expected(recorded)}
        documents[case.name] = {
            "description": f"录制世界：{case.description}{'；' + gap if gap else ''}（期望值取自 recording.json）",
            "question": case.question,
            "engine": "rules",
            "tags": tags,
            "world": "recorded",
            "expect": expect,
        }
    for old in CASES.glob(f"{PREFIX}*"):
        shutil.rmtree(old)
    for name, document in documents.items():
        folder = CASES / f"{PREFIX}{name}"
        folder.mkdir()
        (folder / "case.yaml").write_text(
            yaml.safe_dump(document, allow_unicode=True, sort_keys=False, width=200), encoding="utf-8"
        )
    return len(CASES_OF_THE_WORLD)


if __name__ == "__main__":
    print(f"{cases_write(Recorded(WORLD))} cases written")
