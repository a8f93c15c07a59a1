"""A tiny Markdown subset for answers: the text is escaped first, then headings, lists, tables, bold and code.

Answers come from models and tools, so no HTML in them may ever reach the page: everything is
escaped before any tag is added, and the only tags added are the ones below (no links, no images,
no attributes). `engineer_text` adds its reference tags through the same escaped-first path.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*$")
BULLET = re.compile(r"^(\s*)[-*+]\s+(.+)$")
NUMBERED = re.compile(r"^(\s*)\d+[.)]\s+(.+)$")
# An item indented this far belongs under the previous one (shown indented, not as a new list).
NESTED_INDENT = 2
FENCE = re.compile(r"^\s*```")
INLINE_CODE = re.compile(r"`([^`]+)`")
BOLD = re.compile(r"\*\*(.+?)\*\*")
# Pipe tables (the AIOps report's alert table): `| a | b |` rows; a `|---|` rule ends the header.
TABLE_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
TABLE_RULE = re.compile(r"^\s*\|(?:\s*:?-{3,}:?\s*\|)+\s*$")
CELL_SEPARATOR = re.compile(r"(?<!\\)\|")
# The answer sits under the page's own headings: Markdown "#" becomes <h3>, never a page title.
HEADING_OFFSET = 2


# Rewrites escaped text outside code spans (the engineer's wording); it may add only fixed tags.
Rewrite = Callable[[str], str]


def _inline(text: str, rewrite: Rewrite | None = None) -> str:
    """Bold outside code spans, code spans kept literal."""
    parts = INLINE_CODE.split(text)
    for index, part in enumerate(parts):
        if index % 2:
            parts[index] = f"<code>{part}</code>"
        else:
            bold = BOLD.sub(r"<strong>\1</strong>", part)
            parts[index] = rewrite(bold) if rewrite else bold
    return "".join(parts)


class _Writer:
    def __init__(self, rewrite: Rewrite | None = None) -> None:
        self.rewrite = rewrite
        self.html: list[str] = []
        self.paragraph: list[str] = []
        self.list_tag = ""
        self.table: list[list[str]] = []
        self.header_rows = 0

    def flush(self) -> None:
        if self.paragraph:
            self.html.append("<p>" + "<br>".join(self.inline(line) for line in self.paragraph) + "</p>")
            self.paragraph = []
        if self.list_tag:
            self.html.append(f"</{self.list_tag}>")
            self.list_tag = ""
        if self.table:
            self.html.append(self._table_html())
            self.table, self.header_rows = [], 0

    def inline(self, text: str) -> str:
        return _inline(text, self.rewrite)

    def table_row(self, line: str) -> None:
        if not self.table:
            self.flush()
        if TABLE_RULE.match(line):
            self.header_rows = 1 if len(self.table) == 1 else self.header_rows
            return
        cells = CELL_SEPARATOR.split(TABLE_ROW.match(line).group(1))
        self.table.append([cell.strip().replace("\\|", "|") for cell in cells])

    def _table_html(self) -> str:
        def row(cells: list[str], tag: str) -> str:
            return "<tr>" + "".join(f"<{tag}>{self.inline(cell)}</{tag}>" for cell in cells) + "</tr>"

        head = "".join(row(cells, "th") for cells in self.table[: self.header_rows])
        body = "".join(row(cells, "td") for cells in self.table[self.header_rows :])
        return "<table>" + (f"<thead>{head}</thead>" if head else "") + f"<tbody>{body}</tbody></table>"

    def list_item(self, tag: str, indent: str, text: str) -> None:
        nested = len(indent.expandtabs(4)) >= NESTED_INDENT and self.list_tag
        if not nested and self.list_tag != tag:
            self.flush()
            self.html.append(f"<{tag}>")
            self.list_tag = tag
        self.html.append(
            f'<li class="nested">{self.inline(text)}</li>' if nested else f"<li>{self.inline(text)}</li>"
        )


def markdown_to_html(text: str, *, rewrite: Rewrite | None = None) -> str:
    writer = _Writer(rewrite)
    code: list[str] | None = None
    for line in escape(text or "").splitlines():
        if FENCE.match(line):
            if code is None:
                writer.flush()
                code = []
            else:
                writer.html.append("<pre><code>" + "\n".join(code) + "</code></pre>")
                code = None
            continue
        if code is not None:
            code.append(line)
            continue
        heading, bullet, numbered = HEADING.match(line), BULLET.match(line), NUMBERED.match(line)
        if heading:
            writer.flush()
            level = min(len(heading.group(1)) + HEADING_OFFSET, 6)
            writer.html.append(f"<h{level}>{writer.inline(heading.group(2))}</h{level}>")
        elif bullet:
            writer.list_item("ul", bullet.group(1), bullet.group(2))
        elif numbered:
            writer.list_item("ol", numbered.group(1), numbered.group(2))
        elif TABLE_ROW.match(line):
            writer.table_row(line)
        elif not line.strip():
            writer.flush()
        else:
            if writer.list_tag or writer.table:
                writer.flush()
            writer.paragraph.append(line.strip())
    if code is not None:
        writer.html.append("<pre><code>" + "\n".join(code) + "</code></pre>")
    writer.flush()
    return "\n".join(writer.html)


@register.filter(name="safe_markdown")
def safe_markdown(text: str) -> SafeString:
    # Safe because markdown_to_html escapes the whole input before adding its own fixed tags.
    return mark_safe(markdown_to_html(text))
