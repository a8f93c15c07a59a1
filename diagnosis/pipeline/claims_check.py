"""Claims written by anyone, checked against the team's sources: verification as a service (§25).

Each claim says what it rests on (a PromQL query, a log search or an alert) and when. Code makes that
call through the session's recording toolbox, so every call is a recorded invocation the claim then
cites; the round's own checks judge it:

    calls (code, recorded) → each claim cites the records it is about (or the no-hit) → gatekeeper
    with the binding guards (citation, polarity, label) → numbers compared by code → verifier (the
    engine) on the claims code left open → one status per claim → the set's verdict (the verdict matrix)

A claim is `supported`; `contradicted` (with the returned values that contradict it); `not_found` (the
call returned nothing, or nothing it returned is the series, alert or line the claim names); or
`unverifiable` (it names no call, the call was refused or failed, it asks an alert's past state, or
its text is an instruction or a command). The verifier only judges what code left open, and code's
caps hold whatever it says: it may hold a claim back, never raise it. A claim's text is data: one that
holds an instruction is not judged, reaches no model and makes no call.

Numbers: a number the claim states agrees with a returned value when they differ by at most half a
unit of the last digit written (`0.52` covers 0.515–0.525) or 1% of the returned value, whichever is
larger, read as written and in the unit it names (`91%` also as 0.91; `4200ms` also as 4.2 s; `16 GB`
also as 16·10⁹ and 16·2³⁰ bytes). The values are a series' samples its ref names (an instant, or a
range's latest, lowest and highest); an alert's or a line's numbers, and how many were found. A number
the claim repeats from its own query or time window is not a claimed value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Literal

from pydantic import BaseModel, ConfigDict

from diagnosis.pipeline.claim_labels import claimed_topics
from diagnosis.pipeline.claims_under_check import SUPPORTING, claims_under_check
from diagnosis.pipeline.contracts import Claim, EvidenceBinding, ExecutorOutput, Verdict, VerifierInput
from diagnosis.pipeline.facts import (
    NUMBER,
    PERCENTILE,
    RATIO,
    UNIT_ALIASES,
    FactNames,
    FactToken,
    fact_tokens,
    normalize,
    unsupported_facts,
)
from diagnosis.pipeline.focus import QuestionFocus, World
from diagnosis.pipeline.gatekeeper import (
    CLAIM_DENIES,
    LABEL_UNSUPPORTED,
    POLARITY_MISMATCH,
    GatekeeperResult,
)
from diagnosis.pipeline.guards import RoundContext
from diagnosis.pipeline.injected_commands import instructions_in
from diagnosis.pipeline.interfaces import (
    Engine,
    EngineUnavailableError,
    ParseStatus,
    Recorder,
    Stage,
    StepRecord,
    StepStatus,
)
from diagnosis.pipeline.records import EngineFallback
from diagnosis.pipeline.round import gatekeeper_run, stage_run
from diagnosis.pipeline.verdict import (
    FACT_CLASS,
    CheckedClaim,
    Verification,
    evidence_cap,
    verdict_compute,
    verification_finalize,
)
from tools.evidence.logs.record import LogLine
from tools.evidence.record import EvidenceRecord
from tools.evidence.registry import ALERTS, LOGS
from tools.evidence.result import NO_EVIDENCE_PATH, Ref, ToolResult
from tools.evidence.series.record import SeriesRecord
from tools.loglines import has_property
from tools.numbers import number_text
from tools.vocabulary import Vocabulary

ClaimStatus = Literal["supported", "contradicted", "not_found", "unverifiable"]
SUPPORTED: ClaimStatus = "supported"
CONTRADICTED: ClaimStatus = "contradicted"
NOT_FOUND: ClaimStatus = "not_found"
UNVERIFIABLE: ClaimStatus = "unverifiable"
# How each status weighs in the set's verdict (the verdict matrix's fact classes): every claim is critical.
STATUS_FACT_CLASS = {
    SUPPORTED: "direct_evidence",
    CONTRADICTED: "contradicted",
    NOT_FOUND: "no_evidence",
    UNVERIFIABLE: "no_evidence",
}
# All calls are one round: there is no retry, nothing a second round could look for.
ROUND = 1
RELATIVE_TOLERANCE = Decimal("0.01")
# A unit a claim writes, and what one of it is in the base unit a source reports (seconds, bytes, ratios).
UNIT_SCALES: dict[str, tuple[Decimal, ...]] = {
    "%": (Decimal("0.01"),),
    "ms": (Decimal("0.001"),),
    "min": (Decimal(60),),
    "h": (Decimal(3600),),
    "KB": (Decimal(10**3), Decimal(2**10)),
    "MB": (Decimal(10**6), Decimal(2**20)),
    "GB": (Decimal(10**9), Decimal(2**30)),
    "TB": (Decimal(10**12), Decimal(2**40)),
}
# The alerts a source answers with are the ones active now: a claim about an earlier state cannot be
# checked against them. Within this much of now, a claim's time is now.
ALERTS_PRESENT = timedelta(minutes=5)
# A claim cites at most this many records (the values are read from every record it is about).
MAX_CITED = 10
MAX_VALUES = 10
TOLERANCE_NOTE = "允许误差：所写最后一位的半个单位，或返回值的 1%，取较大者"
NO_CALL = "断言没有给出所依据的查询（PromQL、日志检索或告警名），无法核对"
INSTRUCTION = "断言文本包含命令或指令类内容（{found}）：作为数据处理，未核对，也未执行任何查询"
PAST_ALERTS = "告警数据源只给出当前活动的告警，无法核对 {at} 时的告警状态"
CALL_FAILED = "查询未能执行：{error}"
NOTHING_RETURNED = "查询没有返回任何结果：{no_hit}"
NOT_IN_RESULT = "返回的结果中没有断言所说的 {missing}"
NUMBER_DISAGREES = "断言中的 {claimed} 与返回值不符（{note}）"
DENIES_EVIDENCE = "断言与返回的结果相反：{detail}"
NO_OPEN_CLAIM = "没有需要校验器判断的断言：每条都已由代码核对"
SETTLED_BY_CODE = "断言的事实由代码核对：名称与查询结果一致，数值在允许误差内"


@dataclass(frozen=True)
class ClaimToCheck:
    claim_id: str
    text: str
    # The call it rests on, as (tool name, arguments); None when the claim names none.
    call: tuple[str, dict] | None = None
    # When the claim speaks of; None is now.
    at: datetime | None = None
    # Its range in minutes before `at` (PromQL), 0 for an instant.
    window_minutes: int = 0


class ClaimEvidence(BaseModel):
    """What a claim was judged on: a recorded invocation and, for a record, where in it and its text."""

    model_config = ConfigDict(extra="forbid")

    invocation_id: int | None
    tool_name: str
    raw_path: str | None
    excerpt: str
    source: str = ""


class ClaimOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim_id: str
    text: str
    status: ClaimStatus
    reason: str
    # Contradicted: the returned values that contradict it, as the source wrote them.
    values: list[str] = []
    evidence: list[ClaimEvidence] = []
    # The checks' rules it failed (`evidence.polarity_mismatch`, `evidence.label_unsupported`).
    rules: list[str] = []


class ClaimsCheck(BaseModel):
    """The set's verdict and each claim's outcome, with what the gatekeeper and the verifier made of them."""

    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    groundedness_score: float
    claims: list[ClaimOutcome]
    engine: str
    gatekeeper_result: GatekeeperResult | None = None
    # The verifier's judgement of the claims code left open, after code's caps.
    verification: Verification | None = None
    engine_fallback: EngineFallback | None = None

    def counts(self) -> dict[str, int]:
        return {status: sum(c.status == status for c in self.claims) for status in STATUS_FACT_CLASS}


@dataclass
class _Cited:
    """A claim that made its call and cites what it returned (the no-hit, or the records it is about),
    with code's reading of its fact tokens."""

    claim: ClaimToCheck
    result: ToolResult
    cited: Claim
    # Fact tokens code accounted for: the call's own (its query, its window), numbers within tolerance.
    settled: set[str] = field(default_factory=set)
    # Its fact tokens not in the text it cites (what the grounding check finds).
    ungrounded: list[str] = field(default_factory=list)
    # Identity tokens no returned record holds; numbers no returned value agrees with.
    missing: list[str] = field(default_factory=list)
    disagreeing: list[str] = field(default_factory=list)
    # The values of the records it is about, as their source wrote them; `found`: how many records were
    # found (alerts, lines), else those values: what a claim denying them is contradicted by.
    values: list[str] = field(default_factory=list)
    found: list[str] = field(default_factory=list)


