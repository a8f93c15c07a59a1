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
