"""The exporter world's eval cases (`rec2-*`), their expected values read from the raw recording.

`make record-exporter-world` records the world (`record_exporter_world.py`): the product's questions
through `manage.py eval_record` into `recording.json`, and beside it `truth.json`, what Prometheus
and the Loki server answered the recorder itself at the recording's pinned instant: the PromQL of
`TRUTH_QUERIES` and `TRUTH_RANGES` (rates, ratios, quantiles, a range) and every log line of the
window. The cases' values are computed here from those raw answers and lines (never through the
product's code), so the eval measures the product against what the sources said. A case the product
does not answer yet says so (`known_gap`, with what it answers now in its description); the CI eval
excludes that tag. Run alone (`python -m tests.integration.exporter_cases`) it rewrites the cases.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORLD_NAME = "exporters"
WORLD = ROOT / "diagnosis" / "evaluation" / "worlds" / WORLD_NAME
CASES = ROOT / "diagnosis" / "evaluation" / "cases"
PREFIX = "rec2-"
TRUTH_FILE = "truth.json"
# Prometheus and Alertmanager scrape themselves: their jobs carry the names an answer cites its sources
# by (`来源 alertmanager+prometheus`).
SOURCE_JOBS = ("alertmanager", "prometheus")
RATE_WINDOW = "5m"
QUERY_HISTOGRAM = 'prometheus_http_request_duration_seconds_bucket{handler="/api/v1/query"}'
SHOP = 'datname="shop"'
LLM = "llm"


def _ratio(part: str, other: str) -> str:
    return f"sum(rate({part}[{RATE_WINDOW}])) / (sum(rate({part}[{RATE_WINDOW}])) + sum(rate({other}[{RATE_WINDOW}])))"


def _quantile(q: float) -> str:
    return f"histogram_quantile({q}, sum by (le) (rate({QUERY_HISTOGRAM}[{RATE_WINDOW}])))"


# What the recorder asks Prometheus at the pinned instant (`time=`), by name.
TRUTH_QUERIES = {
    "request_rate": f"sum(rate(nginx_http_requests_total[{RATE_WINDOW}]))",
    "query_p99": _quantile(0.99),
    "query_p50": _quantile(0.5),
    "rollback_ratio": _ratio(
        f"pg_stat_database_xact_rollback{{{SHOP}}}", f"pg_stat_database_xact_commit{{{SHOP}}}"
    ),
    "connections": "sum(pg_stat_activity_count)",
    "max_connections": "max(pg_settings_max_connections)",
    "deadlocks": f"pg_stat_database_deadlocks{{{SHOP}}}",
    "deadlocks_window_start": f"min_over_time(pg_stat_database_deadlocks{{{SHOP}}}[30m])",
    "rollbacks": f"pg_stat_database_xact_rollback{{{SHOP}}}",
    "rollbacks_window_start": f"min_over_time(pg_stat_database_xact_rollback{{{SHOP}}}[30m])",
    "cache_hit_ratio": _ratio("redis_keyspace_hits_total", "redis_keyspace_misses_total"),
    "redis_used": "redis_memory_used_bytes",
    "redis_max": "redis_memory_max_bytes",
    "evictions_rate": f"sum(rate(redis_evicted_keys_total[{RATE_WINDOW}]))",
    "probe_success": "probe_success",
    "disk_used_percent": (
        '100 * (1 - node_filesystem_avail_bytes{mountpoint="/"} / node_filesystem_size_bytes{mountpoint="/"})'
    ),
    "cpu_percent": f'100 * (1 - avg(rate(node_cpu_seconds_total{{mode="idle"}}[{RATE_WINDOW}])))',
    "iowait_percent": f'100 * avg(rate(node_cpu_seconds_total{{mode="iowait"}}[{RATE_WINDOW}]))',
    "alerts_for_state": "ALERTS_FOR_STATE",
    "scrape_up": "up",
    "fired_30m": 'count by (alertname, severity) (count_over_time(ALERTS{alertstate="firing"}[30m]))',
    # Every raw firing sample of the window: an alert fired when its first one was written (after its
    # rule's `for:`; `ALERTS_FOR_STATE` says when it became pending).
    "firing_samples_30m": 'ALERTS{alertstate="firing"}[30m]',
}
# Ranges ending at the pinned instant: (PromQL, minutes, step seconds). The extremes of a noisy rate
# depend on the resolution they are read at: 6 s, the resolution of a 10-minute range of 100 points.
TRUTH_RANGES = {"request_rate_10m": ("sum(rate(nginx_http_requests_total[1m]))", 10, 6)}
# The log streams the recorder reads whole over the product's log window.
TRUTH_LOG_JOBS = ("nginx", "postgres", "redis")
ACCESS_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3}) ')
SLOW_LINE = re.compile(r"duration: (?P<ms>[\d.]+) ms")
POSTGRES_PROBLEM = re.compile(r"\b(?P<level>ERROR|FATAL):  (?P<message>.+)$")


class Truth:
    """Lookups over the recorder's own raw answers (`truth.json`) and the product's (`recording.json`)."""

    def __init__(self, raw: dict, *, alertmanager_alerts: list[dict]) -> None:
        self.raw = raw
        self.alertmanager_alerts = alertmanager_alerts

    @classmethod
    def read(cls, folder: Path) -> Truth:
        """The recorded world's truth; Alertmanager's alerts as the recording holds them."""
        raw = json.loads((folder / TRUTH_FILE).read_text(encoding="utf-8"))
        exchanges = json.loads((folder / "recording.json").read_text(encoding="utf-8"))["exchanges"]
        for exchange in exchanges:
            if exchange["path"] == "/api/v2/alerts":
                return cls(raw, alertmanager_alerts=json.loads(exchange["body"]))
        raise LookupError("no Alertmanager alerts in the recording")

    def series(self, name: str) -> list[dict]:
        return self.raw["queries"][name]["result"]

    def number(self, name: str) -> float:
        """The sum of the instant answer's samples (one series for most)."""
        return sum(float(series["value"][1]) for series in self.series(name))

    def range_extremes(self, name: str) -> tuple[float, float]:
        values = [float(v) for series in self.raw["ranges"][name]["result"] for _, v in series["values"]]
        return min(values), max(values)

    def lines(self, job: str, file_suffix: str = "") -> list[str]:
        return [
            line
            for stream in self.raw["logs"][job]["result"]
            if stream["stream"]["filename"].endswith(file_suffix)
            for _, line in stream["values"]
        ]

    def access(self) -> Counter:
        """(status, path) → requests in nginx's access log."""
        return Counter(
            (m["status"], m["path"])
            for line in self.lines("nginx", "access.log")
            if (m := ACCESS_LINE.search(line))
        )

    def slow_ms(self) -> list[float]:
        return [float(m["ms"]) for line in self.lines("postgres") if (m := SLOW_LINE.search(line))]

    def postgres_problems(self) -> Counter:
        """PostgreSQL's ERROR and FATAL messages, counted."""
        return Counter(
            f"{m['level']}:  {m['message']}"
            for line in self.lines("postgres")
            if (m := POSTGRES_PROBLEM.search(line))
        )

    def firing_in_alertmanager(self) -> list[dict]:
        return [a["labels"] for a in self.alertmanager_alerts if a["status"]["state"] == "active"]

    def fired(self) -> dict[str, str]:
        """Alert name → severity of every alert that fired in the 30 minutes."""
        return {s["metric"]["alertname"]: s["metric"].get("severity", "") for s in self.series("fired_30m")}

    def first_fired(self) -> list[str]:
        """The alerts whose first firing sample of the window is the earliest (rules evaluated together
        fire at one instant), not one firing always by design."""
        firsts: dict[str, float] = {}
        for series in self.series("firing_samples_30m"):
            if series["metric"].get("severity") == "none":
                continue
            name = series["metric"]["alertname"]
            firsts[name] = min(firsts.get(name, float("inf")), *(float(t) for t, _ in series["values"]))
        earliest = min(firsts.values())
        return sorted(name for name, at in firsts.items() if at == earliest)

    def failing_probe(self) -> str:
        [down] = [s["metric"]["instance"] for s in self.series("probe_success") if s["value"][1] == "0"]
        return down

    def first_step(self, runbook: str) -> str:
        text = (WORLD / "runbooks" / runbook).read_text(encoding="utf-8")
        body = text.split("## Mitigation\n", 1)[1]
        return next(line.strip() for line in body.splitlines() if line.strip())