def claims_check(
    *,
    query: str,
    claims: Sequence[ClaimToCheck],
    engine: Engine,
    recorder: Recorder,
    world: World,
    fallback: Engine | None = None,
) -> ClaimsCheck:
    """Each claim's outcome and the set's verdict; its calls and stages are written through `recorder`.
    `query`: the check in words, for the stages' records."""
    outcomes: dict[str, ClaimOutcome] = {}
    to_call = []
    for claim in claims:
        refusal = _refused_before_the_call(claim, now=world.now)
        if refusal is None:
            to_call.append(claim)
        else:
            outcomes[claim.claim_id] = refusal
    cited = []
    for claim, result in _calls_made(to_call, recorder=recorder):
        if result.invocation_id is None or not result.success:
            reason = CALL_FAILED.format(error=result.error or result.said)
            outcomes[claim.claim_id] = _outcome(claim, UNVERIFIABLE, reason, result=result)
        else:
            cited.append(_cites(claim, result, world=world))
    gatekeeper_result = verification = fallen_back = None
    if cited:
        context = RoundContext(
            query=query,
            focus=QuestionFocus(),
            excluded_topics=[],
            world=world,
            invocations=recorder.invocations(),
        )
        gatekeeper_result = gatekeeper_run(recorder, ROUND, _output([each.cited for each in cited]), context)
        open_claims = []
        for each in cited:
            decided = _decided_by_code(each, gatekeeper_result)
            if decided is None:
                open_claims.append(each)
            else:
                outcomes[each.claim.claim_id] = decided
        verification, fallen_back = _verified(
            query,
            open_claims,
            gatekeeper_result,
            engine=engine,
            fallback=fallback,
            recorder=recorder,
            world=world,
        )
        checks = verification.claim_checks if verification is not None else []
        for each, check in zip(open_claims, checks, strict=True):
            outcomes[each.claim.claim_id] = _judged(each, check, gatekeeper_result, recorder=recorder)
    ordered = [outcomes[claim.claim_id] for claim in claims]
    verdict, score = verdict_compute([STATUS_FACT_CLASS[outcome.status] for outcome in ordered])
    answered_by = fallback if fallen_back is not None and fallback is not None else engine
    return ClaimsCheck(
        verdict=verdict,
        groundedness_score=score,
        claims=ordered,
        engine=answered_by.name,
        gatekeeper_result=gatekeeper_result,
        verification=verification,
        engine_fallback=fallen_back,
    )


