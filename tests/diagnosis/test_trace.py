import json

import pytest

from diagnosis.models import DiagnosisSession
from diagnosis.selectors import trace as traces
from diagnosis.serializers import TraceSerializer
from tests.factories import (
    AgentStepFactory,
    AlertInvocationFactory,
    CompletedSessionFactory,
    DiagnosisSessionFactory,
    ToolInvocationFactory,
    UserFactory,
)
from tests.tools.support import pin_demo_now, record
from tools.evidence.receipt import Receipt, output_digest

pytestmark = pytest.mark.django_db


def session_trace(*, session):
    return TraceSerializer(traces.session_trace(session=session)).data


def session_trace_for_user(*, user, session_id):
    return TraceSerializer(traces.session_trace_for_user(user=user, session_id=session_id)).data


def test_trace_is_plain_json():
    trace = session_trace(session=CompletedSessionFactory(retried=True))
    assert json.loads(json.dumps(trace)) == trace
    assert trace["session"]["rounds"] == 2
    assert len(trace["steps"]) == 10


@pytest.mark.parametrize("size", [1, 20])
def test_trace_costs_two_queries_whatever_the_session_size(django_assert_num_queries, size):
    session = DiagnosisSessionFactory()
    AgentStepFactory.create_batch(size, session=session)
    AlertInvocationFactory.create_batch(size, session=session)
    session = DiagnosisSession.objects.get(pk=session.pk)
    with django_assert_num_queries(2):
        trace = session_trace(session=session)
    assert len(trace["steps"]) == len(trace["tool_invocations"]) == size


@pytest.mark.parametrize("size", [1, 40])
def test_a_page_of_the_trace_costs_three_queries_whatever_the_session_size(django_assert_num_queries, size):
    session = DiagnosisSessionFactory()
    AgentStepFactory.create_batch(size, session=session)
    AlertInvocationFactory.create_batch(size, session=session)
    session = DiagnosisSession.objects.get(pk=session.pk)
    with django_assert_num_queries(3):
        trace = TraceSerializer(traces.session_trace(session=session, page=1)).data
    assert len(trace["tool_invocations"]) == min(size, 10)
    assert trace["tool_invocations_page"]["total"] == size


def test_legacy_root_level_scores_are_wrapped_into_their_slots():
    session = DiagnosisSessionFactory(
        self_evaluation={"evidence_score": 65, "verdict": "PASS", "groundedness_score": 0.8}
    )
    trace = session_trace(session=session)
    assert trace["self_evaluation"]["rule_evaluation"]["evidence_score"] == 65
    assert trace["self_evaluation"]["verifier_evaluation"]["verdict"] == "PASS"
    assert trace["hasVerifierEvaluation"] is True


def test_trace_for_user_hides_other_users_sessions():
    session = CompletedSessionFactory()
    assert (
        session_trace_for_user(user=session.owner, session_id=session.session_id)["session"]["query"]
        == session.query
    )
    with pytest.raises(DiagnosisSession.DoesNotExist):
        session_trace_for_user(user=UserFactory(), session_id=session.session_id)


def test_each_call_in_the_trace_carries_its_receipt_as_stored(settings):
    pin_demo_now(settings)
    session = DiagnosisSessionFactory()
    recorded = record(session, "query_alerts", service="order-service")
    ToolInvocationFactory(session=session, receipt={})

    first, older = session_trace(session=session)["tool_invocations"]

    receipt = Receipt.model_validate(first["receipt"])
    assert first["receipt"] == recorded.receipt
    assert (receipt.source, receipt.requests) == ("demo", [])
    assert receipt.output_sha256 == output_digest(first["output"])
    # A call recorded before receipts were kept says so with an empty one.
    assert older["receipt"] == {}
