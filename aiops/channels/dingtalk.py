"""DingTalk custom robot (自定义机器人): a Markdown message (`msgtype: markdown`, `title` and `text`).

Signed when the robot has 加签 on: `timestamp` (milliseconds) and `sign` = base64(HMAC-SHA256 keyed with
the secret over "{timestamp}\\n{secret}"), URL-encoded, appended to the webhook's query. The service
answers `{"errcode": 0, …}` when it took the message, another code (310000: the signature) with HTTP
200 when not; a message may hold 20,000 bytes. Texts are escaped as `aiops.channels.markdown` says.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from urllib.parse import urlencode

from aiops.channels.base import Channel, Outgoing, code_refusal, fitted, json_bytes
from aiops.channels.markdown import notice_markdown
from aiops.channels.notice import Notice, clipped
from diagnosis.models import DiagnosisSession

MOST_BYTES = 20000


class DingTalkChannel(Channel):
    name = "dingtalk"
    url_setting = "NOTIFY_DINGTALK_URL"
    secret_setting = "NOTIFY_DINGTALK_SECRET"

    def payload(self, *, report: DiagnosisSession, notice: Notice) -> dict:
        return fitted(
            lambda listed: markdown_message(notice, listed=listed),
            most=len(notice.listed),
            fits=lambda message: len(json_bytes(message)) <= MOST_BYTES,
        )

    def request(self, *, url: str, secret: str | None, payload: dict, now: float) -> Outgoing:
        if secret:
            timestamp = int(now * 1000)
            signature = urlencode({"timestamp": timestamp, "sign": dingtalk_sign(secret, timestamp)})
            url = f"{url}{'&' if '?' in url else '?'}{signature}"
        return super().request(url=url, secret=secret, payload=payload, now=now)

    def refusal(self, *, status: int, text: str) -> str:
        return code_refusal(status=status, text=text, fields=("errcode",))


def dingtalk_sign(secret: str, timestamp: int) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}\n{secret}".encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def markdown_message(notice: Notice, *, listed: int) -> dict:
    # The title is what the conversation list shows: plain text, read as no Markdown.
    return {
        "msgtype": "markdown",
        "markdown": {"title": clipped(notice.title, 64), "text": notice_markdown(notice, listed=listed)},
    }
