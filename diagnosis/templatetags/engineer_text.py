"""The engineer's wording of labels, claims and the AIOps report (issue 25 item 5): verdicts, output
types, states and tool names as words (`presenters.wording.token_words`); in the report's text, evidence
references as "Alertmanager 告警 #3" with the raw reference in a tooltip (a link to its evidence card
where the page shows one). A chat answer is rendered from its record by `presenters.answer` instead;
the report is still stored as text, so its references are read back here (issue 35 item 5 leaves it).
Quoted excerpts (「…」) and code spans are the sources' own text and stay as they are.

Everything works on escaped text: the only markup added is `<span class="ref" title>` and
`<a class="ref" href="#evidence-…">`, built from already escaped parts.
"""

from __future__ import annotations

import re
from functools import partial

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from diagnosis.presenters.markdown import markdown_to_html
from diagnosis.presenters.wording import (
    STATE_WORDS,
    TOOL_WORDS,
    VERDICT_WORDS,
    AnswerReferences,
    evidence_anchor,
    reference_label,
    token_words,
    words_outside_quotes,
)

register = template.Library()

_TOOLS = "|".join(TOOL_WORDS)
# `query_logs #8 $.logs[0]` or `lookup_knowledge #2 runbooks/high-cpu.md`: a tool, its call, a path.
REFERENCE = re.compile(
    rf"(?<![\w])(?P<tool>{_TOOLS}) #(?P<id>\d+)(?: (?P<path>\$[^\s、）<]*|[\w./-]+\.\w+))?"
)
EVIDENCE_LINE = re.compile(r"证据：「[^」]*」（来源：(?P<refs>[^）]+)）")
PLACEHOLDER = re.compile("\x00(\\d+)\x00")


class _Rewriter:
    def __init__(self, references: AnswerReferences) -> None:
        self.references = references
        self.markup: list[str] = []

    def keep(self, html: str) -> str:
        """Markup set aside until the words are rewritten, so no rewrite reaches into it."""
        self.markup.append(html)
        return f"\x00{len(self.markup) - 1}\x00"

    def reference(self, match: re.Match, *, linked: bool = False) -> str:
        invocation_id, path = int(match["id"]), match["path"] or ""
        label = escape(
            reference_label(
                tool_name=match["tool"],
                invocation_id=invocation_id,
                raw_path=path,
                source=self.references.sources.get(invocation_id, ""),
            )
        )
        if linked:
            anchor = evidence_anchor(invocation_id=invocation_id, raw_path=path)
            return self.keep(f'<a class="ref" href="#{anchor}" title="{match[0]}">{label}</a>')
        return self.keep(f'<span class="ref" title="{match[0]}">{label}</span>')

    def evidence_line(self, match: re.Match) -> str:
        """An evidence line whose every reference is a card on the page links to them, unquoted."""
        refs = list(REFERENCE.finditer(match["refs"]))
        shown = self.references.cards
        if not refs or any((int(ref["id"]), ref["path"] or "") not in shown for ref in refs):
            return match[0]
        return "证据：" + "、".join(self.reference(ref, linked=True) for ref in refs)

    def words(self, text: str) -> str:
        return token_words(REFERENCE.sub(self.reference, text))

    def __call__(self, escaped: str) -> str:
        escaped = EVIDENCE_LINE.sub(self.evidence_line, escaped)
        text = words_outside_quotes(escaped, self.words)
        return PLACEHOLDER.sub(lambda match: self.markup[int(match[1])], text)


def engineer_rewrite(escaped: str, *, references: AnswerReferences) -> str:
    return _Rewriter(references)(escaped)


@register.filter(name="engineer_markdown")
def engineer_markdown(text: str, references: AnswerReferences | None = None) -> SafeString:
    """An answer or report for the engineer: `safe_markdown` with the engineer's wording."""
    rewrite = partial(engineer_rewrite, references=references or AnswerReferences())
    # Safe: markdown_to_html escapes the whole input first; the rewrite adds only its fixed tags.
    return mark_safe(markdown_to_html(text, rewrite=rewrite))


@register.filter(name="engineer_words")
def engineer_words(text: str) -> SafeString:
    """A plain label or claim text (no Markdown) in the engineer's wording."""
    return mark_safe(engineer_rewrite(escape(text or ""), references=AnswerReferences()))


@register.filter(name="verdict_word")
def verdict_word(verdict: str) -> str:
    return VERDICT_WORDS.get(verdict, verdict)


@register.filter(name="state_word")
def state_word(state: str) -> str:
    return STATE_WORDS.get(state, state)
