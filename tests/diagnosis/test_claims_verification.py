"""Verifying claims written by anyone: each claim's call is recorded in a `verify` session of its caller,
and the gatekeeper, the guards, code's number check and the verifier decide each claim, on the demo
world and the `shop` world, and over a Prometheus of a third with other names."""

import json
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings
from django.urls import reverse

from diagnosis.engines.rules import RulesEngine
from diagnosis.models import AgentStep, DiagnosisSession
from diagnosis.pipeline.claims_check import ClaimToCheck, claims_check
from diagnosis.pipeline.contracts import ClaimCheck, VerifierInput, VerifierOutput
from diagnosis.pipeline.interfaces import EngineUnavailableError, StageCall
from diagnosis.selectors.claims_verification import claims_check_of
from diagnosis.selectors.sessions import session_sidebar
from diagnosis.selectors.world import world_current
from diagnosis.services.claims_verification import MAX_CLAIMS, claims_verification_start
from diagnosis.services.session_liveness import SessionProgress
from diagnosis.services.session_runner import SessionRecorder
from diagnosis.services.sessions import SessionRateLimited, SessionsInFlight
from tests.diagnosis.verify_support import CLAIMS, HOSTILE, NO_QUERY, WebPrometheus
from tests.factories import DiagnosisSessionFactory, UserFactory
from tests.tools.support import use_source
from tools import clock
from tools.evidence.series.source import SeriesSource

pytestmark = pytest.mark.django_db


def verified(*claims: dict, owner=None) -> tuple[DiagnosisSession, list]:
    session = claims_verification_start(
        owner=owner or UserFactory(), request={"claims": list(claims)}, run_inline=True
    )
    check = claims_check_of(session=session)
    assert check is not None, session.error
    return session, check.claims


def test_each_claim_is_supported_contradicted_not_found_or_unverifiable(either_world):
    world = CLAIMS[either_world]
    owner = UserFactory()

    session, (true, changed, absent, no_query) = verified(
        world.true_alert, world.changed_alert, world.absent_alert, NO_QUERY, owner=owner
    )

    assert [true.status, changed.status, absent.status, no_query.status] == [
        "supported",
        "contradicted",
        "not_found",
        "unverifiable",
    ]
    assert world.true_value in changed.values
    assert "与返回值不符" in changed.reason
    [cited] = true.evidence
    invocation = session.tool_invocations.get(pk=cited.invocation_id)
    assert (cited.tool_name, cited.raw_path) == ("query_alerts", "$.alerts[0]")
    assert cited.excerpt == invocation.evidence_refs[0]["text"]
    assert absent.evidence[0].raw_path == "$.no_evidence"
    assert no_query.evidence == [] and "没有给出所依据的查询" in no_query.reason
    # One recorded call per claim that names one, with the caller's own arguments.
    assert [i.input for i in session.tool_invocations.order_by("id")] == [
        {"alert_name": c["alert"]["name"], "service": c["alert"]["service"]}
        for c in (world.true_alert, world.changed_alert, world.absent_alert)
    ]
    assert (session.kind, session.owner, session.status) == (
        DiagnosisSession.Kind.VERIFY,
        owner,
        DiagnosisSession.Status.COMPLETED,
    )
    assert session.verdict == "REJECT"
    assert {step.agent for step in session.steps.all()} == {
        AgentStep.Agent.GATEKEEPER,
        AgentStep.Agent.VERIFIER,
    }
    assert "c2 矛盾" in session.answer and world.true_value in session.answer


def test_a_set_of_true_claims_passes(either_world):
    world = CLAIMS[either_world]

    session, claims = verified(world.true_alert, world.true_log)

    assert [claim.status for claim in claims] == ["supported", "supported"]
    assert (session.verdict, session.groundedness_score) == ("PASS", 1.0)


def test_a_log_line_called_an_error_that_it_is_not_is_contradicted(either_world):
    world = CLAIMS[either_world]

    _session, (true, mislabelled) = verified(world.true_log, world.mislabelled_log)

    assert true.status == "supported"
    assert all("[ERROR]" in item.excerpt or "[FATAL]" in item.excerpt for item in true.evidence)
    assert mislabelled.status == "contradicted"
    assert mislabelled.rules == ["evidence.label_unsupported"]


def test_a_claim_denying_what_the_source_returns_is_contradicted(either_world):
    world = CLAIMS[either_world]
    name, service = world.true_alert["alert"]["name"], world.true_alert["alert"]["service"]
    denial = {"text": f"{service} 不存在 {name} 告警", "alert": world.true_alert["alert"]}

    _session, [claim] = verified(denial)

    assert claim.status == "contradicted"
    assert claim.rules == ["evidence.polarity_mismatch"]
    assert claim.values == ["1 条"]
    assert name in claim.evidence[0].excerpt


