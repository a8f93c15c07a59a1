"""Range-query evidence is drawn: a small SVG of the cited series beside its excerpt, the quoted points
and the alert threshold marked, labels escaped, on the chat page, the admin audit page and the AIOps
analysis page."""

import pytest
from django.urls import reverse

from diagnosis.models import DiagnosisSession
from diagnosis.selectors.charts import series_chart, threshold_of
from diagnosis.services.sessions import session_start
from tests.diagnosis.range_support import QUESTION, executor_citing, use_load_prometheus
from tests.factories import (
    CompletedSessionFactory,
    StaffUserFactory,
    ToolInvocationFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def load_world(settings):
    use_load_prometheus(settings)


def ranged_session(fake_llm, *, minutes: int = 5, owner=None) -> DiagnosisSession:
    fake_llm({"executor": executor_citing(minutes=minutes)})
    session = session_start(query=QUESTION, engine="llm", owner=owner, run_inline=True)
    assert session.status == DiagnosisSession.Status.COMPLETED, session.error
    if minutes:  # the claim quotes the range's numbers: verified in the first round
        assert session.rounds == 1, session.answer
    return session


def chart_of(page: str) -> str:
    return page.split('<figure class="evidence-chart"')[1].split("</figure>")[0]


def test_a_range_query_excerpt_is_drawn_with_its_quoted_points_and_the_alert_threshold(
    client, load_world, fake_llm
):
    engineer = UserFactory()
    client.force_login(engineer)
    session = ranged_session(fake_llm, owner=engineer)

    page = client.get(reverse("chat-conversation", args=[session.session_id])).content.decode()

    chart = chart_of(page)
    assert 'data-points="5"' in chart
    # The excerpt quotes the latest (0.52), the lowest (0.31) and the highest (0.88) sample.
    assert 'data-cited="3"' in chart
    assert chart.count('class="chart-cited"') == 3
    assert 'data-threshold="0.5"' in chart
    assert "阈值 &gt; 0.5" in chart
    assert "<polyline" in chart
    # Labels are escaped: the series' own label value never becomes markup.
    assert "<b>x</b>" not in chart
    assert "&lt;b&gt;x&lt;/b&gt;" in chart
    assert "<script" not in chart
    assert "cdn" not in chart.lower()


def test_an_instant_query_has_no_chart(client, load_world, fake_llm):
    engineer = UserFactory()
    client.force_login(engineer)
    session = ranged_session(fake_llm, minutes=0, owner=engineer)

    page = client.get(reverse("chat-conversation", args=[session.session_id])).content.decode()

    assert session.tool_invocations.filter(tool_name="query_promql").exists()
    assert "evidence-chart" not in page


def test_the_admin_audit_page_draws_the_chart_too(client, load_world, fake_llm):
    session = ranged_session(fake_llm)
    client.force_login(StaffUserFactory(is_superuser=True))

    page = client.get(reverse("admin:diagnosis_diagnosissession_change", args=[session.pk])).content.decode()

    assert 'data-threshold="0.5"' in chart_of(page)


@pytest.mark.parametrize(
    ("expr", "threshold"),
    [
        ("node_load1 > 0.5", ("node_load1", ">", 0.5)),
        (
            'rate(http_requests_total{code=~"5.."}[5m]) >= bool 12',
            ('rate(http_requests_total{code=~"5.."}[5m])', ">=", 12.0),
        ),
        # The parser reads what a pattern over the text did not: the number first, a set operation after.
        ("0.5 < node_load1", ("node_load1", ">", 0.5)),
        ("node_load1 > 1e3 and up", ("node_load1", ">", 1000.0)),
        ("sum(x > 1)", None),
        ('up{job!="node"}', None),
        ("node_load1", None),
        ("node_load1 > 1e400", None),
    ],
)
def test_a_threshold_is_read_from_the_exprs_own_comparison_only(expr, threshold):
    parsed = threshold_of(expr)

    assert (None if parsed is None else (parsed[0], parsed[1].op, parsed[1].value)) == threshold


def test_an_alerts_threshold_is_found_for_its_series_however_the_query_spells_it():
    alerts = ToolInvocationFactory.build(
        output={"alerts": [{"alert_name": "JobLoadHigh", "expr": "sum(rate(load[5m])) by (job) > 0.5"}]}
    )
    # The same series as the alert's, written the other way PromQL allows.
    cited = ToolInvocationFactory.build(
        tool_name="query_promql",
        input={"query": "sum by (job) (rate(load[5m]))", "minutes": 5},
        output={"series": [{"metric": {"job": "node"}, "values": [[1, "0.4"], [2, "0.6"]]}]},
    )

    chart = series_chart(
        result=cited.tool_result(), raw_path="$.series[0]", session_results=[alerts.tool_result()]
    )

    assert chart is not None
    assert (chart.threshold.op, chart.threshold.value) == (">", 0.5)


def test_the_ai_ops_analysis_page_draws_the_series_its_alert_sessions_cited(client, load_world, fake_llm):
    engineer = UserFactory()
    client.force_login(engineer)
    analysis = CompletedSessionFactory(owner=engineer, kind=DiagnosisSession.Kind.AIOPS)
    child = ranged_session(fake_llm)
    DiagnosisSession.objects.filter(pk=child.pk).update(parent=analysis, kind=DiagnosisSession.Kind.AIOPS)

    page = client.get(reverse("chat-conversation", args=[analysis.session_id])).content.decode()

    charts = page.split('class="bindings alert-charts"')[1]
    assert 'data-threshold="0.5"' in chart_of(charts)
    assert child.query in charts


def test_the_cited_points_are_those_whose_values_the_series_ref_names():
    cited = ToolInvocationFactory.build(
        tool_name="query_promql",
        input={"query": "node_load1", "minutes": 5},
        output={
            "series": [{"metric": {}, "values": [[1, "0.4"], [2, "0.9"], [3, "0.4"], [4, "0.6"], [5, "0.7"]]}]
        },
    )

    chart = series_chart(result=cited.tool_result(), raw_path="$.series[0]", session_results=[])

    # Its ref says the latest (0.7), the lowest (0.4, twice) and the highest (0.9).
    assert chart.cited == [(1.0, 0.4), (2.0, 0.9), (3.0, 0.4), (5.0, 0.7)]
