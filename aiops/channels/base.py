"""A channel: where a notice goes, the message format it takes, its signature, and how it answers.

A channel's message is made once, when the notice is queued, and stored unsigned on its delivery; each
try signs it anew (the services refuse a signature older than an hour) and reads the answer, which the
chat services give with HTTP 200 even for an error: a failed delivery is an error code in the body.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from aiops.channels.notice import Notice
from aiops.models import ReportDelivery
from diagnosis.models import DiagnosisSession

ERROR_CHARS = 1000


@dataclass(frozen=True)
class Outgoing:
    """One try's request."""

    url: str
    body: bytes
    headers: dict[str, str]


class Channel(ABC):
    name: ClassVar[str]
    # The `settings.DIAGNOSIS` keys of its address and of its secret (None: the service has none).
    url_setting: ClassVar[str]
    secret_setting: ClassVar[str | None] = None

    @abstractmethod
    def payload(self, *, report: DiagnosisSession, notice: Notice) -> dict:
        """The message of `notice` (of `report`) in this channel's format, unsigned."""

    def request(self, *, url: str, secret: str | None, payload: dict, now: float) -> Outgoing:
        """The try's request at `now` (seconds since the epoch), signed when there is a secret."""
        return Outgoing(url=url, body=json_bytes(payload), headers=dict(JSON_HEADERS))

    @abstractmethod
    def refusal(self, *, status: int, text: str) -> str:
        """What the service's answer says went wrong; "" when it took the message."""

    def shown_url(self, url: str) -> str:
        """The address as the delivery log shows it: a chat bot's path and query are its credential."""
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"

    @property
    def label(self) -> str:
        return ReportDelivery.Channel(self.name).label


JSON_HEADERS = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "aiops-diagnosis"}


def json_bytes(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode()


def http_refusal(status: int, text: str) -> str:
    return f"HTTP {status}: {text[:ERROR_CHARS]}" if status >= 400 else ""


def code_refusal(*, status: int, text: str, fields: tuple[str, ...]) -> str:
    """A service answering `{field: 0, …}` when it took the message and another code when not; the
    code is the first of `fields` the answer has."""
    if status >= 400:
        return http_refusal(status, text)
    try:
        answer = json.loads(text)
    except ValueError:
        return f"HTTP {status}, not JSON: {text[:ERROR_CHARS]}"
    field = next((name for name in fields if isinstance(answer, dict) and name in answer), fields[0])
    code = answer.get(field) if isinstance(answer, dict) else None
    if code == 0:
        return ""
    return f"{field} {code}: {text[:ERROR_CHARS]}"


def is_absolute(url: str) -> bool:
    """A link a chat app can open: the site has an address (`PUBLIC_URL`), not only a path."""
    return url.startswith(("https://", "http://"))


def fitted(render: Callable[[int], Any], *, most: int, fits: Callable[[Any], bool]) -> Any:
    """`render(n)` for the largest n ≤ `most` whose message `fits` the service's size limit. Every
    line is clipped (`notice.clipped`), so a message listing no alert always fits."""
    for listed in range(most, 0, -1):
        message = render(listed)
        if fits(message):
            return message
    return render(0)
