"""A root cause a model states is kept only when it is about a candidate code ranked and cites evidence;
on a world with plain names (checkout, payments, billing-db)."""

from __future__ import annotations

from diagnosis.pipeline.ask import Ask, AskWindow
from diagnosis.pipeline.candidates import CANDIDATE_RULE, unranked_candidates_blocked
from diagnosis.pipeline.contracts import Claim, EvidenceBinding, ExecutorOutput, RankedCandidate
from diagnosis.pipeline.focus import Inventory
from diagnosis.pipeline.scope import RecordSubject
from diagnosis.pipeline.slot import Slot
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

VOCABULARY = vocabulary_load(DEFAULT_VOCABULARY_FILE)
INVENTORY = Inventory.build(services=["checkout", "payments", "billing-db"], alerts=[], vocabulary=VOCABULARY)
WINDOW = AskWindow(minutes=15, label="最近 15 分钟")
SERIES = EvidenceBinding(
    tool_name="query_promql",
    source_invocation_id=3,
    raw_path="$.series[0]",
    evidence_excerpt='rate(http_requests_total{service="payments"}[5m]) 12 → 48',
)
LINE = EvidenceBinding(
    tool_name="query_logs",
    source_invocation_id=4,
    raw_path="$.logs[0]",
    evidence_excerpt="[ERROR][billing-db] too many connections",
)
SUBJECTS = {(3, "$.series[0]"): RecordSubject(services=frozenset({"payments"}))}
RANKED = RankedCandidate(
    subject="payments",
    mechanism="请求速率升高",
    onset="10:05",
    before="12/s",
    after="48/s",
    bindings=[SERIES],
)


def cause_slot(*candidates: RankedCandidate, kind: str = "cause") -> Slot:
    return Slot(
        ask=Ask(kind=kind, subject="checkout", subject_kind="service", service="checkout", window=WINDOW),
        filled=True,
        conclusion="根因候选：…",
        inference=bool(candidates),
        candidates=list(candidates),
    )


def output(*claims: Claim, hypotheses: tuple[str, ...] = ()) -> ExecutorOutput:
    return ExecutorOutput(
        claims=list(claims),
        hypotheses=list(hypotheses),
        missing_info=[],
        recommended_actions=[],
        diagnosis_summary="",
        user_facing_answer="",
    )


def claim(claim_id: str, text: str, bindings: list[EvidenceBinding], *, claim_type="root_cause") -> Claim:
    return Claim(claim_id=claim_id, claim_type=claim_type, claim_text=text, evidence_bindings=bindings)


def blocked(result) -> dict[str, str]:
    by_claim = {w.claim_id: w.message for w in result.warnings if w.claim_id}
    return {c.claim_id: by_claim[c.claim_id] for c in result.blocked_claims}


def test_a_root_cause_about_a_ranked_candidate_citing_evidence_is_kept():
    explained = claim("c1", "payments 的请求速率升高，拖慢了 checkout", [SERIES])
    # Named by the record it cites, not by its words.
    unnamed = claim("c2", "请求速率 12 → 48 是根因", [SERIES])

    result = unranked_candidates_blocked(
        output(explained, unnamed), slots=[cause_slot(RANKED)], inventory=INVENTORY, subjects=SUBJECTS
    )

    assert result.blocked_claims == [] and result.warnings == []
    assert result.kept_output.claims == [explained, unnamed]


def test_a_root_cause_outside_the_candidates_is_dropped_even_with_evidence():
    added = claim("c1", "billing-db 连接数耗尽是根因", [LINE])
    both = claim("c2", "payments 与 billing-db 共同导致", [SERIES, LINE])
    # The symptom asked about is no candidate of its own.
    symptom = claim("c3", "checkout 内存泄漏是根因", [SERIES.model_copy(update={"source_invocation_id": 9})])

    result = unranked_candidates_blocked(
        output(added, both, symptom), slots=[cause_slot(RANKED)], inventory=INVENTORY, subjects=SUBJECTS
    )

    assert blocked(result) == {
        "c1": "根因断言不在代码排出的根因候选中（billing-db），已拦截",
        "c2": "根因断言不在代码排出的根因候选中（billing-db），已拦截",
        "c3": "根因断言不在代码排出的根因候选中（checkout），已拦截",
    }
    assert {w.rule for w in result.warnings} == {CANDIDATE_RULE}
    assert result.kept_output.claims == []


def test_a_root_cause_without_a_citation_is_dropped_even_about_a_candidate():
    uncited = claim("c1", "payments 的根因是线程池耗尽", [])
    # An observation whose own words say 根因 is a root cause too; one quoting 根因 from its line is not.
    worded = claim("c2", "根因：payments 线程池耗尽", [], claim_type="observation")
    quoted_line = EvidenceBinding(
        tool_name="query_logs",
        source_invocation_id=5,
        raw_path="$.logs[1]",
        evidence_excerpt="root cause: retry storm",
    )
    quoting = claim(
        "c3", "payments 日志记录：root cause: retry storm", [quoted_line], claim_type="observation"
    )

    result = unranked_candidates_blocked(
        output(uncited, worded, quoting), slots=[cause_slot(RANKED)], inventory=INVENTORY, subjects=SUBJECTS
    )

    assert sorted(blocked(result)) == ["c1", "c2"]
    assert all("没有引用证据" in message for message in blocked(result).values())
    assert result.kept_output.claims == [quoting]


def test_with_no_candidate_ranked_every_root_cause_is_dropped():
    result = unranked_candidates_blocked(
        output(claim("c1", "payments 请求速率升高是根因", [SERIES])),
        slots=[cause_slot()],
        inventory=INVENTORY,
        subjects=SUBJECTS,
    )

    assert blocked(result) == {"c1": "调查没有排出根因候选，模型提出的根因已拦截"}


def test_a_hypothesis_naming_a_service_outside_the_candidates_is_removed():
    result = unranked_candidates_blocked(
        output(hypotheses=("payments 的重试风暴", "billing-db 的锁等待")),
        slots=[cause_slot(RANKED)],
        inventory=INVENTORY,
        subjects=SUBJECTS,
    )

    assert result.kept_output.hypotheses == ["payments 的重试风暴"]
    assert [w.message for w in result.warnings] == ["假设涉及的服务不在根因候选中（billing-db），已移除"]


def test_a_what_changed_round_holds_its_changes_as_the_candidates():
    result = unranked_candidates_blocked(
        output(claim("c1", "billing-db 的变化是根因", [LINE])),
        slots=[cause_slot(RANKED, kind="change")],
        inventory=INVENTORY,
        subjects=SUBJECTS,
    )

    assert sorted(blocked(result)) == ["c1"]


def test_a_round_without_an_investigation_is_left_alone():
    uncited = claim("c1", "billing-db 连接数耗尽是根因", [])
    value_slot = cause_slot(kind="value")

    result = unranked_candidates_blocked(
        output(uncited), slots=[value_slot], inventory=INVENTORY, subjects=SUBJECTS
    )

    assert result.blocked_claims == [] and result.kept_output.claims == [uncited]