def _refused_before_the_call(claim: ClaimToCheck, *, now: datetime) -> ClaimOutcome | None:
    """A claim judged without a call: its text is an instruction or a command, it names no call, or it
    asks an alert's past state."""
    found = instructions_in(claim.text)
    if found:
        return _outcome(claim, UNVERIFIABLE, INSTRUCTION.format(found="、".join(f[:80] for f in found)))
    if claim.call is None:
        return _outcome(claim, UNVERIFIABLE, NO_CALL)
    if ALERTS.owns(claim.call[0]) and claim.at is not None and claim.at < now - ALERTS_PRESENT:
        return _outcome(claim, UNVERIFIABLE, PAST_ALERTS.format(at=claim.at.isoformat()))
    return None


def _calls_made(
    claims: Sequence[ClaimToCheck], *, recorder: Recorder
) -> list[tuple[ClaimToCheck, ToolResult]]:
    """Each claim's call, recorded: the calls of one time in one turn (they run at once)."""
    by_time: dict[datetime | None, list[ClaimToCheck]] = {}
    for claim in claims:
        by_time.setdefault(claim.at, []).append(claim)
    made: list[tuple[ClaimToCheck, ToolResult]] = []
    for at, group in by_time.items():
        toolbox = recorder.toolbox(round=ROUND, max_calls=len(group), at=at)
        made += zip(group, toolbox.call_many([claim.call for claim in group if claim.call]), strict=True)
    return made