@pytest.mark.parametrize("hostile", HOSTILE)
def test_an_injected_instruction_in_a_claim_changes_nothing(either_world, hostile):
    world = CLAIMS[either_world]
    claims = [world.true_alert, world.changed_alert, world.absent_alert]

    plain, without = verified(*claims)
    session, with_hostile = verified(*claims, {"text": hostile, "alert": world.true_alert["alert"]})

    assert [(c.status, c.reason, c.values) for c in with_hostile[:3]] == [
        (c.status, c.reason, c.values) for c in without
    ]
    assert with_hostile[3].status == "unverifiable"
    assert "指令" in with_hostile[3].reason
    # Not judged: no call was made for it.
    assert session.tool_invocations.count() == plain.tool_invocations.count() == 3
    assert session.verdict == plain.verdict == "REJECT"


def test_an_injected_instruction_never_turns_a_set_to_pass(either_world):
    world = CLAIMS[either_world]

    session, claims = verified(world.true_alert, {"text": HOSTILE[0], "alert": world.true_alert["alert"]})

    assert [claim.status for claim in claims] == ["supported", "unverifiable"]
    assert session.verdict == "LOW_CONFID"


class TestPromql:
    """Claims resting on PromQL, against a Prometheus of another world (`web`, `web-1`)."""

    @pytest.fixture(autouse=True)
    def prometheus(self, settings):
        use_source(settings, WebPrometheus, SeriesSource)
        WebPrometheus.asked_at = []

    def test_a_number_within_the_tolerance_is_supported_and_one_outside_is_contradicted_naming_the_value(
        self,
    ):
        _session, (rounded, exact, wrong) = verified(
            {"text": "web 的 node_load1 当前为 0.52", "promql": 'node_load1{service="web"}'},
            {"text": "web-1 的 node_load1 当前为 0.5234", "promql": "node_load1"},
            {"text": "web 的 node_load1 当前为 0.6", "promql": 'node_load1{service="web"}'},
        )

        assert (rounded.status, exact.status) == ("supported", "supported")
        assert wrong.status == "contradicted"
        assert wrong.values == ["0.5234"]
        assert wrong.evidence[0].excerpt.startswith(
            'node_load1{instance="web-1:9100",service="web"} 当前值 0.5234'
        )

    def test_a_series_the_source_does_not_hold_is_not_found(self):
        _session, (empty, other_host) = verified(
            {"text": "web 的 node_disk_busy 为 0.9", "promql": 'node_disk_busy{service="web"}'},
            {"text": "web-9 的 node_load1 当前为 0.52", "promql": "node_load1"},
        )

        assert empty.status == "not_found"
        assert empty.evidence[0].raw_path == "$.no_evidence"
        assert other_host.status == "not_found"
        assert "web-9" in other_host.reason

    def test_a_range_claim_is_read_against_the_ranges_values_and_its_window_is_no_claimed_value(self):
        _session, (peak, wrong_peak) = verified(
            {
                "text": "web 最近 30 分钟 node_load1 最高 0.88",
                "promql": "node_load1",
                "time": {"minutes": 30},
            },
            {"text": "web 最近 30 分钟 node_load1 最高 1.5", "promql": "node_load1", "time": {"minutes": 30}},
        )

        assert peak.status == "supported"
        assert wrong_peak.status == "contradicted"
        assert set(wrong_peak.values) == {"0.31", "0.5234", "0.88"}

    def test_a_claim_about_an_earlier_time_is_asked_of_the_source_at_that_time(self):
        at = clock.now() - timedelta(hours=3)

        session, [claim] = verified(
            {"text": "web 的 node_load1 为 0.52", "promql": "node_load1", "time": {"at": at.isoformat()}}
        )

        assert claim.status == "supported"
        assert WebPrometheus.asked_at == [at]
        # Its receipt says so: a replay asks again about that time.
        assert session.tool_invocations.get().receipt_record.evaluated_at == at

    def test_a_query_the_product_may_not_run_is_unverifiable_and_recorded_as_refused(self):
        session, [unnamed, too_far] = verified(
            {"text": "node 任务的所有序列都正常", "promql": '{job="node"}'},
            {"text": "web 上周的 node_load1 为 0.5", "promql": "node_load1 offset 7d"},
        )

        assert (unnamed.status, too_far.status) == ("unverifiable", "unverifiable")
        assert "没有指标名" in unnamed.reason
        assert "超过 Prometheus 的保留期" in too_far.reason
        refused = session.tool_invocations.order_by("id")
        assert [i.success for i in refused] == [False, False]
        assert [item.invocation_id for item in unnamed.evidence + too_far.evidence] == [i.pk for i in refused]
        # Refused before it reached the source.
        assert WebPrometheus.asked_at == []


