"""`query_promql`: series refs name the series and its numbers, and the gatekeeper's
number rules hold for them as for any evidence."""

from datetime import datetime

import pytest

from diagnosis.pipeline.contracts import Claim, EvidenceBinding, ExecutorOutput
from diagnosis.pipeline.gatekeeper import gatekeep
from tests.tools.support import record, use_source
from tools.sources.kinds import SeriesSource

pytestmark = pytest.mark.django_db
AT = datetime.fromisoformat("2026-11-29T13:20:00+08:00").timestamp()
SERIES = {"__name__": "node_load1", "instance": "web-1:9100", "job": "node"}


class SecondWorldPrometheus(SeriesSource):
    def query_promql(self, *, query: str, minutes: int, now) -> dict:
        if minutes:
            values = [[AT - 120, "0.31"], [AT - 60, "0.88"], [AT, "0.52"]]
            return {"result_type": "matrix", "series": [{"metric": SERIES, "values": values}]}
        return {"result_type": "vector", "series": [{"metric": SERIES, "value": [AT, "1.6450887680e+10"]}]}


@pytest.fixture
def session(settings):
    from tests.factories import DiagnosisSessionFactory

    use_source(settings, SecondWorldPrometheus, SeriesSource)
    return DiagnosisSessionFactory()


def test_a_range_ref_names_the_series_its_latest_value_and_the_range(session, settings):
    invocation = record(session, "query_promql", query="node_load1", minutes=30)

    assert invocation.evidence_refs == [
        {
            "raw_path": "$.series[0]",
            "text": 'node_load1{instance="web-1:9100",job="node"} 最新值 0.52（13:20:00），区间最小 0.31，最大 0.88',
        }
    ]


def test_an_instant_ref_prints_the_sample_in_plain_decimals(session):
    invocation = record(session, "query_promql", query="node_memory_MemTotal_bytes")

    assert invocation.evidence_refs[0]["text"] == (
        'node_load1{instance="web-1:9100",job="node"} 当前值 16450887680（13:20:00）'
    )


def citing(invocation, excerpt: str) -> ExecutorOutput:
    binding = EvidenceBinding(
        tool_name="query_promql",
        source_invocation_id=invocation.pk,
        raw_path="$.series[0]",
        evidence_excerpt=excerpt,
    )
    claim = Claim(
        claim_id="claim-1", claim_type="observation", claim_text=excerpt, evidence_bindings=[binding]
    )
    return ExecutorOutput(
        claims=[claim],
        hypotheses=[],
        missing_info=[],
        recommended_actions=[],
        diagnosis_summary="",
        user_facing_answer="",
    )


@pytest.mark.parametrize(
    ("excerpt", "severity"),
    [
        ('node_load1{instance="web-1:9100",job="node"} 最新值 0.52（13:20:00）', "none"),
        (
            'node_load1{instance="web-1:9100",job="node"} 最新值 0.62（13:20:00），区间最小 0.31，最大 0.88',
            "reject",
        ),
        (
            'node_load1{instance="web-1:9100",job="node"} 最新值 0.52（13:20:00），区间最小 0.31，最大 0.98',
            "reject",
        ),
        (
            'node_load1{instance="web-2:9100",job="node"} 最新值 0.52（13:20:00），区间最小 0.31，最大 0.88',
            "reject",
        ),
    ],
)
def test_a_changed_number_in_a_series_excerpt_is_rejected(session, excerpt, severity):
    invocation = record(session, "query_promql", query="node_load1", minutes=30)

    result = gatekeep(executor_output=citing(invocation, excerpt), invocations=[invocation])

    assert result.severity == severity


class KeepsAWeek(SecondWorldPrometheus):
    def retention_minutes(self) -> int | None:
        return 7 * 24 * 60


