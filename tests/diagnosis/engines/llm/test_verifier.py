"""The llm engine's verifier, per claim, through the real openai SDK against the fake server: the model
sees each claim with only its verified excerpts and code's checks, a reply that copies its
instructions is re-asked once, and what stays unjudged falls back to unsupported, claim by claim."""

import dataclasses
import json
from typing import get_args

from diagnosis.engines.llm import LLMEngine
from diagnosis.pipeline.contracts import ClaimUnderCheck, ClaimVerification, VerifiedExcerpt, VerifierInput

ALERT_TEXT = "QueueBacklog firing service=search-api: 积压 1200 条，持续 10m"
NO_HIT_TEXT = "未检索到匹配证据：query_logs(service=search-api, query=error)"
FIRING = ClaimUnderCheck(
    claim_id="claim-1",
    claim_type="observation",
    claim="search-api 的 QueueBacklog 告警 firing，积压 1200 条",
    excerpts=[VerifiedExcerpt(source="query_alerts #3 $.alerts[0]", text=ALERT_TEXT)],
    facts_in_excerpts=["search-api", "QueueBacklog", "1200"],
    facts_not_in_excerpts=[],
    polarity="consistent",
)
NO_ERRORS = ClaimUnderCheck(
    claim_id="claim-2",
    claim_type="negative_observation",
    claim="未检索到 search-api 的错误日志",
    excerpts=[VerifiedExcerpt(source="query_logs #4 $.no_evidence", text=NO_HIT_TEXT)],
    facts_in_excerpts=["search-api"],
    facts_not_in_excerpts=[],
    polarity="consistent",
)
UNCITED = ClaimUnderCheck(
    claim_id="claim-3",
    claim_type="observation",
    claim="search-api 的磁盘快满了",
    excerpts=[],
    facts_in_excerpts=[],
    facts_not_in_excerpts=["search-api"],
    polarity="consistent",
)
# The definition of `unsupported` in the verifier prompt, as a 1.5B model wrote it back as its reason.
COPIED_RULE = "摘录不足以支持，或 facts_not_in_excerpts 不为空"


def verifier_input(*claims: ClaimUnderCheck) -> VerifierInput:
    """The trace-wide fields are filled as the pipeline fills them; the model must see none of them."""
    return VerifierInput(
        original_query="search-api 是否存在 QueueBacklog 告警",
        executor_structured_output={"claims": [{"claim_id": claim.claim_id} for claim in claims]},
        gatekeeper_result={"status": "pass", "severity": "none", "checked_bindings": []},
        tool_trace_summary=[{"trace_ref": "trace-1", "output_summary": "trace text"}],
        executor_output_parse_status={"status": "valid", "detail": ""},
        claims=list(claims),
    )


def judgement(*checks: tuple[str, str, str]) -> dict:
    return {
        "claim_checks": [
            {"claim_id": claim_id, "verification": verification, "detail": detail}
            for claim_id, verification, detail in checks
        ]
    }


def seen_input(request: dict) -> dict:
    prompt = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return json.loads(prompt[prompt.index("<input>") + len("<input>") : prompt.rindex("</input>")])


def test_the_model_sees_each_claim_with_only_its_excerpts_and_codes_checks(fake_llm):
    server = fake_llm()

    call = LLMEngine().verify(verifier_input(FIRING, NO_ERRORS))

    [request] = server.requests
    assert seen_input(request) == {"claims": [dataclasses.asdict(FIRING), dataclasses.asdict(NO_ERRORS)]}
    everything_sent = json.dumps(request["messages"], ensure_ascii=False)
    for trace_field in ("gatekeeper_result", "tool_trace_summary", "trace text", "original_query"):
        assert trace_field not in everything_sent
    assert [(c.claim_id, c.verification) for c in call.output.claim_checks] == [
        ("claim-1", "direct_observation"),
        ("claim-2", "direct_observation"),
    ]
    # The refs are the claim's verified excerpts, named by code, not by the model.
    assert call.output.claim_checks[0].evidence_refs == ["query_alerts #3 $.alerts[0]"]


def test_the_instructions_name_every_verdict_with_one_example_each(fake_llm):
    server = fake_llm()

    LLMEngine().verify(verifier_input(FIRING))

    rules = server.requests[0]["messages"][0]["content"]
    for verdict in get_args(ClaimVerification):
        [line] = [line for line in rules.splitlines() if line.startswith(f"- `{verdict}`")]
        assert line.count("例：") == 1
    for check in ("facts_in_excerpts", "facts_not_in_excerpts", "polarity"):
        assert check in rules