def _basis(claim: ClaimToCheck, *, world: World) -> list[str]:
    """What the claim's own call says (its query, service, alert name) and its window, in words: a fact
    token of the claim found here is the call's, not a claim about what it returned."""
    tool_name, arguments = claim.call or ("", {})
    texts = [value for value in arguments.values() if isinstance(value, str)]
    window = world.logs_window_minutes if LOGS.owns(tool_name) else claim.window_minutes
    return [*texts, f"{window}分钟"] if window else texts


def _cites(claim: ClaimToCheck, result: ToolResult, *, world: World) -> _Cited:
    """The claim citing what its call returned: the no-hit, or the records it is about (every record
    when it names none of them; of log lines, those that are what it calls them when some are), with
    code's reading of its identity tokens and numbers."""
    names = world.fact_names
    basis = _basis(claim, world=world)
    tokens = fact_tokens(claim.text, names)
    own = [token for token in tokens if not _in(token, basis, names)]
    claim_type = "negative_observation" if CLAIM_DENIES.search(normalize(claim.text)) else "observation"
    each = _Cited(claim=claim, result=result, cited=_claim(claim, claim_type, result, []))
    each.settled = {token.surface for token in tokens if token not in own}
    records = result.cited()
    if not records:
        each.cited = _claim(claim, claim_type, result, [ref for ref in (result.no_hit(),) if ref is not None])
    else:
        identity = [token for token in own if _is_identity(token)]
        about = [(record, ref) for record, ref in records if not _missing(identity, [ref.text], names)]
        about = _lines_as_called(claim.text, about, vocabulary=world.vocabulary) or about
        if not about:
            texts = [ref.text for _, ref in records]
            each.missing = _missing(identity, texts, names) or [token.surface for token in identity]
        values = _values(about)
        counted = _counted(about, result)
        claimed = [token for token in own if token.kind in ("number", "ratio")]
        each.disagreeing = (
            [token.surface for token in claimed if not _agrees(token, [*values, *counted])] if about else []
        )
        each.settled |= {
            token.surface for token in claimed if about and token.surface not in each.disagreeing
        }
        each.values = list(dict.fromkeys(written for _, written in [*values, *counted]))[:MAX_VALUES]
        each.found = [written for _, written in counted] or each.values
        each.cited = _claim(claim, claim_type, result, [ref for _, ref in (about or records)[:MAX_CITED]])
    evidence = [binding.evidence_excerpt for binding in each.cited.evidence_bindings]
    each.ungrounded = unsupported_facts(claim.text, evidence, names=names)
    return each


def _lines_as_called(
    text: str, about: Sequence[tuple[EvidenceRecord, Ref]], *, vocabulary: Vocabulary
) -> list[tuple[EvidenceRecord, Ref]]:
    """Of the log lines a claim is about, those that are what it calls them (error, timeout, slow
    request lines: `claim_labels`' reading of its words, `tools.loglines`' of a line); [] when it calls
    them nothing, or none is (the label check then fails each one it cites)."""
    topics = claimed_topics(text, [], vocabulary=vocabulary)
    if not topics:
        return []
    return [
        (record, ref)
        for record, ref in about
        if isinstance(record, LogLine)
        and all(
            has_property(t, level=record.level, message=record.message, vocabulary=vocabulary) for t in topics
        )
    ]


