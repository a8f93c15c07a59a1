"""Done-when of the log lines with their meaning on the live stack, the Loki API serving
loghub-style lines (OpenStack nova on a host named `slowvm1`, ZooKeeper): what the answer calls a line
is what the line is, and its pattern counts are the lines Loki served, counted here by the test."""

import json

import pytest
from django.core.management import call_command

from tests.integration.conftest import WORLD
from tests.loki_server import FakeLoki

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
LOGHUB = json.loads((WORLD / "loghub_streams.json").read_text())


@pytest.fixture
def loghub_sources(team_sources, settings):
    with FakeLoki(LOGHUB) as server:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {"LOKI_URL": server.url, "LOKI_TENANT": None}
        yield server


def answer_of(question: str, capsys) -> tuple[dict, str, list[str]]:
    call_command("diagnose", question, "--json")
    trace = json.loads(capsys.readouterr().out)
    answer = trace["session"]["answer"]
    return trace, answer, [line for line in answer.splitlines() if line.startswith("结论：")]


def lines_served(loki: FakeLoki, query: str) -> list[str]:
    status, body = loki.answer("/loki/api/v1/query_range", {"query": query})
    assert status == 200
    return [line for stream in body["data"]["result"] for _, line in stream["values"]]


def test_info_lines_are_never_presented_as_errors(loghub_sources, capsys):
    trace, answer, [conclusion] = answer_of("cart-api 最近 30 分钟的错误日志有哪些？", capsys)

    assert "cart-api 的错误日志" not in answer.replace(conclusion, "")
    assert "未检索到 cart-api 的错误日志" in conclusion
    assert "status: 200" not in answer
    assert trace["session"]["output_type"] == "NORMAL"


def test_slowvm1_is_not_a_slow_request(loghub_sources, capsys):
    _, answer, conclusions = answer_of("cart-api 有没有慢请求日志？", capsys)

    assert "最近 60 分钟未检索到 cart-api 的慢请求日志 · 来源 loki" in conclusions[-1]
    # The lines the search found are shown as what they are: log lines, not slow requests.
    assert not [line for line in answer.splitlines() if "slowvm1" in line and "慢请求" in line]


def test_a_negotiated_timeout_is_not_a_timeout_and_a_notification_time_out_is(loghub_sources, capsys):
    served = lines_served(loghub_sources, '{service="zookeeper"}')
    timed_out = [line for line in served if "Notification time out: 60000" in line]

    trace, answer, [conclusion] = answer_of("zookeeper 有哪些超时日志？", capsys)

    assert len(timed_out) == 7
    assert f"zookeeper 的超时日志 {len(timed_out)} 条" in conclusion
    assert "Notification time out: <*>」7 条" in conclusion
    assert "negotiated timeout" not in conclusion
    called_timeouts = [line for line in answer.splitlines() if "超时日志" in line]
    assert called_timeouts and not [line for line in called_timeouts if "negotiated timeout" in line]
    assert trace["session"]["output_type"] == "NORMAL"


def test_a_logs_answer_shows_pattern_counts_that_match_the_lines_served(loghub_sources, capsys):
    served = lines_served(loghub_sources, '{service="zookeeper"}')

    _, _, [conclusion] = answer_of("show zookeeper logs", capsys)

    assert f"zookeeper 的日志 {len(served)} 条" in conclusion
    counts = {
        "Notification time out: <*>": sum("Notification time out" in line for line in served),
        "negotiated timeout <*>": sum("negotiated timeout" in line for line in served),
        "CancelledKeyException": sum("CancelledKeyException" in line for line in served),
    }
    assert counts == {
        "Notification time out: <*>": 7,
        "negotiated timeout <*>": 5,
        "CancelledKeyException": 4,
    }
    for fragment, count in counts.items():
        pattern = next(part for part in conclusion.split("；") if fragment in part)
        assert f"」{count} 条" in pattern


# --- Counts by what a line's format says, on the second world's Loki (real-looking nginx, PostgreSQL
# 15, logfmt lines), the numbers read here from the streams file, never through the product. -------

STREAMS = json.loads((WORLD / "loki_streams.json").read_text())


def within_hour(service: str, contains: str, *, filename: str = "") -> list[str]:
    return [
        entry["line"]
        for stream in STREAMS
        if stream["stream"]["service"] == service and filename in stream["stream"].get("filename", "")
        for entry in stream["lines"]
        if entry["seconds_ago"] < 3600 and contains in entry["line"]
    ]


def metric_queries(loki: FakeLoki) -> list[str]:
    return [r["params"]["query"] for r in loki.requests if r["path"] == "/loki/api/v1/query"]


def test_404s_by_path_are_counted_over_the_window_with_logql_on_the_live_stack(team_sources, loki, capsys):
    not_found = within_hour("edge-proxy", '" 404 ', filename="access.log")
    legacy = sum("/api/v1/legacy-cart " in line for line in not_found)

    trace, _, [conclusion] = answer_of("edge-proxy 的 404 多不多？", capsys)

    assert f"edge-proxy 状态码 404 的访问日志 {len(not_found)} 条（LogQL 统计整个窗口）" in conclusion
    assert f"「/api/v1/legacy-cart」{legacy} 条" in conclusion
    [counted] = [i for i in trace["tool_invocations"] if i["tool_name"] == "count_logs"]
    assert counted["output"]["queries"] == metric_queries(loki)
    assert any(
        q.startswith('topk(10, sum by (path) (count_over_time({service="edge-proxy"} | pattern')
        for q in metric_queries(loki)
    )
    assert trace["session"]["output_type"] == "NORMAL"


def test_slow_queries_are_postgres_durations_over_a_second_with_the_slowest(team_sources, loki, capsys):
    durations = [
        float(line.split("duration: ")[1].split(" ms")[0]) for line in within_hour("ledger-db", "duration: ")
    ]

    trace, _, [conclusion] = answer_of("ledger-db 慢查询有几条？最慢的是哪条", capsys)

    assert f"慢查询日志 {sum(d > 1000 for d in durations)} 条（LogQL 统计整个窗口）" in conclusion
    assert f"最慢 {max(durations):g} ms" in conclusion
    assert any("| unwrap duration_ms |" in q for q in metric_queries(loki))
    assert trace["session"]["output_type"] == "NORMAL"


def test_errors_by_class_are_sqlstate_classes_and_failed_calls(team_sources, loki, capsys):
    deadlocks = len(within_hour("ledger-db", "40P01 ERROR:"))
    refused = len(within_hour("edge-proxy", "(111: Connection refused)"))

    _, _, [database] = answer_of("Which kinds of errors did ledger-db log?", capsys)
    _, _, [proxy] = answer_of("edge-proxy 有哪几类错误？", capsys)

    assert f"「40 Transaction Rollback」{deadlocks} 条" in database
    assert f"「connect() failed (111: Connection refused)」{refused} 条" in proxy


def test_lines_logql_cannot_read_are_counted_as_served_and_said_so(loghub_sources, capsys):
    took = [
        float(entry["line"].split("Took ")[1].split(" seconds")[0])
        for stream in LOGHUB
        if stream["stream"]["service"] == "compute"
        for entry in stream["lines"]
    ]

    trace, _, [conclusion] = answer_of("compute 超过 2 秒的请求有几条？", capsys)

    assert f"compute 耗时超过 2000 ms 的慢日志 {sum(s > 2 for s in took)} 条（窗口内全部日志）" in conclusion
    assert f"最慢 {max(took) * 1000:g} ms" in conclusion
    assert trace["session"]["output_type"] == "NORMAL"