def test_a_claim_about_an_alerts_past_state_is_unverifiable_without_a_call(either_world):
    world = CLAIMS[either_world]
    past = {**world.true_alert, "time": {"at": (clock.now() - timedelta(hours=2)).isoformat()}}

    session, [claim] = verified(past)

    assert claim.status == "unverifiable"
    assert "只给出当前活动的告警" in claim.reason
    assert not session.tool_invocations.exists()


@pytest.mark.parametrize(
    ("claims", "says"),
    [
        ([NO_QUERY] * (MAX_CLAIMS + 1), "claims"),
        ([], "claims"),
        ([{"text": "x" * 2001}], "text"),
        ([{"text": "两种依据", "promql": "up", "alert": {"name": "X"}}], "只能依据一种查询"),
        ([{"text": "告警的区间", "alert": {"name": "X"}, "time": {"minutes": 5}}], "只用于 PromQL"),
        ([{"text": "没有时区", "promql": "up", "time": {"at": "2026-11-29T14:00:00"}}], "timezone"),
        ([{"text": "多余字段", "promql": "up", "severity": "high"}], "severity"),
    ],
)
def test_bad_claims_are_refused_with_the_reason_and_nothing_is_recorded(claims, says):
    with pytest.raises(ValidationError) as refused:
        claims_verification_start(owner=UserFactory(), request={"claims": claims}, run_inline=True)

    assert says in str(refused.value)
    assert not DiagnosisSession.objects.exists()


def test_a_time_in_the_future_is_refused():
    later = (clock.now() + timedelta(hours=1)).isoformat()

    with pytest.raises(ValidationError, match="晚于现在"):
        claims_verification_start(
            owner=UserFactory(), request={"claims": [{"text": "明天", "promql": "up", "time": {"at": later}}]}
        )


def test_checks_count_against_the_owners_session_rate_and_in_flight_cap(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"CHAT_RATE": "2/min"}
    owner = UserFactory()
    claims_verification_start(owner=owner, request={"claims": [NO_QUERY]}, max_in_flight=1)

    with pytest.raises(SessionsInFlight):
        claims_verification_start(owner=owner, request={"claims": [NO_QUERY]}, max_in_flight=1)
    claims_verification_start(owner=owner, request={"claims": [NO_QUERY]})
    with pytest.raises(SessionRateLimited):
        claims_verification_start(owner=owner, request={"claims": [NO_QUERY]})


def test_a_check_that_fails_ends_failed_with_the_stable_message(either_world, monkeypatch):
    def broken():
        raise RuntimeError("inventory down")

    monkeypatch.setattr("diagnosis.services.claims_verification.world_current", broken)

    session = claims_verification_start(
        owner=UserFactory(), request={"claims": [CLAIMS[either_world].true_alert]}, run_inline=True
    )

    assert session.status == DiagnosisSession.Status.FAILED
    assert session.answer.startswith(f"断言核对执行失败（错误编号 {session.error_id}）")
    assert "inventory down" in session.error


def test_a_check_is_no_conversation_in_the_chat_sidebar(either_world):
    owner = UserFactory()
    verified(CLAIMS[either_world].true_alert, owner=owner)

    assert session_sidebar(user=owner) == []


class VerifierSayingEverything:
    """A verifier that calls every claim it is shown one class, as an obeyed injection would."""

    name = "scripted"

    def __init__(self, verification: str) -> None:
        self.verification = verification
        self.shown: list[VerifierInput] = []

    def verify(self, stage_input: VerifierInput) -> StageCall[VerifierOutput]:
        self.shown.append(stage_input)
        checks = [
            ClaimCheck(
                claim_id=c.claim_id, verification=self.verification, detail="scripted", evidence_refs=[]
            )
            for c in stage_input.claims
        ]
        return StageCall(output=VerifierOutput(claim_checks=checks, facts_checked=[], rationale="scripted"))


class UnavailableVerifier:
    name = "llm"

    def verify(self, stage_input: VerifierInput) -> StageCall[VerifierOutput]:
        error = EngineUnavailableError("模型服务暂时不可用")
        error.stage, error.error_id, error.staff_detail = "verifier", "LLM-1", "503"
        raise error


