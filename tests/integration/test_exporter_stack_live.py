"""The exporter stack (real nginx, PostgreSQL, Redis, their exporters, blackbox, node_exporter,
Prometheus, Alertmanager and the log files behind the Loki API): first that the stack holds what its
traffic made, then what the product already answers there. Every truth is read here, from the servers,
the log files or Prometheus, never through the product."""

import json
import re
from collections import Counter
from pathlib import Path

import httpx2
import pytest
from django.core.management import call_command

from tests.integration import exporter_traffic as traffic
from tests.integration.exporter_stack import LOKI_TENANT, MAX_CONNECTIONS, REDIS_MAXMEMORY, SLOW_STATEMENT_MS
from tools.numbers import number_text

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
ACCESS_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3}) ')
SLOW_LINE = re.compile(r"duration: (?P<ms>[\d.]+) ms")


def answer_of(question: str, capsys) -> tuple[dict, list[str]]:
    call_command("diagnose", question, "--json")
    trace = json.loads(capsys.readouterr().out)
    conclusions = [line for line in trace["session"]["answer"].splitlines() if line.startswith("结论：")]
    return trace, conclusions


def value(stack, promql: str) -> float:
    return sum(float(series["value"][1]) for series in stack.query(promql))


def access_log(stack) -> Counter:
    """(status, path) → requests, as nginx wrote them."""
    lines = stack.log_text("nginx/access.log").splitlines()
    return Counter((m["status"], m["path"]) for line in lines if (m := ACCESS_LINE.search(line)))


def test_every_exporter_is_scraped_and_one_probe_fails(exporter_stack):
    targets = exporter_stack.prometheus("/api/v1/targets", state="active")["activeTargets"]
    probes = {s["metric"]["instance"]: s["value"][1] for s in exporter_stack.query("probe_success")}

    assert {t["labels"]["job"] for t in targets} == {
        "prometheus", "alertmanager", "node", "nginx", "postgres", "redis", "blackbox",
    }  # fmt: skip
    assert all(t["health"] == "up" for t in targets)
    urls = exporter_stack.probe_urls()
    assert probes == {urls["up"]: "1", urls["down"]: "0"}


def test_the_traffic_leaves_its_counts_in_the_exporters_metrics(exporter_stack):
    shop = '{datname="shop"}'

    assert value(exporter_stack, f"pg_stat_database_deadlocks{shop}") >= traffic.DEADLOCKS
    failing = sum(times for _, _, times in traffic.FAILING)
    assert value(exporter_stack, f"pg_stat_database_xact_rollback{shop}") >= traffic.ROLLBACKS + failing
    assert value(exporter_stack, "pg_settings_max_connections") == MAX_CONNECTIONS
    assert value(exporter_stack, "sum(pg_stat_activity_count)") >= traffic.HELD_CONNECTIONS
    assert value(exporter_stack, "redis_memory_max_bytes") == int(REDIS_MAXMEMORY.removesuffix("mb")) * 2**20
    assert value(exporter_stack, "redis_evicted_keys_total") > 0
    assert value(exporter_stack, "redis_keyspace_hits_total") > 0
    assert value(exporter_stack, "redis_keyspace_misses_total") > 0
    sent = sum(count for _, _, count, _ in traffic.REQUESTS)
    assert value(exporter_stack, "nginx_http_requests_total") >= sent
    # A histogram to ask quantiles of, and CPU time by mode (iowait among them).
    assert exporter_stack.query('prometheus_http_request_duration_seconds_bucket{handler="/api/v1/query"}')
    assert exporter_stack.query('node_cpu_seconds_total{mode="iowait"}')


def test_the_log_files_hold_the_traffic_and_loki_serves_them(exporter_stack):
    requests = access_log(exporter_stack)
    for method, path, count, status in traffic.REQUESTS:
        assert requests[(str(status), path)] >= count, (method, path)
    postgres = exporter_stack.log_path("postgres.log").read_text()
    assert postgres.count("ERROR:  deadlock detected") >= traffic.DEADLOCKS
    assert "FATAL:  sorry, too many clients already" in postgres
    assert f'FATAL:  database "{traffic.MISSING_DATABASE}" does not exist' in postgres
    assert "ERROR:  duplicate key value violates unique constraint" in postgres
    slow = [float(m["ms"]) for m in SLOW_LINE.finditer(postgres)]
    assert len(slow) >= len(traffic.SLOW_SECONDS) and min(slow) >= SLOW_STATEMENT_MS
    assert max(slow) >= max(traffic.SLOW_SECONDS) * 1000

    response = httpx2.get(
        f"{exporter_stack.loki.url}/loki/api/v1/query_range",
        params={"query": '{job="postgres"} |= "deadlock detected"', "limit": 1000},
        headers={"X-Scope-OrgID": LOKI_TENANT},
        timeout=10,
    )
    [stream] = response.json()["data"]["result"]
    assert stream["stream"]["filename"] == str(exporter_stack.log_path("postgres.log"))
    assert len(stream["values"]) >= traffic.DEADLOCKS


def test_an_alert_on_a_failing_probe_is_confirmed_with_its_severity(exporter_sources, capsys):
    trace, [conclusion] = answer_of("是否存在 BlackboxProbeFailed 告警？", capsys)

    assert conclusion.startswith("结论：是，blackbox 的 BlackboxProbeFailed 告警（firing，critical）")
    assert trace["session"]["output_type"] == "NORMAL"