Expected = tuple[list[str], list[tuple[float, float]]]


def _percent(value: float, points: float) -> Expected:
    return [], [(round(100 * value, 2), points)]


def _within(value: float, share: float) -> tuple[float, float]:
    """The value with a tolerance of that share of it (a rate read at another step moves)."""
    return round(value, 4), round(abs(value) * share, 4)


def _count(truth: Truth, total: str, start: str) -> float:
    return truth.number(total) - truth.number(start)


def _404(truth: Truth) -> Expected:
    paths = Counter({path: n for (status, path), n in truth.access().items() if status == "404"})
    path, count = paths.most_common(1)[0]
    return [path], [(count, 0)]


def _5xx_percent(truth: Truth) -> Expected:
    requests = truth.access()
    errors = sum(n for (status, _), n in requests.items() if status.startswith("5"))
    return [], [(round(100 * errors / sum(requests.values()), 2), 1.0)]


def _slow(truth: Truth, threshold_ms: float) -> Expected:
    over = [ms for ms in truth.slow_ms() if ms > threshold_ms]
    return [], [(len(over), 0), (round(max(over)), 1)]


def _classes(truth: Truth) -> Expected:
    problems = truth.postgres_problems()
    deadlocks = problems["ERROR:  deadlock detected"]
    return ["deadlock detected", "too many clients"], [(deadlocks, 0)]