def test_a_claim_without_a_verified_excerpt_is_unsupported_by_code_and_not_sent(fake_llm):
    server = fake_llm()

    call = LLMEngine().verify(verifier_input(FIRING, UNCITED))

    assert [claim["claim_id"] for claim in seen_input(server.requests[0])["claims"]] == ["claim-1"]
    assert [(c.claim_id, c.verification) for c in call.output.claim_checks] == [
        ("claim-1", "direct_observation"),
        ("claim-3", "unsupported"),
    ]


def test_with_nothing_to_judge_the_model_is_not_called(fake_llm):
    server = fake_llm()

    call = LLMEngine().verify(verifier_input(UNCITED))

    assert server.requests == []
    assert [c.verification for c in call.output.claim_checks] == ["unsupported"]
    assert call.usage.llm_calls == 0 and call.prompt_version.startswith("verifier-v3")


def test_a_reply_that_restates_the_instructions_is_re_asked_once_naming_the_copy(fake_llm):
    server = fake_llm(
        {
            "verifier": [
                judgement(("claim-1", "unsupported", COPIED_RULE)),
                judgement(("claim-1", "direct_observation", "告警原文写明 search-api 积压 1200 条")),
            ]
        }
    )

    call = LLMEngine().verify(verifier_input(FIRING))

    assert len(server.requests) == 2
    re_ask = server.requests[1]["messages"][-1]["content"]
    assert "claim-1" in re_ask and "照抄" in re_ask
    assert call.parse_status.status == "repaired"
    assert call.output.claim_checks[0].verification == "direct_observation"


def test_restating_twice_falls_back_for_that_claim_only(fake_llm):
    restating = judgement(
        ("claim-1", "direct_observation", "告警原文写明 search-api 积压 1200 条"),
        ("claim-2", "unsupported", COPIED_RULE),
    )
    fake_llm({"verifier": [restating, restating]})

    call = LLMEngine().verify(verifier_input(FIRING, NO_ERRORS))

    assert call.parse_status.status == "parse_failed"
    assert [(c.claim_id, c.verification) for c in call.output.claim_checks] == [
        ("claim-1", "direct_observation"),
        ("claim-2", "unsupported"),
    ]
    assert call.output.claim_checks[1].detail != COPIED_RULE


# The `direct_observation` example of the verifier prompt, as the 1.5B model wrote it back.
COPIED_EXAMPLE = "摘录直接写明了断言的内容。例：断言“search-api 的 QueueBacklog 告警 firing，当前 1200”"


def test_a_copied_reason_stands_when_the_verdict_agrees_with_code_and_code_gives_the_reason(fake_llm):
    server = fake_llm({"verifier": [judgement(("claim-1", "direct_observation", COPIED_EXAMPLE))]})

    call = LLMEngine().verify(verifier_input(FIRING))

    assert len(server.requests) == 1
    check = call.output.claim_checks[0]
    assert check.verification == "direct_observation"
    assert COPIED_EXAMPLE not in check.detail and "1200" in check.detail


def test_a_copied_reason_for_a_verdict_code_does_not_share_is_re_asked(fake_llm):
    unfounded = dataclasses.replace(FIRING, facts_in_excerpts=["search-api"], facts_not_in_excerpts=["9000"])
    server = fake_llm({"verifier": [judgement(("claim-1", "direct_observation", COPIED_EXAMPLE))] * 2})

    call = LLMEngine().verify(verifier_input(unfounded))

    assert len(server.requests) == 2
    assert call.output.claim_checks[0].verification == "unsupported"


def test_quoting_the_claim_or_its_excerpt_is_not_restating(fake_llm):
    # The excerpt's own words may appear in the prompt's examples too (here `QueueBacklog firing
    # service=search-api`): quoting the input is what a reason should do.
    server = fake_llm({"verifier": [judgement(("claim-1", "direct_observation", f"摘录“{ALERT_TEXT}”"))]})

    call = LLMEngine().verify(verifier_input(FIRING))

    assert len(server.requests) == 1 and call.parse_status.status == "valid"


def test_a_claim_left_out_of_the_reply_is_asked_for_again(fake_llm):
    server = fake_llm(
        {
            "verifier": [
                judgement(("claim-1", "direct_observation", "告警原文写明积压 1200 条")),
                judgement(("claim-2", "direct_observation", "日志检索没有命中，断言只说未检索到")),
            ]
        }
    )

    call = LLMEngine().verify(verifier_input(FIRING, NO_ERRORS))

    assert "claim-2" in server.requests[1]["messages"][-1]["content"]
    assert [c.verification for c in call.output.claim_checks] == ["direct_observation"] * 2
    assert call.parse_status.status == "repaired"
