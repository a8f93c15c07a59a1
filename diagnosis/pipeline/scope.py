"""Narrow scope: "只确认 KubePodCrashLooping，不要分析订单123、OOM…".

`scope_parse` reads the question (Chinese and English): is it a narrow confirmation, and which
topics did the user exclude. `scope_guard` blocks executor claims that touch an excluded topic
(warning `scope.excluded_topic`), so they are never verified or composed; `text_mentions_excluded`
keeps excluded topics out of any text shown to the user.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from diagnosis.pipeline.contracts import Claim, ExecutorOutput
from diagnosis.pipeline.facts import normalize
from diagnosis.pipeline.focus import Inventory, QuestionFocus
from diagnosis.pipeline.gatekeeper import RuleMessage
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.knowledge.record import RunbookSection
from tools.evidence.record import EvidenceRecord
from tools.evidence.result import ToolResult
from tools.terms import groups_in, mentioned, query_groups, services_aliased
from tools.vocabulary import Vocabulary

SCOPE_RULE = "scope.excluded_topic"

NARROW_PHRASES = re.compile(
    r"只确认|只排查|只看|只检查|只查|只关注|只回答|仅确认|仅排查|仅看|仅检查|仅回答|"
    r"不要分析|不要扩展|不用分析|无需分析|是否存在|是否真实存在|"
    r"\bonly (?:confirm|check|look|answer|verify)|\bjust (?:confirm|check)\b|"
    r"\bdo(?: not|n't) (?:analy[sz]e|expand)|\bwhether\b[^.?!]*\bexists?\b|\bdoes\b[^.?!]*\bexist\b",
    re.IGNORECASE,
)
EXCLUSION_MARKERS = re.compile(
    r"不要(?:分析|扩展到|扩展|看|排查|涉及|提及|考虑)|不用(?:分析|看|排查)|无需(?:分析|排查)|不分析|"
    r"别(?:分析|看|管)|排除|忽略|不包括|"
    r"\bdo(?: not|n't) (?:analy[sz]e|look at|consider|check|include)\b|\bignore\b|\bexclud(?:e|ing)\b",
    re.IGNORECASE,
)
CLAUSE_END = re.compile(r"[。；;！？!?\n]|(?<!\d)\.(?!\d)")
ITEM_SEPARATORS = re.compile(r"[、，,/]|\s+(?:and|or|nor)\s+|以及|或者|或|和|及|与", re.IGNORECASE)
# An item starting like a new instruction ends the exclusion list: "不要分析 OOM，只看 CPU".
NEW_INSTRUCTION = re.compile(r"^(?:只|仅|请|但|并|然后|而是|only\b|but\b|please\b|just\b)", re.IGNORECASE)
LEADING_FILLER = re.compile(r"^(?:也|还有|以及|和|及|与|或者|或|the\s+|any\s+)+", re.IGNORECASE)
TRAILING_FILLER = re.compile(
    r"(?:等等|等|相关内容|相关|的问题|问题|方面|的情况|\s+etc|\s+issues?)+$", re.IGNORECASE
)
ITEM_STRIP = " \t\"'“”‘’「」《》()（）:：.…"


@dataclass
class ScopeResult:
    kept_output: ExecutorOutput
    blocked_claims: list[Claim] = field(default_factory=list)
    warnings: list[RuleMessage] = field(default_factory=list)


def scope_parse(query: str) -> tuple[bool, list[str]]:
    """(narrow_scope, excluded_topics) of a question."""
    text = normalize(query)
    excluded: list[str] = []
    for marker in EXCLUSION_MARKERS.finditer(text):
        excluded += _exclusion_items(text[marker.end() :])
    narrow = bool(NARROW_PHRASES.search(text))
    return narrow, list(dict.fromkeys(excluded))


def text_mentions_excluded(text: str, excluded_topics: list[str], *, vocabulary: Vocabulary) -> list[str]:
    """The excluded topics (as the user wrote them) that `text` mentions, synonyms included.

    A topic naming synonym groups (the world vocabulary, the table the tools file records under) is
    mentioned by any text filed under one of them; any other topic (a service, an order) by name."""
    normalized = normalize(text)
    groups = groups_in(normalized, vocabulary=vocabulary)
    return [
        topic
        for topic in excluded_topics
        if _topic_groups(topic, vocabulary) & groups or _named(topic, normalized, vocabulary)
    ]


def scope_guard(
    *, executor_output: ExecutorOutput, excluded_topics: list[str], vocabulary: Vocabulary
) -> ScopeResult:
    if not excluded_topics:
        return ScopeResult(kept_output=executor_output)
    result = ScopeResult(kept_output=executor_output)
    kept_claims = []
    for claim in executor_output.claims:
        # Evidence about an excluded topic is dropped from a claim; a claim that is itself about one,
        # or has nothing left to stand on, is blocked.
        bindings = []
        for binding in claim.evidence_bindings:
            topics = text_mentions_excluded(binding.evidence_excerpt, excluded_topics, vocabulary=vocabulary)
            if topics:
                result.warnings.append(
                    _scope_warning(
                        f"证据 {binding.raw_path} 涉及用户排除的主题（{'、'.join(topics)}），已从断言中移除",
                        claim,
                    )
                )
            else:
                bindings.append(binding)
        topics = text_mentions_excluded(claim.claim_text, excluded_topics, vocabulary=vocabulary)
        if topics or (claim.evidence_bindings and not bindings):
            result.blocked_claims.append(claim)
            reason = (
                f"涉及用户排除的主题（{'、'.join(topics)}）" if topics else "的证据全部涉及用户排除的主题"
            )
            result.warnings.append(_scope_warning(f"断言{reason}，已拦截，不参与校验与撰写", claim))
        else:
            kept_claims.append(claim.model_copy(update={"evidence_bindings": bindings}))
    result.kept_output = executor_output.model_copy(
        update={
            "claims": kept_claims,
            "hypotheses": _kept_items(
                executor_output.hypotheses, excluded_topics, "假设", result.warnings, vocabulary
            ),
            "missing_info": _kept_items(
                executor_output.missing_info, excluded_topics, "缺口", result.warnings, vocabulary
            ),
            "recommended_actions": _kept_items(
                executor_output.recommended_actions, excluded_topics, "建议动作", result.warnings, vocabulary
            ),
        }
    )
    return result


def _scope_warning(message: str, claim: Claim) -> RuleMessage:
    return RuleMessage(rule=SCOPE_RULE, message=message, claim_id=claim.claim_id)


def _exclusion_items(rest: str) -> list[str]:
    clause = CLAUSE_END.split(rest, maxsplit=1)[0]
    items = []
    for raw in ITEM_SEPARATORS.split(clause):
        item = raw.strip(ITEM_STRIP)
        if NEW_INSTRUCTION.match(item):
            break
        item = TRAILING_FILLER.sub("", LEADING_FILLER.sub("", item)).strip(ITEM_STRIP)
        if item:
            items.append(item)
    return items


def _kept_items(
    items: list[str],
    excluded_topics: list[str],
    label: str,
    warnings: list[RuleMessage],
    vocabulary: Vocabulary,
) -> list[str]:
    kept = []
    for item in items:
        topics = text_mentions_excluded(item, excluded_topics, vocabulary=vocabulary)
        if topics:
            warnings.append(
                RuleMessage(
                    rule=SCOPE_RULE, message=f"{label}涉及用户排除的主题（{'、'.join(topics)}），已移除"
                )
            )
        else:
            kept.append(item)
    return kept


def _topic_groups(topic: str, vocabulary: Vocabulary) -> set[str]:
    # Longer terms win, so "内存溢出" names the OOM group only, not memory as well.
    return query_groups(normalize(topic), vocabulary=vocabulary)


def _named(topic: str, text: str, vocabulary: Vocabulary) -> bool:
    """The topic as the user wrote it, a service by its aliases too."""
    topic = normalize(topic).strip()
    if not topic:
        return False
    return bool(
        mentioned({topic, *services_aliased(topic, vocabulary=vocabulary)}, text, vocabulary=vocabulary)
    )


# --- Focus: a question that names services or alerts is about them. ---

FOCUS_RULE = "scope.out_of_focus"


@dataclass(frozen=True)
class RecordSubject:
    """What one evidence record is about: the services and alerts it belongs to."""

    services: frozenset[str] = frozenset()
    alerts: frozenset[str] = frozenset()
    # A runbook or past case: about an alert only when that alert fits the question's topics.
    guidance: bool = False


def record_subjects(
    *, invocations: Sequence[ToolResult], inventory: Inventory, service_labels: Sequence[str]
) -> dict[tuple[int, str], RecordSubject]:
    """The subject of every evidence ref of the recorded calls, by (invocation id, raw_path).

    Alerts by their name and service labels, log lines and series by their service, guidance by
    the services and alerts its title and text name, a call that found nothing by its arguments.
    `service_labels` (DIAGNOSIS_SERVICE_LABELS) are the record fields and labels naming a service."""
    fields = ("service", *service_labels)
    subjects = {}
    for result in invocations:
        records = dict(enumerate(result.records))
        for ref in result.refs:
            record = records.get(ref.index) if ref.index is not None else None
            subjects[(result.invocation_id, ref.path)] = (
                _subject_of(record, inventory, fields)
                if record is not None
                else _subject_named(result.arguments, fields)
            )
    return subjects


def out_of_focus(
    *,
    executor_output: ExecutorOutput,
    focus: QuestionFocus,
    subjects: dict[tuple[int, str], RecordSubject],
    inventory: Inventory,
) -> ScopeResult:
    """Block claims about subjects the question did not ask (warning `scope.out_of_focus`).

    Nothing understood → no claim stands. A question naming no service or alert ("有哪些告警")
    has everything in focus. Otherwise a binding whose record is about another service or alert is
    dropped from its claim, and a claim left with nothing, or naming only other subjects, is blocked."""
    result = ScopeResult(kept_output=executor_output)
    if focus.understood and not focus.names_subjects:
        return result
    in_focus = _focus_test(focus, subjects, inventory)
    wanted_services = {*focus.services, *focus.unknown_services}
    wanted_alerts = {*focus.alerts, *focus.unknown_alerts}
    kept_claims = []
    for claim in executor_output.claims:
        if not focus.understood:
            result.blocked_claims.append(claim)
            result.warnings.append(
                _focus_warning("问题未涉及任何已识别的服务、告警或主题，断言已拦截", claim)
            )
            continue
        bindings = []
        for binding in claim.evidence_bindings:
            if in_focus(subjects.get((binding.source_invocation_id, binding.raw_path or ""))):
                bindings.append(binding)
            else:
                result.warnings.append(
                    _focus_warning(f"证据 {binding.raw_path} 涉及问题之外的服务或告警，已从断言中移除", claim)
                )
        named_services = set(inventory.services_in(claim.claim_text))
        named_alerts = set(inventory.alerts_in(claim.claim_text))
        names_other = bool(
            wanted_services and named_services and not _any_same(named_services, wanted_services, inventory)
        ) or bool(wanted_alerts and named_alerts and not named_alerts & wanted_alerts)
        if names_other or (claim.evidence_bindings and not bindings):
            result.blocked_claims.append(claim)
            result.warnings.append(
                _focus_warning("断言涉及问题之外的服务或告警，已拦截，不参与校验与撰写", claim)
            )
        else:
            kept_claims.append(claim.model_copy(update={"evidence_bindings": bindings}))
    result.kept_output = executor_output.model_copy(update={"claims": kept_claims})
    return result


def _focus_test(
    focus: QuestionFocus, subjects: dict[tuple[int, str], RecordSubject], inventory: Inventory
) -> Callable[[RecordSubject | None], bool]:
    """Whether a record's subject is one the question asked about."""
    wanted_services = {*focus.services, *focus.unknown_services}
    wanted_alerts = {*focus.alerts, *focus.unknown_alerts}
    # Asked about an alert only: its services are the subject of the logs too.
    alert_services = {
        service
        for subject in subjects.values()
        if subject.alerts & wanted_alerts
        for service in subject.services
    }
    # Topics guidance may be about: the question's, related ones, and those of the subject's alerts.
    subject_alerts = {
        alert
        for subject in subjects.values()
        if not subject.guidance
        and subject.services
        and _any_same(subject.services, wanted_services, inventory)
        for alert in subject.alerts
    } | wanted_alerts
    guidance_topics = inventory.widened(
        [*focus.topics, *(t for alert in subject_alerts for t in inventory.topics_of_alert(alert))]
    )

    def in_focus(subject: RecordSubject | None) -> bool:
        if subject is None:
            return True
        if subject.guidance and subject.alerts and not subject.alerts & subject_alerts:
            topics = {t for alert in subject.alerts for t in inventory.topics_of_alert(alert)}
            if topics and not topics & guidance_topics:
                return False  # a runbook for another alert on another topic
        services = wanted_services or alert_services
        if services and subject.services and not _any_same(subject.services, services, inventory):
            return False
        return not (wanted_alerts and subject.alerts and not subject.alerts & wanted_alerts)

    return in_focus


