"""WeCom group robot (企业微信群机器人): a Markdown message (`msgtype: markdown`, `content`).

The robot has no signature: its webhook's `key` is the credential. The service answers
`{"errcode": 0, …}` when it took the message, another code (93000: the key; 40058: too long) with HTTP
200 when not; the content may hold 4096 bytes of UTF-8. Texts are escaped as `aiops.channels.markdown`
says.
"""

from __future__ import annotations

from aiops.channels.base import Channel, code_refusal, fitted
from aiops.channels.markdown import notice_markdown
from aiops.channels.notice import Notice
from diagnosis.models import DiagnosisSession

MOST_CONTENT_BYTES = 4096


class WeComChannel(Channel):
    name = "wecom"
    url_setting = "NOTIFY_WECOM_URL"

    def payload(self, *, report: DiagnosisSession, notice: Notice) -> dict:
        content = fitted(
            lambda listed: notice_markdown(notice, listed=listed),
            most=len(notice.listed),
            fits=lambda text: len(text.encode()) <= MOST_CONTENT_BYTES,
        )
        return {"msgtype": "markdown", "markdown": {"content": content}}

    def refusal(self, *, status: int, text: str) -> str:
        return code_refusal(status=status, text=text, fields=("errcode",))
