"""A call's evidence receipt: the requests its source really sent and a hash of what the call returned,
so a reviewer can see exactly what was asked and `manage.py replay` can ask it again.

One shape (`Receipt`) for the stored row, the trace API and the audit page. The requests are captured
where they are sent (`tools.sources.http` calls `request_sent` for each), inside `requests_captured()`
around one call; a source that sends none (the demo world, a runbook folder) leaves the list empty and
its receipt still names it. Never a header: authorization and tenant headers stay out, and a URL
keeps no user or password. Django-free.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

# A call's requests kept on its receipt: a source asks a few times per call (Loki: its labels, then
# one or two queries); a plugin that asks more keeps the first and counts the rest.
MAX_REQUESTS = 20
# The parameters a receipt names on their own; any other is kept in `params` as sent.
NAMED_PARAMS = ("query", "start", "end", "time", "step", "limit")


class SourceRequest(BaseModel):
    """One request a source sent, as sent: its parameters are the strings on the wire."""

    model_config = ConfigDict(frozen=True)

    # The source's kind (`prometheus`, `loki`, `alertmanager`) and its base URL without credentials.
    source: str
    base_url: str
    path: str
    query: str | None = None
    start: str | None = None
    end: str | None = None
    time: str | None = None
    step: str | None = None
    limit: str | None = None
    # The other query parameters in the order sent (`timeout`, `direction`, `match[]`…).
    params: list[tuple[str, str]] = []

    @classmethod
    def sent(cls, *, source: str, base_url: str, path: str, params: list[tuple[str, str]]) -> SourceRequest:
        """The request from its encoded query parameters; a named one given twice keeps its first
        value named and the second among `params`."""
        named: dict[str, str] = {}
        others = []
        for name, value in params:
            if name in NAMED_PARAMS and name not in named:
                named[name] = value
            else:
                others.append((name, value))
        return cls(source=source, base_url=base_url, path=path, params=others, **named)

    def text(self) -> str:
        """`GET base/path?query=…&time=…` in one line, for pages and the replay's differences."""
        pairs = [(name, getattr(self, name)) for name in NAMED_PARAMS if getattr(self, name) is not None]
        arguments = "&".join(f"{name}={value}" for name, value in [*pairs, *self.params])
        return f"GET {self.base_url}{self.path}" + (f"?{arguments}" if arguments else "")


class Receipt(BaseModel):
    """What one call asked and what it got back, fixed when it was recorded."""

    # The call's source (`prometheus`, `alertmanager+prometheus`, `demo`, `runbooks`…) and where it is;
    # empty for a helper or a tool that does not exist.
    source: str = ""
    location: str = ""
    # The call's "now": every time range it asked for was computed from it, so a replay at this time
    # asks for the same range.
    evaluated_at: datetime
    requests: list[SourceRequest] = []
    requests_omitted: int = 0
    # SHA-256 of the stored output's canonical JSON (`output_digest`); None when the call raised and
    # returned nothing.
    output_sha256: str | None = None

    def stored(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def output_digest(output: dict[str, Any]) -> str:
    """SHA-256 of the output as canonical JSON (keys sorted, no spaces, UTF-8): the same for the same
    data whatever its key order, also after a database gave it back."""
    canonical = json.dumps(output, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


_SENT: ContextVar[list[SourceRequest] | None] = ContextVar("requests_sent", default=None)


@contextmanager
def requests_captured() -> Iterator[list[SourceRequest]]:
    """The requests sent inside the block (this thread's), in order; outside any block none are kept."""
    sent: list[SourceRequest] = []
    token = _SENT.set(sent)
    try:
        yield sent
    finally:
        _SENT.reset(token)


def request_sent(request: SourceRequest) -> None:
    """Called by a source as it sends a request."""
    sent = _SENT.get()
    if sent is not None:
        sent.append(request)


def receipt_of(
    *,
    source: str,
    location: str,
    evaluated_at: datetime,
    sent: list[SourceRequest],
    output: dict[str, Any] | None,
) -> Receipt:
    """The receipt of a call that sent `sent` and returned `output` (None: it raised)."""
    return Receipt(
        source=source,
        location=location,
        evaluated_at=evaluated_at,
        requests=sent[:MAX_REQUESTS],
        requests_omitted=max(0, len(sent) - MAX_REQUESTS),
        output_sha256=None if output is None else output_digest(output),
    )
