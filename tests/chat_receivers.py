"""Local stand-ins for the chat services' bot webhooks, for the tests: Feishu/Lark custom bot, DingTalk
robot, WeCom group robot, Slack incoming webhook.

Each binds 127.0.0.1 on a free port and checks a request as its service documents it, answering as
the service does: its address (hook token, `access_token`, `key`, Slack's path), its signature where
it signs (Feishu: `timestamp` seconds and `sign` in the body, HMAC-SHA256 keyed with
"{timestamp}\\n{secret}" over nothing; DingTalk: `timestamp` milliseconds and `sign` in the query,
HMAC-SHA256 keyed with the secret over "{timestamp}\\n{secret}"; both within an hour), the message's
shape and the size limit. A refusal is HTTP 200 with an error code (Feishu `code`, DingTalk and WeCom
`errcode`) or, for Slack, an HTTP error with a word. The checks are written here from the services'
documents, apart from the product's code.

`visible_lines(body)` reads a received message as its app shows it: text lines, a link as
"words → address" (the DingTalk and WeCom Markdown rendered by markdown-it with HTML on, as those apps
also read HTML).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import re
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from markdown_it import MarkdownIt

SIGNATURE_WINDOW_SECONDS = 3600


@dataclass
class Received:
    path: str
    query: dict[str, str]
    body: dict
    status: int
    answer: str
    accepted: bool


class ChatService(ABC):
    """One service's documented checks and answers."""

    # The answer to a message taken: (HTTP status, body).
    ok: tuple[int, str]

    def __init__(self, *, secret: str | None = None) -> None:
        self.secret = secret
        self.received: list[Received] = []
        # Answers given instead of the checks' to the next requests: (HTTP status, body).
        self.answers: list[tuple[int, str]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                parts = urlsplit(self.path)
                query = {name: values[0] for name, values in parse_qs(parts.query).items()}
                with receiver.lock:
                    if receiver.answers:
                        status, answer = receiver.answers.pop(0)
                    else:
                        status, answer = receiver.answer(path=parts.path, query=query, raw=raw)
                    try:
                        body = json.loads(raw)
                    except ValueError:
                        body = {}
                    # Recorded before answering: once the sender has its answer, the test sees the body.
                    accepted = (status, answer) == receiver.ok
                    receiver.received.append(Received(parts.path, query, body, status, answer, accepted))
                self.send_response(status)
                self.send_header(
                    "Content-Type", "application/json" if answer.startswith("{") else "text/plain"
                )
                self.end_headers()
                self.wfile.write(answer.encode())

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    @abstractmethod
    def url(self) -> str:
        """The bot's webhook address, its credential in it."""

    @abstractmethod
    def answer(self, *, path: str, query: dict[str, str], raw: bytes) -> tuple[int, str]:
        """(HTTP status, body) the service answers this request with."""

    @staticmethod
    @abstractmethod
    def visible_lines(body: dict) -> list[str]:
        """The message as the app shows it."""

    def __enter__(self) -> ChatService:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _recent(timestamp_seconds: float) -> bool:
    return abs(time.time() - timestamp_seconds) <= SIGNATURE_WINDOW_SECONDS


def _json(value: dict) -> str:
    return json.dumps(value, ensure_ascii=False)


# Feishu's answers, as its custom bot guide shows them.
FEISHU_OK = _json({"StatusCode": 0, "StatusMessage": "success", "code": 0, "data": {}, "msg": "success"})
FEISHU_BAD_REQUEST = _json({"code": 9499, "data": {}, "msg": "Bad Request"})
FEISHU_BAD_SIGN = _json(
    {
        "code": 19021,
        "data": {},
        "msg": "sign match fail or timestamp is not within one hour from current time",
    }
)
FEISHU_BAD_TOKEN = _json(
    {"code": 19001, "data": {}, "msg": "param invalid: incoming webhook access token invalid"}
)
FEISHU_ELEMENTS = {"div", "hr", "action", "note", "markdown", "img"}
FEISHU_TEXT_TAGS = {"plain_text", "lark_md"}


class FeishuBot(ChatService):
    ok = (200, FEISHU_OK)
    token = "f1e2d3c4-hook-token"
    most_bytes = 20 * 1000

    @property
    def url(self) -> str:
        return f"{self.origin}/open-apis/bot/v2/hook/{self.token}"

    def answer(self, *, path: str, query: dict[str, str], raw: bytes) -> tuple[int, str]:
        if path != f"/open-apis/bot/v2/hook/{self.token}":
            return 200, FEISHU_BAD_TOKEN
        if len(raw) > self.most_bytes:
            return 200, FEISHU_BAD_REQUEST
        try:
            body = json.loads(raw)
        except ValueError:
            return 200, FEISHU_BAD_REQUEST
        if self.secret is not None and not self._signed(body):
            return 200, FEISHU_BAD_SIGN
        return (200, FEISHU_OK) if self._card_ok(body) else (200, FEISHU_BAD_REQUEST)

    def _signed(self, body: dict) -> bool:
        timestamp, sign = str(body.get("timestamp", "")), body.get("sign")
        if not timestamp.isdigit() or not _recent(int(timestamp)):
            return False
        string_to_sign = f"{timestamp}\n{self.secret}"
        expected = base64.b64encode(hmac.new(string_to_sign.encode(), b"", hashlib.sha256).digest()).decode()
        return hmac.compare_digest(expected, sign or "")

    @staticmethod
    def _card_ok(body: dict) -> bool:
        card = body.get("card")
        if body.get("msg_type") != "interactive" or not isinstance(card, dict):
            return False
        title = (card.get("header") or {}).get("title") or {}
        if title.get("tag") not in FEISHU_TEXT_TAGS or not title.get("content"):
            return False
        elements = card.get("elements")
        if not isinstance(elements, list) or not elements:
            return False
        for element in elements:
            if element.get("tag") not in FEISHU_ELEMENTS:
                return False
            if element["tag"] == "div" and (element.get("text") or {}).get("tag") not in FEISHU_TEXT_TAGS:
                return False
            for action in element.get("actions") or []:
                if not str(action.get("url", "")).startswith(("https://", "http://")):
                    return False
        return True

    @staticmethod
    def visible_lines(body: dict) -> list[str]:
        card = body["card"]
        lines = [card["header"]["title"]["content"]]
        for element in card["elements"]:
            if element["tag"] == "div":
                lines += element["text"]["content"].split("\n")
            for action in element.get("actions") or []:
                lines.append(f"{action['text']['content']} → {action['url']}")
        return lines


def _errcode(code: int, message: str) -> str:
    return _json({"errcode": code, "errmsg": message})


ERRCODE_OK = _errcode(0, "ok")


class DingTalkRobot(ChatService):
    ok = (200, ERRCODE_OK)
    access_token = "d1n9a55e55t0ken"
    most_bytes = 20000

    @property
    def url(self) -> str:
        return f"{self.origin}/robot/send?access_token={self.access_token}"

    def answer(self, *, path: str, query: dict[str, str], raw: bytes) -> tuple[int, str]:
        if path != "/robot/send" or query.get("access_token") != self.access_token:
            return 200, _errcode(300001, "token is not exist")
        if self.secret is not None and not self._signed(query):
            return 200, _errcode(
                310000, "sign not match, more: [https://ding-doc.dingtalk.com/doc#/serverapi2/qf2nxq]"
            )
        if len(raw) > self.most_bytes:
            return 200, _errcode(460101, "message too long, exceed 20000 bytes")
        try:
            body = json.loads(raw)
        except ValueError:
            return 200, _errcode(40035, "缺少参数 json")
        markdown = body.get("markdown") or {}
        if body.get("msgtype") != "markdown" or not markdown.get("title") or not markdown.get("text"):
            return 200, _errcode(40035, "缺少参数 markdown")
        return self.ok

    def _signed(self, query: dict[str, str]) -> bool:
        timestamp, sign = query.get("timestamp", ""), query.get("sign", "")
        if not timestamp.isdigit() or not _recent(int(timestamp) / 1000):
            return False
        string_to_sign = f"{timestamp}\n{self.secret}"
        digest = hmac.new(self.secret.encode(), string_to_sign.encode(), hashlib.sha256).digest()
        return hmac.compare_digest(base64.b64encode(digest).decode(), sign)

    @staticmethod
    def visible_lines(body: dict) -> list[str]:
        return _markdown_lines(body["markdown"]["text"])


class WeComRobot(ChatService):
    ok = (200, ERRCODE_OK)
    key = "693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa"
    most_content_bytes = 4096

    @property
    def url(self) -> str:
        return f"{self.origin}/cgi-bin/webhook/send?key={self.key}"

    def answer(self, *, path: str, query: dict[str, str], raw: bytes) -> tuple[int, str]:
        if path != "/cgi-bin/webhook/send" or query.get("key") != self.key:
            return 200, _errcode(93000, "invalid webhook url, hint: [1714538355214402498975046]")
        try:
            body = json.loads(raw)
        except ValueError:
            return 200, _errcode(40001, "invalid json")
        content = (body.get("markdown") or {}).get("content")
        if body.get("msgtype") != "markdown" or not isinstance(content, str) or not content:
            return 200, _errcode(40008, "invalid message type")
        if len(content.encode()) > self.most_content_bytes:
            return 200, _errcode(40058, "markdown.content exceed max length 4096. invalid Request Parameter")
        return self.ok

    @staticmethod
    def visible_lines(body: dict) -> list[str]:
        return _markdown_lines(body["markdown"]["content"])


SLACK_BLOCKS = {"header", "section", "context", "divider", "actions"}


class SlackWebhook(ChatService):
    ok = (200, "ok")
    path = "/services/T0000TEAM/B0000HOOK/abcdEFGHijklMNOP"

    @property
    def url(self) -> str:
        return f"{self.origin}{self.path}"

    def answer(self, *, path: str, query: dict[str, str], raw: bytes) -> tuple[int, str]:
        if path != self.path:
            return 404, "no_service"
        try:
            body = json.loads(raw)
        except ValueError:
            return 400, "invalid_payload"
        blocks = body.get("blocks")
        if not body.get("text") and not blocks:
            return 400, "no_text"
        if blocks is not None and not self._blocks_ok(blocks):
            return 400, "invalid_blocks"
        return 200, "ok"

    @staticmethod
    def _blocks_ok(blocks: list) -> bool:
        if not isinstance(blocks, list) or len(blocks) > 50:
            return False
        for block in blocks:
            kind = block.get("type")
            if kind not in SLACK_BLOCKS:
                return False
            texts = [block["text"]] if "text" in block else block.get("elements") or []
            if kind == "header" and (texts[0]["type"] != "plain_text" or len(texts[0]["text"]) > 150):
                return False
            if kind == "context" and len(texts) > 10:
                return False
            if any(
                text["type"] not in {"plain_text", "mrkdwn"} or len(text["text"]) > 3000 for text in texts
            ):
                return False
        return True

    @staticmethod
    def visible_lines(body: dict) -> list[str]:
        lines = []
        for block in body["blocks"]:
            for text in [block["text"]] if "text" in block else block.get("elements") or []:
                shown = text["text"]
                if text["type"] == "mrkdwn":
                    shown = html.unescape(re.sub(r"<([^|>]+)\|([^>]+)>", r"\2 → \1", shown))
                lines += shown.split("\n")
        return lines


class _TextLines(HTMLParser):
    """HTML as the lines an app shows: a block per line, a link as "words → address"; `tags` every
    element the Markdown made (a mention or a font let through would be one)."""

    BLOCKS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "hr", "br", "blockquote"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = [""]
        self.href: str | None = None
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        if tag in self.BLOCKS:
            self.lines.append("")
        if tag == "a":
            self.href = dict(attrs).get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self.lines[-1] += f" → {self.href}"
            self.href = None

    def handle_data(self, data: str) -> None:
        self.lines[-1] += data


MARKDOWN = MarkdownIt("commonmark", {"html": True})


def markdown_rendered(text: str) -> _TextLines:
    """Markdown as DingTalk and WeCom show it: its lines, links and elements."""
    parser = _TextLines()
    parser.feed(MARKDOWN.render(text))
    return parser


def markdown_links(text: str) -> list[str]:
    """The addresses the Markdown links to."""
    return re.findall(r'href="([^"]*)"', MARKDOWN.render(text))


def _markdown_lines(text: str) -> list[str]:
    return [line.strip() for line in markdown_rendered(text).lines if line.strip()]
