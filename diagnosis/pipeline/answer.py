"""The answer as structure (CONTRACTS §21): what the user is told, as typed parts with the refs they
rest on. The orchestrator builds it where it decides the answer; `diagnosis.presenters.answer` renders
it late (the stored Markdown, the chat page's HTML, plain text). Nothing reads a rendered answer back.

Every part is code's or already checked: conclusions are the filled slots' lines, findings and
inferences the verifier-allowed claims with their gatekeeper-passed quotes, `prose` the llm composer's
answer after `composer_guard`. The record holds only what the answer shows, so it is bounded as the
answer is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from diagnosis.pipeline.contracts import EvidenceBinding
from diagnosis.pipeline.gatekeeper import CheckedBinding
from diagnosis.pipeline.injected_commands import QUOTE_ONLY
from diagnosis.pipeline.routing import OUTPUT_TYPE_LABELS, OutputType
from diagnosis.pipeline.slot import conclusion_line

DISCLAIMER = "以下结论基于当前已获取证据，仍存在部分证据缺口，请谨慎参考。"
DEGRADED_HEADER = "当前无法基于已获取证据生成可靠结论，建议人工介入。"
NO_CONCLUSION = "当前未获得可直接确认的结论。"
FINDINGS_HEADING = "**已确认的发现**"
INFERENCES_HEADING = "**合理推断**（基于已核验证据，尚未直接证实）"
ACTIONS_HEADING = "**建议的取证动作**"
DEGRADED_NEXT_STEPS = (
    "人工复核本次会话的工具调用记录与证据引用（见诊断轨迹）。",
    "针对上述证据缺口补充检索后，重新发起诊断。",
)
EXCERPT_CHARS = 300


class AnswerRef(BaseModel):
    """Where a quote or a conclusion's evidence is: one record of one recorded tool call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_name: str
    invocation_id: int | None
    raw_path: str = ""

    @classmethod
    def of_binding(cls, binding: EvidenceBinding | CheckedBinding) -> AnswerRef:
        return cls(
            tool_name=binding.tool_name,
            invocation_id=binding.source_invocation_id,
            raw_path=binding.raw_path or "",
        )

    def text(self) -> str:
        """The raw reference, as reviewers read it: `query_logs #12 $.logs[0]`."""
        return " ".join(part for part in (f"{self.tool_name} #{self.invocation_id}", self.raw_path) if part)


class Quote(BaseModel):
    """A gatekeeper-passed excerpt; "" when the record holds a command or an instruction (it is quoted
    in the evidence panel only, never in an answer)."""

    model_config = ConfigDict(extra="forbid")

    excerpt: str
    ref: AnswerRef


class Statement(BaseModel):
    """A confirmed finding or a reasonable inference: the claim as the composer may use it."""

    model_config = ConfigDict(extra="forbid")

    claim_id: str
    text: str
    quotes: list[Quote] = []


class Conclusion(BaseModel):
    """A filled slot's `结论` line, written by code from the evidence its refs point at: its statement,
    the source it names and what the sources cannot show."""

    model_config = ConfigDict(extra="forbid")

    statement: str
    source: str = ""
    limits: list[str] = []
    refs: list[AnswerRef] = []

    def line(self, refs: RefWriter | None = None) -> str:
        source = (refs or RAW_REFS).source(self.source) if self.source else ""
        return conclusion_line(statement=self.statement, source=source, limits=self.limits)


class FailedCitation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ref: AnswerRef
    rule: str | None = None


class Degraded(BaseModel):
    """A DEGRADED answer's parts: only gatekeeper-verified quotes, never claim text."""

    model_config = ConfigDict(extra="forbid")

    verified: list[Quote] = []
    failed: list[FailedCitation] = []
    # Claims without any citation, and counts per fact class ("2 条断言缺少直接证据").
    counts: list[str] = []


class AnswerRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    output_type: OutputType
    conclusions: list[Conclusion] = []
    findings: list[Statement] = []
    inferences: list[Statement] = []
    # The verifier's gaps (the disclaimer lists them).
    gaps: list[str] = []
    allowed_actions: list[str] = []
    # What the llm composer wrote past the conclusions, checked by `composer_guard`; "" when the
    # answer is code's own.
    prose: str = ""
    degraded: Degraded | None = None
    # What the question named that is unknown, or that nothing was understood.
    focus_notes: list[str] = []
    # The engine asked for was unavailable and another answered: said first.
    fallback_notice: str = ""


# --- Writing it -------------------------------------------------------------------------------


class RefWriter(Protocol):
    """How a rendering writes references: the stored Markdown writes the raw reference, the page a
    label linked to its evidence card."""

    def ref(self, ref: AnswerRef) -> str:
        """A reference in running text."""
        ...

    def evidence(self, quote: Quote) -> str:
        """An evidence line's body, after `证据：`."""
        ...

    def source(self, source: str) -> str:
        """A conclusion's source (`ToolInvocation.source`, a runbook's document)."""
        ...

    def output_type(self, output_type: str) -> str:
        """An output type named in running text (an analysis's report names each alert's)."""
        ...