def _claim(claim: ClaimToCheck, claim_type: str, result: ToolResult, refs: Sequence[Ref]) -> Claim:
    return Claim(
        claim_id=claim.claim_id,
        claim_type=claim_type,
        claim_text=claim.text,
        evidence_bindings=[EvidenceBinding.of_ref(result, ref) for ref in refs],
    )


def _in(token: FactToken, texts: Sequence[str], names: FactNames) -> bool:
    return bool(texts) and not unsupported_facts(token.surface, texts, names=names)


def _is_identity(token: FactToken) -> bool:
    """A token that says which series, alert or line: a name, an identifier, an endpoint. Not a value,
    a time (the claim's time is given apart) or a statistic (`P99` names no series)."""
    return token.kind in ("name", "code", "endpoint") and not PERCENTILE.fullmatch(token.surface)


def _missing(identity: Sequence[FactToken], texts: Sequence[str], names: FactNames) -> list[str]:
    return list(dict.fromkeys(token.surface for token in identity if not _in(token, texts, names)))


def _values(about: Sequence[tuple[EvidenceRecord, Ref]]) -> list[tuple[Decimal, str]]:
    """The values the records say, each with how its source wrote it: a series' samples its ref names;
    the numbers of an alert's or a line's text."""
    values: list[tuple[Decimal, str]] = []
    for record, ref in about:
        if isinstance(record, SeriesRecord):
            values += [(value, number_text(str(value))) for value in sorted(record.named_values())]
        else:
            values += [
                (number, token.surface)
                for token in fact_tokens(ref.text)
                if token.kind in ("number", "ratio")
                for number, _unit in _numbers(token.surface)
            ]
    return list(dict.fromkeys(values))


def _counted(about: Sequence[tuple[EvidenceRecord, Ref]], result: ToolResult) -> list[tuple[Decimal, str]]:
    """How many alerts or lines were found (a claim may count them); a series' count is no value of it."""
    if not about or isinstance(about[0][0], SeriesRecord):
        return []
    return [(Decimal(result.total), f"{result.total} 条")]


def _numbers(surface: str) -> list[tuple[Decimal, str]]:
    """A number token's numbers with their units, canonical (`分钟` → `min`); a ratio has two."""
    text = normalize(surface)
    ratio = RATIO.fullmatch(text)
    number = None if ratio else NUMBER.fullmatch(text)
    parts = (
        [(ratio[1], ratio[2]), (ratio[3], ratio[4])] if ratio else [(number[1], number[2])] if number else []
    )
    found = []
    for digits, unit in parts:
        try:
            value = Decimal(digits.replace(",", ""))
        except InvalidOperation:
            continue
        found.append((value, UNIT_ALIASES.get(unit, unit) if unit else ""))
    return found


def _agrees(token: FactToken, values: Sequence[tuple[Decimal, str]]) -> bool:
    """Whether each number of the token agrees with one of the values, within the module's tolerance."""
    return all(
        any(
            abs(reading - value) <= max(half_unit, abs(value) * RELATIVE_TOLERANCE)
            for reading, half_unit in _readings(number, unit)
            for value, _written in values
        )
        for number, unit in _numbers(token.surface)
    )


def _readings(number: Decimal, unit: str) -> list[tuple[Decimal, Decimal]]:
    """The number as written and in its unit's base unit, each with half a unit of its last digit."""
    exponent = number.as_tuple().exponent
    half_unit = Decimal(5).scaleb((exponent if isinstance(exponent, int) else 0) - 1)
    return [(number, half_unit)] + [
        (number * scale, half_unit * scale) for scale in UNIT_SCALES.get(unit, ())
    ]


