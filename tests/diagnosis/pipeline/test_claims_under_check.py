"""What a verifier is shown of each claim: its verified excerpts and code's fact-token and polarity
findings, on real recorded invocations checked by the real gatekeeper (demo names and plain ones)."""

import pytest

from diagnosis.pipeline.claims_under_check import claims_under_check
from diagnosis.pipeline.contracts import Claim, ExecutorOutput
from diagnosis.pipeline.facts import FactNames
from diagnosis.pipeline.gatekeeper import gatekeep
from tests.factories import DiagnosisSessionFactory, binding_for, recorded_invocation

pytestmark = pytest.mark.django_db

DEMO_ALERT = "HighMemoryUsage firing service=order-service: 内存使用率持续超过85%，当前 91%"
# A second world whose service is a plain word: only the session's names make `web` a fact.
PLAIN_ALERT = "DiskAlmostFull firing service=web: 磁盘使用率 93%"
PLAIN_NAMES = FactNames.of(["web", "api", "DiskAlmostFull"])
NO_HIT = "query_logs(query=error, service=web) 未检索到匹配证据"


def under_check(invocations, *claims: tuple[str, str, list], names: FactNames = PLAIN_NAMES):
    output = ExecutorOutput(
        claims=[
            Claim(claim_id=f"claim-{i}", claim_type=kind, claim_text=text, evidence_bindings=bindings)
            for i, (kind, text, bindings) in enumerate(claims, start=1)
        ],
        hypotheses=[],
        missing_info=[],
        recommended_actions=[],
        diagnosis_summary="",
        user_facing_answer="",
    )
    result = gatekeep(executor_output=output, invocations=[i.tool_result() for i in invocations], names=names)
    return claims_under_check(executor_output=output, gatekeeper_result=result, names=names)


@pytest.fixture
def session():
    return DiagnosisSessionFactory()


def test_a_claim_is_shown_with_its_verified_excerpt_and_which_facts_are_in_it(session):
    alert = recorded_invocation(session, "query_alerts", "$.alerts[0]", PLAIN_ALERT)

    [item] = under_check(
        [alert], ("observation", "web 的 DiskAlmostFull 告警，磁盘使用率 97%", [binding_for(alert)])
    )

    assert item.claim == "web 的 DiskAlmostFull 告警，磁盘使用率 97%"
    assert [(e.source, e.text) for e in item.excerpts] == [
        (f"query_alerts #{alert.pk} $.alerts[0]", PLAIN_ALERT)
    ]
    assert item.facts_in_excerpts == ["web", "DiskAlmostFull"]
    assert item.facts_not_in_excerpts == ["97%"]
    assert item.polarity == "consistent"


def test_the_sessions_names_are_facts_whatever_their_shape(session):
    alert = recorded_invocation(session, "query_alerts", "$.alerts[0]", PLAIN_ALERT)
    claim = ("observation", "api 的 DiskAlmostFull 告警，磁盘使用率 93%", [binding_for(alert)])

    [with_names] = under_check([alert], claim)
    [without] = under_check([alert], claim, names=FactNames.of([]))

    assert with_names.facts_not_in_excerpts == ["api"]
    assert without.facts_not_in_excerpts == []


def test_a_claim_without_a_verified_excerpt_has_none_and_no_fact_is_in_one(session):
    alert = recorded_invocation(session, "query_alerts", "$.alerts[0]", DEMO_ALERT)
    too_short = binding_for(alert, excerpt="91%")

    [item] = under_check(
        [alert], ("observation", "order-service 当前 91%", [too_short]), names=FactNames.of(["order-service"])
    )

    assert item.excerpts == []
    assert item.facts_in_excerpts == []
    assert item.facts_not_in_excerpts == ["order-service", "91%"]


def test_a_negative_observation_on_a_no_hit_is_consistent(session):
    search = recorded_invocation(session, "query_logs", "$.no_evidence", NO_HIT)

    [item] = under_check([search], ("negative_observation", "未检索到 web 的错误日志", [binding_for(search)]))

    assert item.polarity == "consistent"
    assert item.excerpts[0].text == NO_HIT


def test_each_excerpt_is_shown_once(session):
    alert = recorded_invocation(session, "query_alerts", "$.alerts[0]", PLAIN_ALERT)

    twice = [binding_for(alert), binding_for(alert, "DiskAlmostFull firing service=web")]

    [item] = under_check([alert], ("observation", "web 的 DiskAlmostFull 告警", twice))

    assert len(item.excerpts) == 1