def test_an_alert_asked_in_english_is_confirmed(exporter_sources, exporter_stack, capsys):
    [rule] = [exporter_stack.rule("RedisEvictingKeys")]

    trace, [conclusion] = answer_of("Is RedisEvictingKeys firing?", capsys)

    assert rule["state"] == "firing"
    assert conclusion.startswith(
        f"结论：是，redis 的 RedisEvictingKeys 告警（firing，{rule['labels']['severity']}）"
    )
    assert trace["session"]["output_type"] == "NORMAL"


@pytest.mark.parametrize(
    ("question", "metric"),
    [
        ("What is pg_settings_max_connections right now?", "pg_settings_max_connections"),
        ("redis_memory_max_bytes 当前是多少？", "redis_memory_max_bytes"),
    ],
)
def test_a_setting_the_exporter_reports_is_answered_with_its_value(
    exporter_sources, exporter_stack, capsys, question, metric
):
    [series] = exporter_stack.query(metric)

    trace, [conclusion] = answer_of(question, capsys)

    assert f"{metric}{{" in conclusion and f"当前值 {number_text(series['value'][1])}" in conclusion
    assert trace["session"]["output_type"] == "NORMAL"


def test_the_runbook_named_by_a_rules_alert_is_quoted(exporter_sources, exporter_stack, capsys):
    # Redis's log is quiet. The same question about PostgresDeadlocksDetected is not stable yet: while
    # PostgreSQL's newest lines are FATAL ones its verdict fails closed (issue 36, fail-closed guards).
    runbook = (
        Path(exporter_sources["RUNBOOKS_DIR"])
        / Path(exporter_stack.rule("RedisEvictingKeys")["annotations"]["runbook_url"]).name
    )

    trace, [conclusion] = answer_of("RedisEvictingKeys 按手册第一步做什么？", capsys)

    assert conclusion.endswith(f"来源 runbooks/{runbook.name}")
    quoted = conclusion.split("》：", 1)[1].rsplit(" · 来源", 1)[0]
    assert quoted and quoted in " ".join(runbook.read_text().split())
    assert trace["session"]["output_type"] == "NORMAL"


@pytest.mark.parametrize(
    ("question", "verb"), [("帮我重启 redis", "重启"), ("Restart nginx for me", "restart")]
)
def test_a_restart_is_refused(exporter_sources, capsys, question, verb):
    trace, [conclusion] = answer_of(question, capsys)

    assert f"不能执行「{verb}」" in conclusion
    assert not [i for i in trace["tool_invocations"] if i["tool_name"] == "query_promql"]


def test_scrape_targets_are_counted_as_prometheus_has_them(exporter_sources, exporter_stack, capsys):
    targets = exporter_stack.prometheus("/api/v1/targets", state="active")["activeTargets"]

    _trace, [conclusion] = answer_of("有没有抓取目标挂了？", capsys)

    assert f"{len(targets)} 个抓取目标全部 up" in conclusion


# --- Log lines counted by what their format says (§22): the numbers read here from the log files before
# and after the question (the trickle keeps writing), the product's from Loki with LogQL. The count's
# slot is read from the trace: the verdict is not this count's (a line's unrelated negation, `database
# "shop_archive" does not exist`, still trips the polarity check of the executor's own claims). --------


def postgres_durations(stack) -> list[float]:
    return [float(m["ms"]) for m in SLOW_LINE.finditer(stack.log_text("postgres.log"))]


def postgres_deadlocks(stack) -> int:
    return stack.log_text("postgres.log").count("ERROR:  deadlock detected\n")


def count_conclusion(question: str, capsys) -> str:
    """The logs slot's conclusion as code wrote it from the count_logs call."""
    call_command("diagnose", question, "--json")
    trace = json.loads(capsys.readouterr().out)
    [slot] = [
        s for s in trace["self_evaluation"]["verifier_evaluation"]["slots"] if s["ask"]["kind"] == "logs"
    ]
    assert slot["filled"] and [b["tool_name"] for b in slot["bindings"]][:1] == ["count_logs"], slot
    return slot["conclusion"]


def counted(pattern: str, conclusion: str) -> str:
    found = re.search(pattern, conclusion)
    assert found, conclusion
    return found[1]


def test_404s_by_path_are_counted_from_the_access_log(exporter_sources, exporter_stack, capsys):
    before = access_log(exporter_stack)
    path = max((p for (status, p) in before if status == "404"), key=lambda p: before[("404", p)])

    conclusion = count_conclusion("nginx 的 404 多不多，都是哪些路径？", capsys)

    after = access_log(exporter_stack)
    assert (
        before[("404", path)]
        <= int(counted(rf"「{re.escape(path)}」(\d+) 条", conclusion))
        <= after[("404", path)]
    )
    assert "（LogQL 统计整个窗口）" in conclusion


def test_slow_statements_are_postgres_durations_over_a_second_with_the_slowest(
    exporter_sources, exporter_stack, capsys
):
    before = postgres_durations(exporter_stack)

    conclusion = count_conclusion("postgres 超过 1 秒的慢查询有几条？最慢的是哪条", capsys)

    after = postgres_durations(exporter_stack)
    number = int(counted(r"慢查询日志 (\d+) 条", conclusion))
    assert sum(ms > 1000 for ms in before) <= number <= sum(ms > 1000 for ms in after)
    assert float(counted(r"最慢 ([\d.]+) ms", conclusion)) == max(after)


def test_postgres_errors_are_counted_by_class(exporter_sources, exporter_stack, capsys):
    before = postgres_deadlocks(exporter_stack)

    conclusion = count_conclusion("postgres 日志里有哪几类错误？", capsys)

    assert (
        before
        <= int(counted(r"「deadlock detected」(\d+) 条", conclusion))
        <= postgres_deadlocks(exporter_stack)
    )
    assert "「sorry, too many clients already」" in conclusion
