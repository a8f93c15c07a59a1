"""`query_promql`: series refs name the series and its numbers, and the gatekeeper's
number rules hold for them as for any evidence."""

from datetime import datetime

import pytest

from diagnosis.models import ToolInvocation
from diagnosis.pipeline.contracts import Claim, EvidenceBinding, ExecutorOutput
from diagnosis.pipeline.gatekeeper import gatekeep
from tests.tools.support import record, use_source
from tools.bounds import stored_bytes
from tools.evidence.series.source import SeriesSource

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


def citing(invocation, excerpt: str, raw_path: str = "$.series[0]") -> ExecutorOutput:
    binding = EvidenceBinding(
        tool_name="query_promql",
        source_invocation_id=invocation.pk,
        raw_path=raw_path,
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

    result = gatekeep(executor_output=citing(invocation, excerpt), invocations=[invocation.tool_result()])

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


EVERY_SERIES = 30_000


class EverySeriesPrometheus(SeriesSource):
    """A Prometheus asked for `{__name__=~".+"}`: every series it holds (about 4 MB of JSON); over
    minutes, three series of 2,000 points each."""

    def query_promql(self, *, query: str, minutes: int, now) -> dict:
        if minutes:
            values = [[AT - 15 * (1999 - step), f"{step}.5"] for step in range(2000)]
            return {"result_type": "matrix", "series": [{"metric": SERIES, "values": values}] * 3}
        series = [
            {"metric": {**SERIES, "instance": f"web-{index}:9100"}, "value": [AT, f"{index}.25"]}
            for index in range(EVERY_SERIES)
        ]
        return {"result_type": "vector", "series": series}


@pytest.fixture
def every_series(settings):
    from tests.factories import DiagnosisSessionFactory

    use_source(settings, EverySeriesPrometheus, SeriesSource)
    return DiagnosisSessionFactory()


def test_every_series_of_the_source_is_stored_and_returned_within_the_bytes_with_the_totals(
    every_series, settings
):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"OUTPUT_MAX_BYTES": 16 * 1024}
    invocation = record(every_series, "query_promql", query='{__name__=~".+"}')

    stored = ToolInvocation.objects.get(pk=invocation.pk)
    assert stored_bytes(stored.output) <= settings.DIAGNOSIS["OUTPUT_MAX_BYTES"]
    assert stored.output["truncated"] is True
    assert stored.output["total_series"] == EVERY_SERIES
    kept = len(stored.output["series"])
    assert 0 < kept < settings.DIAGNOSIS["OUTPUT_MAX_SERIES"]
    assert [ref["raw_path"] for ref in stored.evidence_refs] == [f"$.series[{i}]" for i in range(kept)]
    returned = stored.tool_result().message()["output"]
    assert (returned["truncated"], returned["total_series"]) == (True, EVERY_SERIES)


def test_a_citation_of_a_kept_series_passes_the_gatekeeper_and_one_of_a_cut_series_is_rejected(
    every_series,
):
    invocation = record(every_series, "query_promql", query='{__name__=~".+"}')
    kept = len(invocation.output["series"])
    last_kept = invocation.evidence_refs[-1]
    cut = f'node_load1{{instance="web-{kept}:9100",job="node"}} 当前值 {kept}.25（13:20:00）'

    def checked(raw_path: str, excerpt: str) -> str:
        output = citing(invocation, excerpt, raw_path)
        return gatekeep(executor_output=output, invocations=[invocation.tool_result()]).severity

    assert 0 < kept < EVERY_SERIES
    assert last_kept["raw_path"] == f"$.series[{kept - 1}]"
    assert checked(last_kept["raw_path"], last_kept["text"]) == "none"
    assert checked(f"$.series[{kept}]", cut) == "reject"


def test_a_series_keeps_its_latest_points_so_its_latest_value_is_the_sources(every_series, settings):
    invocation = record(every_series, "query_promql", query="node_load1", minutes=600)

    first = invocation.output["series"][0]
    assert len(first["values"]) == settings.DIAGNOSIS["OUTPUT_MAX_POINTS"]
    assert first["total_points"] == 2000
    assert invocation.evidence_refs[0]["text"].startswith(
        'node_load1{instance="web-1:9100",job="node"} 最新值 1999.5（13:20:00）'
    )
