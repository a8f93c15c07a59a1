"""Slack incoming webhook: `text` (the notification's words) and Block Kit `blocks`.

No signature: the webhook's URL is the credential. Slack answers `ok` when it took the message and an
error word (`invalid_blocks`, `no_service`, …) otherwise. Limits: 50 blocks, a header of 150
characters, a section's or context element's text of 3000.

The notice's texts go into `plain_text` objects, which Slack shows as written; `text` is `mrkdwn`, so
there `&`, `<` and `>` are escaped as Slack documents: `<!channel>` or `<http://evil|x>` stays text.
"""

from __future__ import annotations

from aiops.channels.base import ERROR_CHARS, Channel, is_absolute
from aiops.channels.notice import Notice, NoticeAlert, clipped
from diagnosis.models import DiagnosisSession

HEADER_CHARS = 150
TEXT_CHARS = 3000


class SlackChannel(Channel):
    name = "slack"
    url_setting = "NOTIFY_SLACK_URL"

    def payload(self, *, report: DiagnosisSession, notice: Notice) -> dict:
        # At most 10 alerts of 3 blocks each and 5 blocks around them: within Slack's 50.
        return blocks_message(notice)

    def refusal(self, *, status: int, text: str) -> str:
        return "" if status < 300 and text.strip() == "ok" else f"HTTP {status}: {text[:ERROR_CHARS]}"


def slack_escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def blocks_message(notice: Notice) -> dict:
    blocks = [
        {"type": "header", "text": _plain(clipped(notice.title, HEADER_CHARS))},
        {"type": "section", "text": _plain(f"结论：{notice.conclusion}")},
    ]
    for alert in notice.listed:
        blocks += [{"type": "divider"}, *_alert_blocks(notice, alert)]
    if unlisted := notice.unlisted_line(len(notice.listed)):
        blocks += [{"type": "divider"}, {"type": "section", "text": _plain(unlisted)}]
    if is_absolute(notice.report_url):
        blocks.append({"type": "section", "text": _link("查看完整报告", notice.report_url)})
    else:
        blocks.append({"type": "context", "elements": [_plain(f"报告 {notice.report_id}")]})
    return {
        "text": slack_escaped(clipped(f"{notice.title}：{notice.conclusion}", TEXT_CHARS)),
        "blocks": blocks,
    }


def _alert_blocks(notice: Notice, alert: NoticeAlert) -> list[dict]:
    conclusion = notice.alert_conclusion(alert)
    lines = [alert.label, f"结论：{conclusion}" if conclusion else ""]
    context = [_plain(alert.state_line)]
    if is_absolute(alert.session_url):
        context.append(_link("查看会话", alert.session_url))
    elif alert.session_id:
        context.append(_plain(f"会话 {alert.session_id}"))
    return [
        {"type": "section", "text": _plain("\n".join(line for line in lines if line))},
        {"type": "context", "elements": context},
    ]


def _plain(text: str) -> dict:
    return {"type": "plain_text", "text": text[:TEXT_CHARS], "emoji": False}


def _link(words: str, url: str) -> dict:
    """A link of ours: `words` fixed, the address escaped for mrkdwn."""
    return {"type": "mrkdwn", "text": f"<{slack_escaped(url)}|{words}>"}
