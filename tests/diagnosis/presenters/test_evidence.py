import pytest

from diagnosis.models import DiagnosisSession
from diagnosis.pipeline.scope import SCOPE_RULE
from diagnosis.presenters.evidence import (
    Highlight,
    SessionPanel,
    excerpt_highlight,
    round_view,
    session_panel,
)
from diagnosis.selectors.evidence import session_evidence, session_rounds
from diagnosis.services.sessions import session_start
from tests.factories import CompletedSessionFactory, UserFactory, claim_blocked

pytestmark = pytest.mark.django_db


def panel_of(session: DiagnosisSession) -> SessionPanel:
    return session_panel(evidence=session_evidence(session=session))


REF = "[2026-11-29 14:52:00][ERROR][order-service] HikariPool-1 - Connection is not available"


@pytest.mark.parametrize(
    ("excerpt", "marked"),
    [
        ("HikariPool-1 - Connection", "HikariPool-1 - Connection"),
        ("hikaripool-1 - connection", "HikariPool-1 - Connection"),
        ("HikariPool-1  Connection is not available", "HikariPool-1 - Connection is not available"),
        ("ＨｉｋａｒｉＰｏｏｌ－１ Connection", "HikariPool-1 - Connection"),
        ("HikariPool-1 - Connection is NOT avail", "HikariPool-1 - Connection is not avail"),
    ],
)
def test_excerpt_is_marked_where_it_sits_in_the_tool_output(excerpt, marked):
    highlight = excerpt_highlight(text=REF, excerpt=excerpt)
    assert highlight.match == marked
    assert highlight.before + highlight.match + highlight.after == REF


def test_a_close_but_inexact_excerpt_is_marked_approximately():
    highlight = excerpt_highlight(text=REF, excerpt="HikariPool-1 Connection is unavailable")
    assert highlight.match.startswith("HikariPool-1 - Connection")


def test_an_excerpt_that_is_not_there_marks_nothing():
    assert excerpt_highlight(text=REF, excerpt="payment-service Redis 超时 3000ms") == Highlight(REF, "", "")


def test_each_round_pairs_claims_with_their_checked_bindings_and_class():
    session = CompletedSessionFactory(verdict="PASS", retried=True)
    first, second = (round_view(each) for each in session_rounds(session=session))
    assert (first.verdict, second.verdict) == ("LOW_CONFID", "PASS")
    assert [claim.verification for claim in first.claims] == ["direct_observation", "unsupported"]
    assert [claim.verification_tone for claim in first.claims] == ["good", "warn"]
    (binding,) = second.claims[0].bindings
    assert binding.passed
    assert binding.ref.match == "HighMemoryUsage firing service=order-service"
    assert binding.record.alert_name == "HighMemoryUsage"
    assert second.retry_context["round"] == 1


def test_the_chat_panel_shows_only_allowed_claims_and_their_passed_bindings():
    session = CompletedSessionFactory(verdict="LOW_CONFID")
    panel = panel_of(session)
    assert [claim.claim_id for claim in panel.claims] == ["c1"]
    assert panel.hidden_claim_count == 1


def test_blocked_claims_never_reach_the_chat_panel_which_says_which_guard_blocked_them():
    session = CompletedSessionFactory(verdict="PASS")
    claim_blocked(session, claim_id="c1", rule=SCOPE_RULE)

    panel = panel_of(session)

    assert panel.claims == []
    assert panel.verified_bindings == []
    assert panel.hidden_claim_count == 0
    assert panel.blocked_claim_counts == [("用户排除的主题", 1)]
    (claim,) = session_rounds(session=session)[-1].claims
    assert (claim.claim_id, claim.blocked_by, claim.shown) == ("c1", SCOPE_RULE, False)


def test_a_claim_the_exclusion_guard_only_trimmed_is_shown():
    session = CompletedSessionFactory(verdict="PASS")
    evaluation = session.self_evaluation["verifier_evaluation"]
    evaluation["gatekeeper_result"]["warnings"].append(
        {
            "rule": SCOPE_RULE,
            "message": "证据 $.logs[0] 涉及用户排除的主题（GC），已从断言中移除",
            "claim_id": "c1",
        }
    )
    session.save()

    panel = panel_of(session)

    assert [claim.claim_id for claim in panel.claims] == ["c1"]
    assert panel.blocked_claim_counts == []


def test_the_panel_shows_the_claim_the_answer_states_when_a_topic_was_excluded():
    session = session_start(
        query="order-service 为什么内存高？不要分析 GC", owner=UserFactory(), run_inline=True
    )
    warnings = session.self_evaluation["verifier_evaluation"]["guard_warnings"]
    assert {(w["rule"], w["claim_id"]) for w in warnings} == {(SCOPE_RULE, "claim-1")}  # bindings dropped

    panel = panel_of(session)

    assert session.output_type == DiagnosisSession.OutputType.NORMAL
    # The investigation's moved series are claims too: none about the excluded topic.
    assert "moved-1" in {claim.claim_id for claim in panel.claims}
    for claim in panel.claims:
        assert claim.text in session.answer.split("**已确认的发现**")[1]
        assert all("GC" not in binding.excerpt for binding in claim.bindings)
    assert panel.hidden_claim_count == 0


def test_a_rejected_round_shows_no_claim_and_no_failed_excerpt():
    panel = panel_of(CompletedSessionFactory(verdict="REJECT"))
    assert panel.claims == []
    assert panel.verified_bindings == []
    assert panel.output_type_tone == "bad"


def test_a_running_session_has_no_evidence_yet():
    session = CompletedSessionFactory(verdict="PASS")
    DiagnosisSession.objects.filter(pk=session.pk).update(status=DiagnosisSession.Status.RUNNING)
    session.refresh_from_db()
    panel = panel_of(session)
    assert panel.live
    assert panel.claims == []
