"""The answer's Markdown as HTML: CommonMark (markdown-it-py, raw HTML off) then an allow-list (nh3).

Answers come from models and tools, so no HTML in them may ever reach the page: markdown-it escapes
every raw tag, links and images are not parsed (they stay text), and nh3 keeps only the plain tags
below with no attributes, whatever the parser emitted.
"""

from __future__ import annotations

import nh3
from django import template
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

register = template.Library()

# The answer sits under the page's own headings: Markdown "#" becomes <h3>, never a page title.
HEADING_OFFSET = 2
ALLOWED_TAGS = {
    "h3", "h4", "h5", "h6", "p", "br", "ul", "ol", "li", "strong", "em", "code", "pre",
    "table", "thead", "tbody", "tr", "th", "td", "blockquote", "hr",
}  # fmt: skip

_PARSER = (
    MarkdownIt("commonmark", {"html": False, "breaks": True})
    .enable("table")
    .disable(["link", "image", "autolink", "linkify", "html_inline", "html_block"], ignoreInvalid=True)
)


def markdown_to_html(text: str) -> str:
    tokens = _PARSER.parse(text or "")
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + HEADING_OFFSET, 6)}"
    html = _PARSER.renderer.render(tokens, _PARSER.options, {})
    return nh3.clean(html, tags=ALLOWED_TAGS, attributes={}, link_rel=None).strip()


@register.filter(name="safe_markdown")
def safe_markdown(text: str) -> SafeString:
    # Safe because nh3 keeps only the attribute-free tags of ALLOWED_TAGS.
    return mark_safe(markdown_to_html(text))
