"""The engineer's wording of labels, claims and a tool call's result (issue 25 item 5): verdicts,
output types and states as words (`presenters.wording.token_words`). Tool and source names are not
rewritten here: code writes them in words where it writes the text (a no-hit, a gap, a tool session's
result), and text stored before is shown as written. Quoted excerpts (「…」) and code spans are the
sources' own text and stay as they are.

References are never read back out of text: an answer and an analysis's report are rendered from their
records by `presenters.answer`, which names each reference from its typed ref.
"""

from __future__ import annotations

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from diagnosis.presenters.markdown import markdown_to_html
from diagnosis.presenters.wording import STATE_WORDS, VERDICT_WORDS, words_outside_quotes

register = template.Library()


@register.filter(name="engineer_markdown")
def engineer_markdown(text: str) -> SafeString:
    """A tool call's result (stored as text) for the engineer: `safe_markdown` with the engineer's words."""
    # Safe: markdown_to_html escapes the whole input first; the words add no markup.
    return mark_safe(markdown_to_html(text, rewrite=words_outside_quotes))


@register.filter(name="engineer_words")
def engineer_words(text: str) -> SafeString:
    """A plain label or claim text (no Markdown) in the engineer's wording."""
    return mark_safe(words_outside_quotes(escape(text or "")))


@register.filter(name="verdict_word")
def verdict_word(verdict: str) -> str:
    return VERDICT_WORDS.get(verdict, verdict)


@register.filter(name="state_word")
def state_word(state: str) -> str:
    return STATE_WORDS.get(state, state)