def _decided_by_code(each: _Cited, gatekeeper_result: GatekeeperResult) -> ClaimOutcome | None:
    """What code settles on its own: nothing returned (or nothing the claim names) for a claim that says
    something is there; a citation the checks failed (the claim denies what was returned, calls a line
    what it is not); a number no returned value agrees with. None leaves the claim to the verifier."""
    claim, bindings = each.claim, each.cited.evidence_bindings
    failed = [
        row
        for row in gatekeeper_result.checked_bindings
        if row.claim_id == claim.claim_id and row.status == "fail"
    ]
    rules = list(dict.fromkeys(row.rule for row in failed if row.rule))
    found = {"result": each.result, "bindings": bindings}
    if not bindings or (failed and all(row.raw_path == NO_EVIDENCE_PATH for row in failed)):
        no_hit = each.result.no_hit()
        said = no_hit.text if no_hit is not None else each.result.said
        return _outcome(claim, NOT_FOUND, NOTHING_RETURNED.format(no_hit=said), rules=rules, **found)
    if each.missing:
        return _outcome(claim, NOT_FOUND, NOT_IN_RESULT.format(missing="、".join(each.missing)), **found)
    if failed:
        messages = [
            message.message
            for message in [*gatekeeper_result.errors, *gatekeeper_result.warnings]
            if message.claim_id == claim.claim_id
        ]
        contradicts = bool({POLARITY_MISMATCH, LABEL_UNSUPPORTED} & set(rules))
        return _outcome(
            claim,
            CONTRADICTED if contradicts else UNVERIFIABLE,
            DENIES_EVIDENCE.format(detail="；".join(messages)),
            rules=rules,
            values=each.found if POLARITY_MISMATCH in rules else [],
            **found,
        )
    if each.disagreeing:
        reason = NUMBER_DISAGREES.format(claimed="、".join(each.disagreeing), note=TOLERANCE_NOTE)
        return _outcome(claim, CONTRADICTED, reason, values=each.values, **found)
    return None


def _verified(
    query: str,
    open_claims: Sequence[_Cited],
    gatekeeper_result: GatekeeperResult,
    *,
    engine: Engine,
    fallback: Engine | None,
    recorder: Recorder,
    world: World,
) -> tuple[Verification | None, EngineFallback | None]:
    """The engine's verifier on the claims code left open (the fallback engine's when its model is
    unavailable), with code's caps; its step is recorded, skipped when nothing is open."""
    if not open_claims:
        recorder.step_recorded(
            StepRecord(
                round=ROUND,
                stage=Stage.VERIFIER,
                status=StepStatus.SKIPPED,
                latency_ms=0,
                thought=NO_OPEN_CLAIM,
            )
        )
        return None, None
    output = _output([each.cited for each in open_claims])
    stage_input = VerifierInput(
        original_query=query,
        executor_structured_output=output.model_dump(),
        gatekeeper_result=gatekeeper_result.model_dump(),
        tool_trace_summary=recorder.tool_trace_summary(),
        executor_output_parse_status=ParseStatus().as_dict(),
        claims=claims_under_check(
            executor_output=output, gatekeeper_result=gatekeeper_result, names=world.fact_names
        ),
    )
    fallen_back = None
    try:
        call = stage_run(recorder, ROUND, Stage.VERIFIER, lambda: engine.verify(stage_input))
    except EngineUnavailableError as outage:
        if fallback is None:
            raise
        fallen_back = EngineFallback(engine=engine.name, stage=outage.stage, error_id=outage.error_id)
        call = stage_run(recorder, ROUND, Stage.VERIFIER, lambda: fallback.verify(stage_input))
    verification = verification_finalize(
        verifier_output=call.output,
        executor_output=output,
        gatekeeper_result=gatekeeper_result,
        guidance_tools=recorder.guidance_tools,
        names=world.fact_names,
    )
    return verification, fallen_back