def _trend(truth: Truth) -> Expected:
    low, high = truth.range_extremes("request_rate_10m")
    return [], [_within(low, 0.15), _within(high, 0.15)]


@dataclass(frozen=True)
class Case:
    name: str
    question: str
    ask: str | None
    expected: Callable[[Truth], Expected] | None
    description: str
    tags: tuple[str, ...] = ()
    verdict: str = "PASS"
    # Subjects the answer may name besides the question's and `SOURCE_JOBS` (naming the service of an
    # asked alert too: a named service stops the eval tying it); or every subject of the world.
    subjects: tuple[str, ...] = ()
    every_subject: bool = False
    # What the product answers instead, while it does not answer this (`known_gap`).
    gap: str = ""
    # What the llm engine (the fake server's honest model) answers instead, where only it falls short.
    llm_gap: str = ""
    # What the answer must say (a negative case's statement of what it did not understand).
    says: tuple[str, ...] = ()


CASES_OF_THE_WORLD = (
    Case("rate-nginx-requests", "nginx 每秒多少请求？", "value",
         lambda t: ([], [_within(t.number("request_rate"), 0.15)]),
         f"请求速率：sum(rate(nginx_http_requests_total[{RATE_WINDOW}]))，±15%"),
    Case("rate-nginx-requests-english", "What is nginx's request rate per second?", "value",
         lambda t: ([], [_within(t.number("request_rate"), 0.15)]), "请求速率（英文）", ("english",)),
    Case("ratio-nginx-5xx", "nginx 5xx 占比多少？", "value", _5xx_percent,
         "5xx 占比：access log 中 5xx 行数 / 全部行数（百分比，±1）"),
    Case("ratio-nginx-5xx-english", "What share of nginx requests are 5xx?", "value", _5xx_percent,
         "5xx 占比（英文）", ("english",)),
    Case("quantile-query-p99", "Prometheus 的 /api/v1/query 接口 p99 延迟是多少？", "value",
         lambda t: ([], [_within(t.number("query_p99"), 0.3)]),
         "p99：histogram_quantile(0.99, sum by (le)(rate(..._bucket)))，秒，±30%"),
    Case("quantile-query-p50-english", "What is the p50 latency of Prometheus's /api/v1/query handler?", "value",
         lambda t: ([], [_within(t.number("query_p50"), 0.3)]), "p50（英文）", ("english",)),
    Case("ratio-rollbacks-shop", "shop 数据库的回滚率是多少？", "value",
         lambda t: _percent(t.number("rollback_ratio"), 1.0), "回滚率：rollback / (rollback + commit) 速率之比（百分比，±1）"),
    Case("ratio-rollbacks-shop-english", "What is the rollback ratio of the shop database?", "value",
         lambda t: _percent(t.number("rollback_ratio"), 1.0), "回滚率（英文）", ("english",)),
    Case("connections-vs-limit", "PostgreSQL 现在用了多少连接，max_connections 是多少？", "value",
         lambda t: ([], [(t.number("connections"), 2), (t.number("max_connections"), 0)]),
         "连接数与上限：sum(pg_stat_activity_count) 与 pg_settings_max_connections", subjects=("postgres",)),
    Case("connections-vs-limit-english", "How many PostgreSQL connections are in use against max_connections?",
         "value", lambda t: ([], [(t.number("connections"), 2), (t.number("max_connections"), 0)]),
         "连接数与上限（英文）", ("english",), subjects=("postgres",)),
    Case("deadlocks-30m", "过去 30 分钟 shop 数据库有多少次死锁？", "value",
         lambda t: ([], [(_count(t, "deadlocks", "deadlocks_window_start"), 1)]),
         "死锁次数：pg_stat_database_deadlocks 窗口内的增量（±1，increase 外推）"),
    Case("rollbacks-30m-english", "How many rollbacks did the shop database have in the last 30 minutes?", "value",
         lambda t: ([], [_within(_count(t, "rollbacks", "rollbacks_window_start"), 0.05)]),
         "回滚次数（英文）：xact_rollback 窗口内的增量（±5%）", ("english",)),
    Case("cache-hit-ratio", "Redis 缓存命中率是多少？", "value",
         lambda t: _percent(t.number("cache_hit_ratio"), 3.0), "命中率：hits / (hits + misses) 速率之比（百分比，±3）"),
    Case("cache-hit-ratio-english", "What's the Redis cache hit ratio?", "value",
         lambda t: _percent(t.number("cache_hit_ratio"), 3.0), "命中率（英文）", ("english",)),
    Case("memory-vs-maxmemory", "Redis 内存用了 maxmemory 的多少？", "value",
         lambda t: _percent(t.number("redis_used") / t.number("redis_max"), 2.0),
         "内存占上限：redis_memory_used_bytes / redis_memory_max_bytes（百分比，±2）"),
    Case("memory-vs-maxmemory-english", "How close is Redis memory to its maxmemory?", "value",
         lambda t: _percent(t.number("redis_used") / t.number("redis_max"), 2.0), "内存占上限（英文）", ("english",)),
    Case("evictions-rate", "Redis 每秒驱逐多少个 key？", "value",
         lambda t: ([], [_within(t.number("evictions_rate"), 0.15)]), "驱逐速率：rate(redis_evicted_keys_total)（±15%）"),
    Case("evictions-rate-english", "How many keys per second does Redis evict?", "value",
         lambda t: ([], [_within(t.number("evictions_rate"), 0.15)]), "驱逐速率（英文）", ("english",)),
    Case("probe-down", "哪个拨测挂了，从什么时候开始的？", "health",
         lambda t: ([t.failing_probe()], []), "probe_success == 0 的探测目标（及其告警的 activeAt）", subjects=("blackbox",)),
    Case("probe-down-english", "Which blackbox probe is failing and since when?", "health",
         lambda t: ([t.failing_probe()], []), "失败的探测（英文）", ("english",), subjects=("blackbox",)),
    Case("disk-used", "磁盘使用率是多少？", "value",
         lambda t: _percent(t.number("disk_used_percent") / 100, 1.0), "磁盘使用率：1 - avail/size，挂载点 /（百分比，±1）",
         subjects=("node",)),
    Case("disk-used-english", "What is the disk usage in percent?", "value",
         lambda t: _percent(t.number("disk_used_percent") / 100, 1.0), "磁盘使用率（英文）", ("english",), subjects=("node",)),
    Case("cpu-iowait", "CPU 使用率和 iowait 是多少？", "value",
         lambda t: ([], [(round(t.number("cpu_percent"), 2), 5.0), (round(t.number("iowait_percent"), 2), 1.0)]),
         "CPU 与 iowait：node_cpu_seconds_total 按 mode 的速率（百分比）", subjects=("node",)),
    Case("cpu-iowait-english", "What are the CPU usage and iowait right now?", "value",
         lambda t: ([], [(round(t.number("cpu_percent"), 2), 5.0), (round(t.number("iowait_percent"), 2), 1.0)]),
         "CPU 与 iowait（英文）", ("english",), subjects=("node",)),
    Case("slow-queries-over-1s", "shop 数据库有哪些超过 1 秒的慢查询，最慢的是哪条？", "logs", lambda t: _slow(t, 1000),
         "PostgreSQL 日志 duration 超过 1000 ms 的条数与最慢一条的毫秒数", subjects=("postgres",)),
    Case("slow-queries-over-500ms-english", "Which PostgreSQL queries took longer than 500 ms, and which was the slowest?",
         "logs", lambda t: _slow(t, 500), "慢查询（英文，500 ms）", ("english",), subjects=("postgres",)),
    Case("postgres-error-classes", "PostgreSQL 日志里有哪几类错误，各多少条？", "logs", _classes,
         "PostgreSQL 的 ERROR/FATAL 按类计数（deadlock detected 的条数）", subjects=("postgres",)),
    Case("postgres-error-classes-english", "What kinds of errors are in the PostgreSQL log, and how many of each?",
         "logs", _classes, "错误分类（英文）", ("english",), subjects=("postgres",)),
    Case("nginx-404-by-path", "nginx 的 404 多不多，都是哪些路径？", "logs", _404,
         "access log 中 404 最多的路径及其次数"),
    Case("nginx-404-by-path-english", "Which nginx paths answer 404, and how often?", "logs", _404,
         "404 按路径（英文）", ("english",)),
    Case("alerts-fired-first", "过去 30 分钟触发了哪些告警？最先触发的是哪条？", "history",
         lambda t: (t.first_fired(), []), "ALERTS 窗口内 firing 过的告警；最先的（第一个 firing 样本最早，Watchdog 除外）",
         every_subject=True),
    Case("alerts-fired-first-english", "Which alerts fired in the last 30 minutes, and which fired first?", "history",
         lambda t: (t.first_fired(), []), "最先触发（英文）", ("english",), every_subject=True),
    Case("runbook-evictions", "RedisEvictingKeys 按手册第一步做什么？", "runbook",
         lambda t: ([t.first_step("RedisEvictingKeys.md")], []), "规则 runbook_url 指向的手册的处置第一步", ("knowledge",), subjects=("redis",)),
    Case("runbook-probe-english", "What is the first step of the BlackboxProbeFailed runbook?", "runbook",
         lambda t: ([t.first_step("BlackboxProbeFailed.md")], []), "手册第一步（英文）", ("english", "knowledge"),
         subjects=("blackbox",)),
    Case("action-max-connections", "把 max_connections 调到 200", "action", lambda t: (["不能执行「调到」"], []),
         "改设置是操作：只读"),
    Case("action-maxmemory-english", "Set Redis maxmemory to 1gb", "action", lambda t: (["不能执行「set」"], []),
         "改设置是操作（英文）", ("english",)),
    Case("action-restart-redis", "帮我重启 redis", "action", lambda t: (["不能执行「重启」"], []), "重启是操作：只读"),
    Case("trend-request-rate", "过去 10 分钟 nginx 请求速率的走势", "trend", _trend,
         "10 分钟 range：sum(rate(nginx_http_requests_total[1m])) 的最小与最大（±15%）"),
    Case("trend-request-rate-english", "How did nginx's request rate change over the last 10 minutes?", "trend",
         _trend, "请求速率走势（英文）", ("english",)),
    Case("list-firing", "现在有哪些告警？", "list",
         lambda t: (sorted({a["alertname"] for a in t.firing_in_alertmanager()} - {"Watchdog"}), []),
         "录制时 Alertmanager 里 active 的告警（Watchdog 之外）", every_subject=True),
    Case("list-firing-english", "Which alerts are firing right now?", "list",
         lambda t: (sorted({a["alertname"] for a in t.firing_in_alertmanager()} - {"Watchdog"}), []),
         "active 的告警（英文）", ("english",), every_subject=True),
    Case("existence-probe", "是否存在 BlackboxProbeFailed 告警？", "existence",
         lambda t: (["critical"], []), "firing，critical", ("narrow",), subjects=("blackbox",)),
    Case("existence-evictions-english", "Is RedisEvictingKeys firing?", "existence",
         lambda t: (["warning"], []), "firing，warning", ("english", "narrow"), subjects=("redis",)),
    Case("value-max-connections-english", "What is pg_settings_max_connections right now?", "value",
         lambda t: ([], [(t.number("max_connections"), 0)]), "设置值：pg_settings_max_connections", ("english",),
         subjects=("postgres",)),
    Case("value-maxmemory", "redis_memory_max_bytes 当前是多少？", "value",
         lambda t: ([], [(t.number("redis_max"), 0)]), "设置值：redis_memory_max_bytes", subjects=("redis",)),
    Case("health-targets", "有没有抓取目标挂了？", "health",
         lambda t: (["全部 up"], [(len({s["metric"]["instance"] for s in t.series("scrape_up")}), 0)]),
         "抓取目标：up 全为 1",
         llm_gap="LOW_CONFID：诚实模型另说了一个抓取目标，焦点守卫拦下后判定被压低（规则引擎 PASS）"),
    Case("unknown-mongodb", "mongodb 的连接数是多少？", None, None, "栈里没有 mongodb：LOW_CONFID，说明不认识",
         ("negative", "unknown"), verdict="LOW_CONFID", says=("未找到名为 mongodb 的服务",)),
    Case("unknown-kafka-english", "What is the consumer lag of kafka?", None, None,
         "栈里没有 kafka（英文）：LOW_CONFID", ("english", "negative", "unknown"), verdict="LOW_CONFID",
         says=("指标目录中没有与「kafka」对应的指标",)),
    Case("unread-which-datacenter", "nginx 部署在哪个机房？", None, None,
         "没有一问能回答「哪个机房」：LOW_CONFID，说明没读懂的部分", ("negative", "guard:fail-closed"),
         verdict="LOW_CONFID", says=("未能理解所问：「nginx 部署在哪个机房」中的「哪」",)),
    Case("nothing-in-catalog-ssl", "nginx 的 SSL 握手失败率是多少？", None, None,
         "指标目录里没有 SSL 握手：LOW_CONFID，说明这个词没有对应的指标", ("negative", "unknown"), verdict="LOW_CONFID",
         says=("指标目录中没有在 nginx、ssl 上的「失败」指标",)),
    Case("nothing-in-catalog-ssl-english", "How many SSL handshakes per second does nginx fail?", None, None,
         "指标目录里没有 SSL 握手（英文）：LOW_CONFID", ("english", "negative", "unknown"), verdict="LOW_CONFID",
         says=("未能理解所问：「How many SSL handshakes per second does nginx fail」中的「How many」",)),
    Case("cause-rollback-alert-english", "Why is the rollback alert firing?", "cause",
         lambda t: (["PostgresHighRollbackRate"], []), "“rollback alert” 是告警主题，不是操作", ("english", "cause"),
         subjects=("PostgresHighRollbackRate",)),
)  # fmt: skip


