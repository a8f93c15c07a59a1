"""Feishu / Lark custom bot (自定义机器人): an interactive card (`msg_type: interactive`).

Signed when the bot has 签名校验 on: `timestamp` (seconds) and `sign` = base64(HMAC-SHA256 keyed with
"{timestamp}\\n{secret}" over nothing) in the JSON body. The service answers `{"code": 0, …}` when it
took the message, another code (19021: the signature) with HTTP 200 when not; a body may hold 20 KB.

Every text of the notice goes into `plain_text` elements, which Feishu shows as written: a label such
as `<at user_id="all">` or `[x](http://evil)` stays text, never a mention or a link (`lark_md` would
read both). The links are buttons with the session's address.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from aiops.channels.base import Channel, Outgoing, code_refusal, fitted, is_absolute, json_bytes
from aiops.channels.notice import Event, Notice, NoticeAlert
from diagnosis.models import DiagnosisSession

MOST_BYTES = 20 * 1000
# The signature's two fields, added at each try: the body is measured with room for them.
SIGNATURE_BYTES = 100


class FeishuChannel(Channel):
    name = "feishu"
    url_setting = "NOTIFY_FEISHU_URL"
    secret_setting = "NOTIFY_FEISHU_SECRET"

    def payload(self, *, report: DiagnosisSession, notice: Notice) -> dict:
        return fitted(
            lambda listed: card_message(notice, listed=listed),
            most=len(notice.listed),
            fits=lambda message: len(json_bytes(message)) + SIGNATURE_BYTES <= MOST_BYTES,
        )

    def request(self, *, url: str, secret: str | None, payload: dict, now: float) -> Outgoing:
        if secret:
            timestamp = int(now)
            payload = {"timestamp": str(timestamp), "sign": feishu_sign(secret, timestamp), **payload}
        return super().request(url=url, secret=secret, payload=payload, now=now)

    def refusal(self, *, status: int, text: str) -> str:
        # Lark's older answers to a message taken carry `StatusCode` alone.
        return code_refusal(status=status, text=text, fields=("code", "StatusCode"))


def feishu_sign(secret: str, timestamp: int) -> str:
    key = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


def card_message(notice: Notice, *, listed: int) -> dict:
    elements = [_text(f"结论：{notice.conclusion}")]
    for alert in notice.listed[:listed]:
        elements += [{"tag": "hr"}, *_alert_elements(notice, alert)]
    if unlisted := notice.unlisted_line(listed):
        elements += [{"tag": "hr"}, _text(unlisted)]
    if is_absolute(notice.report_url):
        elements += [{"tag": "hr"}, _button("查看完整报告", notice.report_url, kind="primary")]
    else:
        elements.append(_text(f"报告 {notice.report_id}"))
    return {
        "msg_type": "interactive",
        "card": {
            "config": {"wide_screen_mode": True},
            "header": {
                "title": {"tag": "plain_text", "content": notice.title},
                "template": _colour(notice),
            },
            "elements": elements,
        },
    }


def _alert_elements(notice: Notice, alert: NoticeAlert) -> list[dict]:
    conclusion = notice.alert_conclusion(alert)
    lines = [alert.label, f"结论：{conclusion}" if conclusion else "", alert.state_line]
    elements = [_text("\n".join(line for line in lines if line))]
    if is_absolute(alert.session_url):
        elements.append(_button("查看会话", alert.session_url, kind="default"))
    elif alert.session_id:
        elements.append(_text(f"会话 {alert.session_id}"))
    return elements


def _text(content: str) -> dict:
    return {"tag": "div", "text": {"tag": "plain_text", "content": content}}


def _button(words: str, url: str, *, kind: str) -> dict:
    button = {"tag": "button", "text": {"tag": "plain_text", "content": words}, "type": kind, "url": url}
    return {"tag": "action", "actions": [button]}


def _colour(notice: Notice) -> str:
    if notice.event == Event.FLAPPING:
        return "orange"
    return "red" if notice.firing else "green"
