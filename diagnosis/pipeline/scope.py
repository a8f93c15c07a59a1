"""Narrow scope (seed 003): "只确认 HighCPUUsage，不要分析订单123、OOM…".

`scope_parse` reads the question (Chinese and English): is it a narrow confirmation, and which
topics did the user exclude. `scope_guard` blocks executor claims that touch an excluded topic
(warning `scope.excluded_topic`), so they are never verified or composed; `text_mentions_excluded`
keeps excluded topics out of any text shown to the user.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from diagnosis.pipeline.facts import normalize
from diagnosis.pipeline.gatekeeper import RuleMessage

if TYPE_CHECKING:  # the executor module imports the planner, which imports this module
    from diagnosis.pipeline.executor import Claim, ExecutorOutput

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

# Topic groups: an excluded topic naming one member excludes them all.
TOPIC_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("连接池", "数据库连接池", "连接池耗尽", "HikariCP", "HikariPool", "Hikari", "connection pool"),
    (
        "数据库慢查询",
        "慢查询",
        "慢SQL",
        "slow query",
        "slow queries",
        "slow sql",
        "MySQL",
        "数据库",
        "database",
    ),
    ("OOM", "OutOfMemoryError", "OOMKilled", "内存溢出", "out of memory", "exit code 137"),
    ("内存", "memory", "堆内存", "heap", "HighMemoryUsage"),
    ("CPU", "HighCPUUsage", "处理器"),
    ("慢请求", "慢响应", "响应慢", "SlowResponse", "slow response", "latency"),
    ("Redis", "redis-cluster"),
    ("消息队列", "RabbitMQ", "MQ", "消息积压"),
    ("磁盘", "disk", "HighDiskUsage"),
)
ORDER_TOPIC = re.compile(r"(?:订单|order)\s*[-_#:]?\s*(\d+)", re.IGNORECASE)


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


def text_mentions_excluded(text: str, excluded_topics: list[str]) -> list[str]:
    """The excluded topics (as the user wrote them) that `text` mentions, synonyms included."""
    return [topic for topic in excluded_topics if _topic_pattern(topic).search(_folded(text))]


def scope_guard(*, executor_output: ExecutorOutput, excluded_topics: list[str]) -> ScopeResult:
    if not excluded_topics:
        return ScopeResult(kept_output=executor_output)
    result = ScopeResult(kept_output=executor_output)
    kept_claims = []
    for claim in executor_output.claims:
        # Evidence about an excluded topic is dropped from a claim; a claim that is itself about one,
        # or has nothing left to stand on, is blocked.
        bindings = []
        for binding in claim.evidence_bindings:
            topics = text_mentions_excluded(binding.evidence_excerpt, excluded_topics)
            if topics:
                result.warnings.append(
                    _scope_warning(
                        f"证据 {binding.raw_path} 涉及用户排除的主题（{'、'.join(topics)}），已从断言中移除",
                        claim,
                    )
                )
            else:
                bindings.append(binding)
        topics = text_mentions_excluded(claim.claim_text, excluded_topics)
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
            "hypotheses": _kept_items(executor_output.hypotheses, excluded_topics, "假设", result.warnings),
            "missing_info": _kept_items(
                executor_output.missing_info, excluded_topics, "缺口", result.warnings
            ),
            "recommended_actions": _kept_items(
                executor_output.recommended_actions, excluded_topics, "建议动作", result.warnings
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
    items: list[str], excluded_topics: list[str], label: str, warnings: list[RuleMessage]
) -> list[str]:
    kept = []
    for item in items:
        topics = text_mentions_excluded(item, excluded_topics)
        if topics:
            warnings.append(
                RuleMessage(
                    rule=SCOPE_RULE, message=f"{label}涉及用户排除的主题（{'、'.join(topics)}），已移除"
                )
            )
        else:
            kept.append(item)
    return kept


def _folded(text: str) -> str:
    return normalize(text).casefold()


def _topic_terms(topic: str) -> list[str]:
    """The topic plus the synonyms of the groups it names, e.g. 连接池 → HikariCP, connection pool."""
    folded = _folded(topic).strip()
    hits = []  # (group, longest member of that group contained in the topic)
    for group in TOPIC_SYNONYMS:
        contained = [m for m in group if _folded(m) in folded]
        if contained:
            hits.append((group, max(contained, key=len)))
    # "内存溢出" names the OOM group; the memory group's "内存" inside it does not count.
    groups = [g for g, m in hits if not any(_folded(m) in _folded(o) and m != o for _, o in hits)]
    return [topic, *(member for group in groups for member in group)]


def _topic_pattern(topic: str) -> re.Pattern:
    alternatives = [_term_pattern(term) for term in _topic_terms(topic)]
    order = ORDER_TOPIC.fullmatch(_folded(topic).strip())
    if order:
        alternatives.append(rf"(?:订单|order)\s*[-_#:]?\s*{order[1]}(?!\d)")
    return re.compile("|".join(alternatives))


def _term_pattern(term: str) -> str:
    """ASCII edges must be word edges ("OOM" is not in "room"); CJK terms match anywhere."""
    folded = re.escape(_folded(term).strip()).replace(r"\ ", r"\s*")
    before = r"(?<![a-z0-9])" if re.match(r"[a-z0-9]", _folded(term)) else ""
    after = r"(?![a-z0-9])" if re.search(r"[a-z0-9]$", _folded(term).strip()) else ""
    return before + folded + after