def test_a_range_output_says_how_far_back_the_source_keeps_samples(session, settings):
    unknown = record(session, "query_promql", query="node_load1", minutes=30)
    instant = record(session, "query_promql", query="node_load1")
    use_source(settings, KeepsAWeek, SeriesSource)
    week = record(session, "query_promql", query="node_load1", minutes=30)

    # A source that cannot tell says so (None); an instant query has no window to limit.
    assert unknown.output["retention_minutes"] is None
    assert week.output["retention_minutes"] == 7 * 24 * 60
    assert "retention_minutes" not in instant.output


def test_an_instant_query_reading_back_through_a_range_says_how_far_back_too(session, settings):
    use_source(settings, KeepsAWeek, SeriesSource)

    history = record(session, "query_promql", query="changes(ALERTS_FOR_STATE[10080m])")

    assert history.output["retention_minutes"] == 7 * 24 * 60


class CountingPrometheus(KeepsAWeek):
    """Keeps a week; counts the queries that reached it."""

    queries: list[str] = []

    def query_promql(self, *, query: str, minutes: int, now) -> dict:
        self.queries.append(query)
        return super().query_promql(query=query, minutes=minutes, now=now)


class SaysNoRetention(CountingPrometheus):
    def retention_minutes(self) -> int | None:
        return None


@pytest.fixture
def caller_session(settings):
    """A caller's own call (an MCP client's `query_promql`): a `tool` session."""
    from tests.factories import DiagnosisSessionFactory

    CountingPrometheus.queries = []
    use_source(settings, CountingPrometheus, SeriesSource)
    return DiagnosisSessionFactory(kind="tool")


@pytest.mark.parametrize(
    ("query", "minutes", "refusal"),
    [
        (
            'count_over_time({__name__=~".+"}[10y])',
            0,
            'PromQL 选择器 {__name__=~".+"} 没有指标名：请写出指标名',
        ),
        ('sum({job="node"})', 0, 'PromQL 选择器 {job="node"} 没有指标名'),
        (
            "count_over_time(node_load1[10y])",
            0,
            "PromQL 要读到 10y 之前的数据，超过 Prometheus 的保留期 1w：",
        ),
        ("node_load1 offset 6d", 2 * 24 * 60, "PromQL 要读到 8d 之前的数据，超过 Prometheus 的保留期 1w："),
    ],
)
def test_a_callers_query_without_a_metric_name_or_past_the_retention_is_refused_before_it_is_sent(
    caller_session, query, minutes, refusal
):
    invocation = record(caller_session, "query_promql", query=query, minutes=minutes)

    assert not invocation.success
    assert invocation.evidence_status == "failed"
    assert invocation.error.startswith(refusal)
    assert "请缩短区间" in invocation.error or "不要只按标签" in invocation.error
    assert CountingPrometheus.queries == []


def test_a_callers_query_within_the_retention_is_sent(caller_session):
    invocation = record(caller_session, "query_promql", query="max_over_time(node_load1[6d])", minutes=60)

    assert invocation.success
    assert CountingPrometheus.queries == ["max_over_time(node_load1[6d])"]


def test_a_server_that_states_no_retention_is_taken_to_keep_prometheus_default_15_days(
    caller_session, settings
):
    use_source(settings, SaysNoRetention, SeriesSource)

    within = record(caller_session, "query_promql", query="changes(node_load1[14d])")
    beyond = record(caller_session, "query_promql", query="changes(node_load1[16d])")

    assert within.success
    assert beyond.error.startswith("PromQL 要读到 16d 之前的数据，超过 Prometheus 的保留期 15d：")


def test_a_diagnosis_asks_past_the_retention_and_is_answered_with_what_the_server_keeps(session, settings):
    use_source(settings, CountingPrometheus, SeriesSource)
    CountingPrometheus.queries = []

    history = record(session, "query_promql", query="changes(ALERTS_FOR_STATE[30d])")

    assert history.success
    assert history.output["retention_minutes"] == 7 * 24 * 60
    assert CountingPrometheus.queries == ["changes(ALERTS_FOR_STATE[30d])"]
