"""Starting sessions: validation, a taken session id, the one rate limit every entry point shares, and
the cap on an owner's sessions in flight an entry point may ask for."""

from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.utils import timezone

from aiops.services import aiops_start
from diagnosis.models import DiagnosisSession
from diagnosis.services.sessions import (
    MAX_ANALYSED_ALERTS,
    SESSION_ID_TAKEN,
    SessionRateLimited,
    SessionsInFlight,
    session_rate_check,
    session_start,
)
from tests.concurrency import run_concurrently
from tests.factories import DiagnosisSessionFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def rate(settings):
    def set_rate(value: str) -> None:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {"CHAT_RATE": value}

    return set_rate


def created_ago(session: DiagnosisSession, seconds: int) -> None:
    DiagnosisSession.objects.filter(pk=session.pk).update(
        created_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_the_owner_may_start_as_many_sessions_as_the_rate_allows_and_no_more(rate):
    rate("2/min")
    owner = UserFactory()
    session_start(query="order-service 内存", owner=owner)
    session_start(query="order-service 内存", owner=owner)

    with pytest.raises(SessionRateLimited) as refused:
        session_start(query="order-service 内存", owner=owner)

    assert DiagnosisSession.objects.filter(owner=owner).count() == 2
    assert 1 <= refused.value.retry_after <= 60
    assert refused.value.message == (
        f"发起诊断过于频繁（每分钟最多 2 次），请 {refused.value.retry_after} 秒后再试。"
    )


def test_retry_after_is_when_the_oldest_session_leaves_the_period(rate):
    rate("2/min")
    owner = UserFactory()
    created_ago(DiagnosisSessionFactory(owner=owner), 45)
    DiagnosisSessionFactory(owner=owner)

    with pytest.raises(SessionRateLimited) as refused:
        session_rate_check(owner=owner)

    assert refused.value.retry_after == 15


def test_only_the_owners_recent_top_level_sessions_count(rate):
    rate("2/min")
    owner = UserFactory()
    created_ago(DiagnosisSessionFactory(owner=owner), 61)
    DiagnosisSessionFactory(owner=UserFactory())
    analysis = DiagnosisSessionFactory(owner=UserFactory(), kind=DiagnosisSession.Kind.AIOPS)
    DiagnosisSessionFactory.create_batch(3, owner=owner, parent=analysis, kind=DiagnosisSession.Kind.AIOPS)
    DiagnosisSessionFactory(owner=owner)

    session_rate_check(owner=owner)

    with pytest.raises(SessionRateLimited):
        session_rate_check(owner=owner, cost=2)


def test_sessions_without_an_owner_are_not_limited(rate):
    rate("1/min")
    session_start(query="order-service 内存", engine="rules")
    session_start(query="order-service 内存", engine="rules")
    aiops_start()
    assert DiagnosisSession.objects.count() == 3


def test_an_ai_ops_analysis_counts_as_the_alert_sessions_it_may_start(rate):
    rate(f"{MAX_ANALYSED_ALERTS + 1}/hour")
    owner = UserFactory()
    aiops_start(owner=owner)
    session_start(query="order-service 内存", owner=owner)

    with pytest.raises(SessionRateLimited) as refused:
        aiops_start(owner=owner)
    with pytest.raises(SessionRateLimited):
        session_start(query="order-service 内存", owner=owner)

    assert DiagnosisSession.objects.filter(owner=owner).count() == 2
    assert "每小时最多" in refused.value.message


def test_an_ai_ops_analysis_takes_all_of_a_rate_below_its_alert_cap(rate):
    rate("3/min")
    owner = UserFactory()
    aiops_start(owner=owner)
    with pytest.raises(SessionRateLimited):
        session_start(query="order-service 内存", owner=owner)


@pytest.mark.parametrize(("value", "period"), [("1/min", "分钟"), ("1/hour", "小时"), ("1/day", "天")])
def test_every_period_of_a_drf_rate_is_named_in_the_refusal(rate, value, period):
    rate(value)
    owner = UserFactory()
    DiagnosisSessionFactory(owner=owner)

    with pytest.raises(SessionRateLimited) as refused:
        session_rate_check(owner=owner)

    assert f"每{period}最多 1 次" in refused.value.message


@pytest.mark.parametrize("value", ["", "30", "ten/min", "0/min", "30/fortnight"])
def test_a_malformed_rate_is_a_configuration_error(rate, value):
    rate(value)
    with pytest.raises(ImproperlyConfigured, match="CHAT_RATE"):
        session_rate_check(owner=UserFactory())


def test_a_taken_session_id_is_a_validation_error_on_the_field():
    session_start(query="order-service 内存", session_id="incident-42")
    with pytest.raises(ValidationError) as refused:
        session_start(query="order-service 内存", session_id="incident-42")
    assert refused.value.message_dict == {"session_id": [SESSION_ID_TAKEN]}
    assert DiagnosisSession.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_start_capped_in_flight_is_refused_while_that_many_of_the_owners_sessions_are_unfinished():
    owner = UserFactory()
    session_start(query="order-service 内存", owner=owner, max_in_flight=2)
    DiagnosisSessionFactory(owner=owner, status=DiagnosisSession.Status.RUNNING)

    with pytest.raises(SessionsInFlight) as refused:
        session_start(query="order-service 内存", owner=owner, max_in_flight=2)

    assert refused.value.message == "你已有 2 个会话在排队或执行中（同时最多 2 个），请等其中一个结束后再试。"
    assert DiagnosisSession.objects.filter(owner=owner).count() == 2
    # Without a cap (the chat page, the API) the same start is taken.
    session_start(query="order-service 内存", owner=owner)


def test_only_the_owners_unfinished_top_level_sessions_count_in_flight():
    owner = UserFactory()
    DiagnosisSessionFactory(owner=owner, status=DiagnosisSession.Status.COMPLETED)
    DiagnosisSessionFactory(owner=owner, status=DiagnosisSession.Status.FAILED)
    DiagnosisSessionFactory(owner=UserFactory(), status=DiagnosisSession.Status.RUNNING)
    analysis = DiagnosisSessionFactory(owner=owner, kind=DiagnosisSession.Kind.AIOPS)
    DiagnosisSessionFactory.create_batch(3, owner=owner, parent=analysis, kind=DiagnosisSession.Kind.AIOPS)

    session_start(query="order-service 内存", owner=owner, max_in_flight=2)

    with pytest.raises(SessionsInFlight):
        session_start(query="order-service 内存", owner=owner, max_in_flight=2)


def test_a_session_older_than_any_the_reaper_leaves_unfinished_is_not_in_flight(settings):
    owner = UserFactory()
    reaped_by_now = 2 * settings.DIAGNOSIS["STALE_AFTER_SECONDS"] + 1
    created_ago(DiagnosisSessionFactory(owner=owner, status=DiagnosisSession.Status.RUNNING), reaped_by_now)

    session_start(query="order-service 内存", owner=owner, max_in_flight=1)

    assert DiagnosisSession.objects.filter(owner=owner).count() == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_capped_starts_by_one_owner_never_exceed_the_cap(postgres_only):
    owner = UserFactory()

    outcomes = run_concurrently(
        lambda: session_start(query="order-service 内存", owner=owner, max_in_flight=3), threads=10
    )

    assert sum(isinstance(o, DiagnosisSession) for o in outcomes) == 3
    assert sum(isinstance(o, SessionsInFlight) for o in outcomes) == 7
    assert DiagnosisSession.objects.filter(owner=owner).count() == 3


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_starts_with_one_session_id_create_one_session(postgres_only):
    outcomes = run_concurrently(
        lambda: session_start(query="order-service 内存", session_id="incident-42"), threads=4
    )

    started = [o for o in outcomes if isinstance(o, DiagnosisSession)]
    refused = [o.message_dict for o in outcomes if isinstance(o, ValidationError)]
    assert len(started) == 1
    assert refused == [{"session_id": [SESSION_ID_TAKEN]}] * 3
    assert DiagnosisSession.objects.filter(session_id="incident-42").count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_by_one_owner_never_exceed_the_rate(postgres_only, rate):
    rate("5/min")
    owner = UserFactory()

    outcomes = run_concurrently(lambda: session_start(query="order-service 内存", owner=owner), threads=12)

    assert sum(isinstance(o, DiagnosisSession) for o in outcomes) == 5
    assert sum(isinstance(o, SessionRateLimited) for o in outcomes) == 7
    assert DiagnosisSession.objects.filter(owner=owner).count() == 5


@pytest.mark.django_db(transaction=True)
def test_concurrent_ai_ops_starts_and_chats_share_one_atomic_budget(postgres_only, rate):
    rate(f"{MAX_ANALYSED_ALERTS + 2}/hour")
    owner = UserFactory()
    starts = [
        lambda: aiops_start(owner=owner),
        lambda: aiops_start(owner=owner),
        *[lambda: session_start(query="order-service 内存", owner=owner)] * 4,
    ]
    pending = iter(starts)

    outcomes = run_concurrently(lambda: next(pending)(), threads=len(starts))

    kinds = list(DiagnosisSession.objects.filter(owner=owner).values_list("kind", flat=True))
    weight = sum(MAX_ANALYSED_ALERTS if kind == DiagnosisSession.Kind.AIOPS else 1 for kind in kinds)
    assert weight <= MAX_ANALYSED_ALERTS + 2
    assert len(kinds) == sum(isinstance(o, DiagnosisSession) for o in outcomes)