class RawRefs:
    """References as the stored Markdown writes them: `「excerpt」（来源：query_logs #12 $.logs[0]）`."""

    def ref(self, ref: AnswerRef) -> str:
        return ref.text()

    def evidence(self, quote: Quote) -> str:
        if not quote.excerpt:
            return f"{QUOTE_ONLY}（来源：{self.ref(quote.ref)}）"
        return evidence_quote(excerpt=quote.excerpt, source=self.ref(quote.ref))

    def source(self, source: str) -> str:
        return source

    def output_type(self, output_type: str) -> str:
        """Its label with its code, which reviewers look up: `已核验（NORMAL）`."""
        return f"{OUTPUT_TYPE_LABELS[output_type]}（{output_type}）"


RAW_REFS = RawRefs()


def answer_markdown(record: AnswerRecord, *, refs: RefWriter = RAW_REFS) -> str:
    """The answer as Markdown, one fixed template per output type: what `DiagnosisSession.answer` stores
    (with `RAW_REFS`) and what the page renders (with its own `refs`)."""
    if record.output_type == OutputType.DEGRADED:
        text = _degraded_text(record.degraded or Degraded(), refs)
    elif record.output_type == OutputType.LOW_CONFID_WITH_DISCLAIMER:
        text = f"{DISCLAIMER}\n\n{_body(record, refs)}"
        if record.gaps:
            text += "\n\n当前缺口：\n" + "\n".join(bullets(record.gaps))
    else:
        text = _body(record, refs)
    text = _with_focus_notes(text, record)
    return f"{record.fallback_notice}\n\n{text}" if record.fallback_notice else text


def _body(record: AnswerRecord, refs: RefWriter) -> str:
    """The composer's part, the conclusions first (code's lines, as written): then the llm composer's
    checked prose, else the material written by code."""
    sections = [[c.line(refs) for c in record.conclusions]] if record.conclusions else []
    if record.prose:
        return "\n\n".join("\n".join(lines) for lines in [*sections, [record.prose]])
    if record.findings:
        sections.append([FINDINGS_HEADING, *statement_lines(record.findings, refs)])
    if record.inferences:
        sections.append([INFERENCES_HEADING, *statement_lines(record.inferences, refs)])
    if not sections:
        sections.append([NO_CONCLUSION])
    if record.allowed_actions:
        sections.append([ACTIONS_HEADING, *bullets(record.allowed_actions)])
    return "\n\n".join("\n".join(lines) for lines in sections)


def _with_focus_notes(text: str, record: AnswerRecord) -> str:
    """A NORMAL answer opens with what the question named that is unknown; a DEGRADED one ends with it
    (the disclaimer lists the notes among its gaps already)."""
    if not record.focus_notes or record.output_type == OutputType.LOW_CONFID_WITH_DISCLAIMER:
        return text
    lines = "\n".join(bullets(record.focus_notes))
    if record.output_type == OutputType.DEGRADED:
        return f"{text}\n\n说明：\n{lines}"
    return f"{lines}\n\n{text}"


def statement_lines(statements: list[Statement], refs: RefWriter = RAW_REFS) -> list[str]:
    """Findings or inferences as Markdown bullets, each with its quoted evidence (each excerpt once: a
    claim that is its excerpt is not quoted again; evidence kept out of answers is named by its ref)."""
    lines = []
    for statement in statements:
        text = one_line(statement.text)
        # A claim that only restates its quote (a no-hit, a log line) is printed once, with its refs.
        if statement.quotes and all(one_line(q.excerpt) in ("", text) for q in statement.quotes):
            lines.append(f"- {text}（来源：{'、'.join(refs.ref(q.ref) for q in statement.quotes)}）")
            continue
        lines.append(f"- {text}")
        lines += [f"  - 证据：{refs.evidence(quote)}" for quote in statement.quotes]
    return lines


def _degraded_text(degraded: Degraded, refs: RefWriter) -> str:
    """Only gatekeeper-verified evidence with its ref, the gaps and next steps: never claim text."""
    verified = [
        evidence_quote(excerpt=quote.excerpt or QUOTE_ONLY, source=refs.ref(quote.ref))
        for quote in degraded.verified
    ]
    gaps = [
        f"{refs.ref(failed.ref)} 的引用未通过核验（{failed.rule}）" for failed in degraded.failed
    ] + degraded.counts
    return "\n\n".join(
        [
            DEGRADED_HEADER,
            "已确认信息：\n" + "\n".join(bullets(verified or ["暂无通过核验的证据"])),
            "证据缺口：\n" + "\n".join(bullets(gaps or ["暂无可以确认的结论"])),
            "建议下一步：\n" + "\n".join(bullets(DEGRADED_NEXT_STEPS)),
        ]
    )


def evidence_quote(*, excerpt: str, source: str) -> str:
    """Evidence as users see it: one quoted line (a runbook block spans several) and its source."""
    return f"「{_shortened(excerpt)}」（来源：{source}）"


def bullets(lines: Iterable[str]) -> list[str]:
    return [f"- {line}" for line in lines]


def one_line(text: str) -> str:
    return " ".join(text.split())


def _shortened(text: str) -> str:
    """One line; long evidence is cut at a separator, never inside a number."""
    text = one_line(text)
    if len(text) <= EXCERPT_CHARS:
        return text
    cut = max(text.rfind(sep, 0, EXCERPT_CHARS) for sep in ("，", "。", "；", "; ", ", ", " "))
    return text[: cut if cut > 0 else EXCERPT_CHARS] + "…"
