"""The one place an answer record becomes what a page shows (CONTRACTS §21).

The Markdown is written by the record's own writer (`diagnosis.pipeline.answer.answer_markdown`, which
the session runner stores as `answer`, below this layer); the page writes it with `PageRefs`: each
reference named for the engineer (`Loki 日志 #8 第 1 条`, `wording.reference_label`) with the raw
reference in its tooltip, and an evidence line whose record is a card on the page linked to that card
instead of quoting the excerpt again. References come from the typed refs: nothing reads them back out
of text. The rest of the text gets the engineer's words for developer tokens (`wording.token_words`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from diagnosis.pipeline.answer import AnswerRecord, AnswerRef, Quote, RawRefs, RefWriter, answer_markdown
from diagnosis.pipeline.routing import OUTPUT_TYPE_LABELS
from diagnosis.presenters.markdown import markdown_to_html
from diagnosis.presenters.wording import (
    AnswerReferences,
    evidence_anchor,
    reference_label,
    words_outside_quotes,
)
from tools.source_names import source_name

# Stands in the Markdown where a reference's markup goes once the text is HTML: private-use
# characters, which neither Markdown, the escaping nor the wording touches, around a number drawn for
# each rendering (a tool's text cannot place a mark of its own).
MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"

# A stored record of another type (it names its `record_type`) written as Markdown with the given
# references. The app that owns the type registers its writer (an analysis's report: `aiops`, in its
# `ready`), as diagnosis imports no app above it.
RecordWriter = Callable[[dict, RefWriter], str]
RECORD_WRITERS: dict[str, RecordWriter] = {}


def record_writer_register(*, record_type: str, writer: RecordWriter) -> None:
    RECORD_WRITERS[record_type] = writer


class PageRefs(RawRefs):
    """References as the chat page shows them; each is kept aside as markup behind a mark."""

    def __init__(self, references: AnswerReferences) -> None:
        self.references = references
        self.markup: list[str] = []
        self.nonce = secrets.token_hex(8)

    def ref(self, ref: AnswerRef) -> str:
        return self._kept(f'<span class="ref" title="{escape(ref.text())}">{self._label(ref)}</span>')

    def evidence(self, quote: Quote) -> str:
        ref = quote.ref
        if (ref.invocation_id, ref.raw_path) not in self.references.cards:
            return super().evidence(quote)
        anchor = evidence_anchor(invocation_id=ref.invocation_id, raw_path=ref.raw_path)
        return self._kept(
            f'<a class="ref" href="#{anchor}" title="{escape(ref.text())}">{self._label(ref)}</a>'
        )

    def source(self, source: str) -> str:
        return source_name(source)

    def output_type(self, output_type: str) -> str:
        """Its label alone, as the page's badges say it."""
        return OUTPUT_TYPE_LABELS[output_type]

    def marked(self, html: str) -> str:
        for index, markup in enumerate(self.markup):
            html = html.replace(self._mark(index), markup)
        return html

    def _label(self, ref: AnswerRef) -> str:
        return escape(
            reference_label(
                tool_name=ref.tool_name,
                invocation_id=ref.invocation_id,
                raw_path=ref.raw_path,
                source=self.references.sources.get(ref.invocation_id, ""),
            )
        )

    def _kept(self, markup: str) -> str:
        self.markup.append(markup)
        return self._mark(len(self.markup) - 1)

    def _mark(self, index: int) -> str:
        return f"{MARK_OPEN}{self.nonce}.{index}{MARK_CLOSE}"


def answer_html(record: AnswerRecord, *, references: AnswerReferences) -> SafeString:
    """The answer on the chat page."""
    refs = PageRefs(references)
    return _page_html(answer_markdown(record, refs=refs), refs)


def stored_answer_html(stored: dict, *, references: AnswerReferences) -> SafeString | None:
    """A session's answer on the page from its stored record, of any registered type; None for a
    session stored before records (its Markdown is shown as written)."""
    record = answer_record_of(stored)
    if record is not None:
        return answer_html(record, references=references)
    writer = RECORD_WRITERS.get(stored.get("record_type", ""))
    if writer is None:
        return None
    refs = PageRefs(references)
    return _page_html(writer(stored, refs), refs)


def _page_html(markdown: str, refs: PageRefs) -> SafeString:
    # Safe: markdown_to_html escapes and allow-lists the text; the marks become only the reference
    # tags built by `refs` from escaped parts.
    return mark_safe(refs.marked(markdown_to_html(markdown, rewrite=words_outside_quotes)))


def answer_review_html(*, stored: dict, markdown: str) -> SafeString:
    """The answer in the admin: from its record with the raw references reviewers look up (a session
    stored before records, an analysis's report: its stored Markdown as written)."""
    record = answer_record_of(stored)
    # Safe: markdown_to_html escapes and allow-lists.
    return mark_safe(markdown_to_html(markdown if record is None else answer_markdown(record)))


def answer_record_of(stored: dict) -> AnswerRecord | None:
    """A session's stored answer record; None for a session stored before answers were kept as
    structure, or for a record of another type (it names its `record_type`: an analysis's report)."""
    return AnswerRecord.model_validate(stored) if stored and "record_type" not in stored else None
