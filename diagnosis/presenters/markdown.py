"""The answer's Markdown as HTML: CommonMark (markdown-it-py, raw HTML off) then an allow-list (nh3).

Answers come from models and tools, so no HTML in them may ever reach the page: markdown-it escapes
every raw tag, links and images are not parsed (they stay text), and nh3 keeps only the plain tags
below, with attributes only on the reference tags the engineer's wording writes into escaped text.
"""

from __future__ import annotations

from collections.abc import Callable

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

# The answer sits under the page's own headings: Markdown "#" becomes <h3>, never a page title.
HEADING_OFFSET = 2
ALLOWED_TAGS = {
    "h3", "h4", "h5", "h6", "p", "br", "ul", "ol", "li", "strong", "em", "code", "pre",
    "table", "thead", "tbody", "tr", "th", "td", "blockquote", "hr", "span", "a",
}  # fmt: skip
# The engineer's references (`<span class="ref" title>`, `<a class="ref" href="#evidence-…">`).
ALLOWED_ATTRIBUTES = {"span": {"class", "title"}, "a": {"class", "href", "title"}}
# Rewrites escaped text outside code spans (the engineer's wording); it may add only the tags above.
Rewrite = Callable[[str], str]

_PARSER = (
    MarkdownIt("commonmark", {"html": False, "breaks": True})
    .enable("table")
    .disable(["link", "image", "autolink", "linkify", "html_inline", "html_block"], ignoreInvalid=True)
)


def _text(renderer, tokens, index, options, env) -> str:
    escaped = escapeHtml(tokens[index].content)
    rewrite = env.get("rewrite")
    return rewrite(escaped) if rewrite else escaped


_PARSER.add_render_rule("text", _text)


def markdown_to_html(text: str, *, rewrite: Rewrite | None = None) -> str:
    env = {"rewrite": rewrite}
    tokens = _PARSER.parse(text or "", env)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + HEADING_OFFSET, 6)}"
    html = _PARSER.renderer.render(tokens, _PARSER.options, env)
    return nh3.clean(
        html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, link_rel=None, url_schemes=set()
    ).strip()