def _any_same(names: set[str] | frozenset[str], wanted: set[str], inventory: Inventory) -> bool:
    return any(inventory.same_service(name, other) for name in names for other in wanted)


def _focus_warning(message: str, claim: Claim) -> RuleMessage:
    return RuleMessage(rule=FOCUS_RULE, message=message, claim_id=claim.claim_id)


def _subject_of(record: EvidenceRecord, inventory: Inventory, fields: Sequence[str]) -> RecordSubject:
    if isinstance(record, RunbookSection):  # guidance: what its title and text name
        return RecordSubject(
            services=frozenset(inventory.services_in(f"{record.title}\n{record.content}")),
            alerts=frozenset(inventory.alerts_in(record.title)),
            guidance=True,
        )
    # The configured service labels may name a field of the record (`service`) or a source's own one.
    named = {key: getattr(record, key, None) for key in fields}
    labels = getattr(record, "labels", None) or getattr(record, "metric", None) or {}
    subject = _subject_named({key: value for key, value in named.items() if value}, fields, labels)
    alert = record.alert_name if isinstance(record, AlertRecord) else ""
    return RecordSubject(services=subject.services, alerts=frozenset({alert} if alert else ()))


def _subject_named(arguments: dict, fields: Sequence[str], labels: dict | None = None) -> RecordSubject:
    """The services a call's arguments (or a record's fields and labels) name, and its alert."""
    labels = labels or {}
    services = {
        str(value)
        for key in dict.fromkeys(fields)
        for value in (arguments.get(key), labels.get(key))
        if value
    }
    alert = arguments.get("alert_name")
    return RecordSubject(services=frozenset(services), alerts=frozenset({alert} if alert else ()))