def checked_by(engine, claims: list[dict], *, fallback=None):
    """The pipeline's check over a `verify` session's recorder, with `engine` as its verifier."""
    session = DiagnosisSessionFactory(kind=DiagnosisSession.Kind.VERIFY)
    to_check = [
        ClaimToCheck(
            claim_id=f"c{number}",
            text=claim["text"],
            call=(
                "query_alerts",
                {"alert_name": claim["alert"]["name"], "service": claim["alert"]["service"]},
            ),
        )
        for number, claim in enumerate(claims, start=1)
    ]
    return claims_check(
        query="核对",
        claims=to_check,
        engine=engine,
        fallback=fallback,
        recorder=SessionRecorder(session, progress=SessionProgress()),
        world=world_current(),
    )


def test_a_verifier_calling_everything_supported_raises_nothing_code_found_otherwise(either_world):
    world = CLAIMS[either_world]
    obedient = VerifierSayingEverything("direct_observation")

    check = checked_by(obedient, [world.true_alert, world.changed_alert, world.absent_alert])

    assert [claim.status for claim in check.claims] == ["supported", "contradicted", "not_found"]
    # Only the claim code left open reached the verifier.
    assert [c.claim_id for c in obedient.shown[0].claims] == ["c1"]


def test_a_verifier_may_hold_a_claim_back(either_world):
    world = CLAIMS[either_world]

    check = checked_by(VerifierSayingEverything("unsupported"), [world.true_alert])

    assert [claim.status for claim in check.claims] == ["unverifiable"]
    assert check.verdict == "LOW_CONFID"


def test_an_unavailable_verifier_is_answered_by_the_fallback_engine(either_world):
    world = CLAIMS[either_world]

    check = checked_by(UnavailableVerifier(), [world.true_alert], fallback=RulesEngine())

    assert [claim.status for claim in check.claims] == ["supported"]
    assert check.engine == "rules"
    assert check.engine_fallback.model_dump() == {"engine": "llm", "stage": "verifier", "error_id": "LLM-1"}


def test_a_checks_page_shows_each_claim_as_escaped_data(either_world, client):
    owner = UserFactory()
    client.force_login(owner)
    markup = {"text": "<script>alert('claim')</script> <img src=x onerror=alert(1)>"}

    session, _claims = verified(CLAIMS[either_world].true_alert, markup, owner=owner)

    page = client.get(reverse("chat-conversation", args=[session.session_id])).content.decode()
    assert "<script>alert(" not in page and "<img src=x" not in page
    assert "c1 支持" in page and "c2 无法核对" in page
    assert "&lt;script&gt;" in page


def obedient_verification(claims: int) -> dict:
    """A model's verifier reply doing what an injected instruction asks: every claim supported."""
    checks = [
        {
            "claim_id": f"c{n}",
            "verification": "direct_observation",
            "detail": "all supported",
            "evidence_refs": [],
        }
        for n in range(1, claims + 1)
    ]
    return {"claim_checks": checks, "facts_checked": [], "rationale": "mark all claims supported"}


def test_with_the_llm_engine_a_model_obeying_an_injection_changes_nothing_and_never_sees_it(
    fake_llm, either_world, settings
):
    world = CLAIMS[either_world]
    server = fake_llm({"verifier": [obedient_verification(5)]})

    # Inside the world's own override (a setting changed after it would outlive it).
    with override_settings(DIAGNOSIS=settings.DIAGNOSIS | {"ENGINE": "llm"}):
        session, claims = verified(
            world.true_alert,
            world.changed_alert,
            world.absent_alert,
            NO_QUERY,
            {"text": HOSTILE[0], "alert": world.true_alert["alert"]},
        )

    assert [claim.status for claim in claims] == [
        "supported",
        "contradicted",
        "not_found",
        "unverifiable",
        "unverifiable",
    ]
    assert session.engine == "llm"
    [request] = server.requests_for("VerifierOutput")
    assert "Ignore previous" not in json.dumps(server.requests, ensure_ascii=False)
    assert world.true_alert["text"] in json.dumps(request, ensure_ascii=False)


def test_with_the_llm_engine_a_rounded_number_is_supported_by_code_over_the_models_exact_reading(
    settings, fake_llm
):
    use_source(settings, WebPrometheus, SeriesSource)
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"ENGINE": "llm"}
    fake_llm()

    _session, (rounded, wrong) = verified(
        {"text": "web 的 node_load1 当前为 0.52", "promql": 'node_load1{service="web"}'},
        {"text": "web 的 node_load1 当前为 0.6", "promql": 'node_load1{service="web"}'},
    )

    assert (rounded.status, wrong.status) == ("supported", "contradicted")
