"""The Markdown message DingTalk and WeCom robots take, and the escaping of every text in it.

Both render a small Markdown with some HTML (`<font>`; WeCom mentions with `<@userid>`). A text of the
notice becomes one line in which nothing is syntax: `&`, `<` and `>` as HTML entities, the characters
of emphasis, code, links and images (`\\ ` * _ [ ] ( ) ~ | !`) backslash-escaped. `[x](http://evil)`
then shows as written instead of linking, and `<at user_id="all">` or `<@all>` mentions no one.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from aiops.channels.base import is_absolute
from aiops.channels.notice import Notice, NoticeAlert

MARKDOWN_SYNTAX = re.compile(r"([\\`*_\[\]()~|!])")


def markdown_text(text: str) -> str:
    """`text` on one line, shown as written by a Markdown renderer that also reads HTML."""
    line = " ".join(text.split())
    line = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return MARKDOWN_SYNTAX.sub(r"\\\1", line)


def markdown_link(words: str, url: str) -> str:
    """A link of ours (`words` fixed text): the address's brackets and spaces percent-encoded."""
    return f"[{words}]({quote(url, safe=':/?#&=%~.-_')})"


def notice_markdown(notice: Notice, *, listed: int) -> str:
    """The notice as Markdown paragraphs: the title, the conclusion, each listed alert, the report."""
    paragraphs = [f"### {markdown_text(notice.title)}", f"**结论**：{markdown_text(notice.conclusion)}"]
    for alert in notice.listed[:listed]:
        paragraphs += ["---", *_alert_paragraphs(notice, alert)]
    if unlisted := notice.unlisted_line(listed):
        paragraphs += ["---", markdown_text(unlisted)]
    paragraphs.append(
        markdown_link("查看完整报告", notice.report_url)
        if is_absolute(notice.report_url)
        else f"报告 {markdown_text(notice.report_id)}"
    )
    return "\n\n".join(paragraphs)


def _alert_paragraphs(notice: Notice, alert: NoticeAlert) -> list[str]:
    paragraphs = [f"**{markdown_text(alert.label)}**"]
    if conclusion := notice.alert_conclusion(alert):
        paragraphs.append(f"结论：{markdown_text(conclusion)}")
    paragraphs.append(markdown_text(alert.state_line))
    if is_absolute(alert.session_url):
        paragraphs.append(markdown_link("查看会话", alert.session_url))
    elif alert.session_id:
        paragraphs.append(f"会话 {markdown_text(alert.session_id)}")
    return paragraphs