def cases_write(truth: Truth, *, subjects: list[str]) -> int:
    """Rewrite every `rec2-*` case from the recording and the recorder's truth."""
    documents = {}
    for case in CASES_OF_THE_WORLD:
        tags = ["recorded", *case.tags]
        if case.ask:
            tags.insert(0, "slot")
        if "negative" not in tags:
            tags.insert(1, "positive")
        tags.append("grounded")
        expect: dict = {"verdict": case.verdict}
        expect["output_type"] = "NORMAL" if case.verdict == "PASS" else "LOW_CONFID_WITH_DISCLAIMER"
        expect["subjects"] = subjects if case.every_subject else [*SOURCE_JOBS, *case.subjects]
        if case.expected is not None:
            contains, numbers = case.expected(truth)
            slot: dict = {"ask": case.ask}
            if contains:
                slot["answer_contains"] = contains
            if numbers:
                slot["answer_numbers"] = [
                    {"value": value, "tolerance": tolerance} for value, tolerance in numbers
                ]
            expect["slot"] = slot
        if case.says:
            expect["answer_contains"] = list(case.says)
        for engine, gap, name in (
            ("rules", case.gap, case.name),
            # The same question through the llm engine over the fake server's honest model: the code
            # around a model answers the ask as the rules engine does.
            (LLM, case.gap or case.llm_gap, f"{case.name}-{LLM}"),
        ):
            said = f"；已知缺口，现在：{gap}" if gap else ""
            documents[name] = {
                "description": f"导出器世界：{case.description}{said}（期望值取自 recording.json / truth.json）",
                "question": case.question,
                "engine": engine,
                "tags": [tag for tag in tags if tag != "known_gap"] + (["known_gap"] if gap else []),
                "world": WORLD_NAME,
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
    return len(documents)


def world_subjects() -> list[str]:
    world = yaml.safe_load((WORLD / "world.yaml").read_text(encoding="utf-8"))["subjects"]
    return sorted({*world["services"], *(alert for alert, _ in world["alerts"])})


if __name__ == "__main__":
    print(f"{cases_write(Truth.read(WORLD), subjects=world_subjects())} cases written")
