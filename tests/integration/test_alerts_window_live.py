"""Done-when of issue 36 items 0 and 5 on the live stack (real Prometheus and Alertmanager): the alerts
that fired over an asked window, which fired first and when, read again here by the test itself from
Prometheus's raw `ALERTS` samples; and a kind without a source said to have none."""

import json
import re
from datetime import datetime

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
WINDOW = 30
FIRST = re.compile(r"最先触发的是 (?:\S+ 的 )?(?P<alert>\w+)（(?:[^）]*?，)?(?P<time>\d{2}:\d{2}:\d{2}) 起")


def answer_of(question: str, capsys) -> tuple[dict, list[str]]:
    call_command("diagnose", question, "--json")
    trace = json.loads(capsys.readouterr().out)
    conclusions = [line for line in trace["session"]["answer"].splitlines() if line.startswith("结论：")]
    return trace, conclusions


def fired(stack) -> dict[str, float]:
    """Each alert that fired in the window (name and labels), and its first firing sample's time."""
    query = f'ALERTS{{alertstate="firing"}}[{WINDOW}m]'
    result = stack.prometheus("/api/v1/query", query=query)["result"]
    return {
        series["metric"]["alertname"]: min(float(ts) for ts, _ in series["values"]) for series in result
    }


def test_the_alerts_fired_in_a_window_are_every_one_prometheus_holds_counted(team_sources, stack, capsys):
    truth = fired(stack)

    trace, [conclusion] = answer_of(f"过去 {WINDOW} 分钟哪些告警？", capsys)

    assert f"触发过 {len(truth)} 条告警" in conclusion
    assert all(name in conclusion for name in truth)
    [ranged] = [i for i in trace["tool_invocations"] if i["tool_name"] == "query_promql"]
    assert ranged["input"] == {"query": 'ALERTS{alertstate="firing"}', "minutes": WINDOW}
    assert trace["session"]["output_type"] == "NORMAL"


def test_which_fired_first_is_the_earliest_firing_sample_and_its_time(team_sources, stack, capsys):
    truth = fired(stack)
    first = min(truth, key=truth.get)

    trace, [conclusion] = answer_of(f"过去 {WINDOW} 分钟最先触发的是哪条告警？", capsys)

    said = FIRST.search(conclusion)
    assert said is not None, conclusion
    assert said["alert"] == first
    began = datetime.strptime(said["time"], "%H:%M:%S")
    expected = datetime.fromtimestamp(truth[first]).replace(year=1900, month=1, day=1, microsecond=0)
    # The range query's step (the window over 119 points) is the precision of "when".
    assert abs((began - expected).total_seconds()) <= WINDOW * 60 / 119 + 1
    assert trace["session"]["output_type"] == "NORMAL"


def test_beside_prometheus_alone_logs_are_said_to_have_no_source(settings, stack, capsys):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": stack.prometheus_url, "DEMO_NOW": None}

    trace, _ = answer_of("billing 最近的错误日志有哪些？", capsys)

    answer = trace["session"]["answer"]
    assert "未能回答：billing 的日志 — 未配置日志源" in answer
    assert "演示数据" not in answer
    assert trace["session"]["verdict"] == "LOW_CONFID"
    assert not [i for i in trace["tool_invocations"] if i["tool_name"] == "query_logs"]