def _judged(
    each: _Cited, check: CheckedClaim, gatekeeper_result: GatekeeperResult, *, recorder: Recorder
) -> ClaimOutcome:
    """A claim code left open, by the verifier's class after code's caps. The grounding cap on tokens
    code has settled (its call's own, numbers within tolerance) is code's to lift: then the kind of
    evidence decides (`evidence_cap`), as it does for any grounded claim."""
    found = {"result": each.result, "bindings": each.cited.evidence_bindings}
    verification, reason = check.verification, check.detail
    if verification == "unsupported" and check.grounding_reason and set(each.ungrounded) <= each.settled:
        passed = gatekeeper_result.passed_for(each.claim.claim_id)
        cap = evidence_cap(each.cited, passed, recorder.guidance_tools)
        verification, reason = cap if cap is not None else ("direct_observation", SETTLED_BY_CODE)
    if verification in SUPPORTING:
        return _outcome(each.claim, SUPPORTED, reason, **found)
    if FACT_CLASS[verification] == "contradicted":
        return _outcome(each.claim, CONTRADICTED, reason, values=each.values, **found)
    return _outcome(each.claim, UNVERIFIABLE, reason, **found)


def _output(claims: Sequence[Claim]) -> ExecutorOutput:
    """The claims as the round's checks read an executor's output: claims only."""
    return ExecutorOutput(
        claims=list(claims),
        hypotheses=[],
        missing_info=[],
        recommended_actions=[],
        diagnosis_summary="",
        user_facing_answer="",
    )


def _outcome(
    claim: ClaimToCheck,
    status: ClaimStatus,
    reason: str,
    *,
    result: ToolResult | None = None,
    bindings: Sequence[EvidenceBinding] = (),
    rules: Sequence[str] = (),
    values: Sequence[str] = (),
) -> ClaimOutcome:
    """The outcome with its evidence: the records cited, else the call itself (a failed call's error)."""
    source = result.source if result is not None else ""
    if bindings:
        evidence = [
            ClaimEvidence(
                invocation_id=binding.source_invocation_id,
                tool_name=binding.tool_name,
                raw_path=binding.raw_path,
                excerpt=binding.evidence_excerpt,
                source=source,
            )
            for binding in bindings
        ]
    elif result is not None:
        evidence = [
            ClaimEvidence(
                invocation_id=result.invocation_id,
                tool_name=result.tool_name,
                raw_path=None,
                excerpt=result.error or result.said,
                source=source,
            )
        ]
    else:
        evidence = []
    return ClaimOutcome(
        claim_id=claim.claim_id,
        text=claim.text,
        status=status,
        reason=reason,
        values=list(values),
        evidence=evidence,
        rules=list(rules),
    )


STATUS_LABELS = {SUPPORTED: "支持", CONTRADICTED: "矛盾", NOT_FOUND: "未找到", UNVERIFIABLE: "无法核对"}
VERDICT_MEANINGS = {
    "PASS": "每条断言都由数据源直接支持",
    "LOW_CONFID": "有断言未找到或无法核对",
    "REJECT": "有断言与数据源矛盾",
}


def claims_answer(check: ClaimsCheck) -> str:
    """The check in words (Markdown): the verdict, then each claim quoted as data with its status and why."""
    counts = "，".join(f"{STATUS_LABELS[status]} {count}" for status, count in check.counts().items())
    lines = [
        f"核对 {len(check.claims)} 条断言：{counts}。整体判定 {check.verdict}（{VERDICT_MEANINGS[check.verdict]}）。",
        "",
    ]
    for outcome in check.claims:
        values = f"；数据源返回 {'、'.join(outcome.values)}" if outcome.values else ""
        lines.append(
            f"- {outcome.claim_id} {STATUS_LABELS[outcome.status]}：「{outcome.text}」（{outcome.reason}{values}）"
        )
    return "\n".join(lines)
