"""Every kind of ask, one row each, in the order a question's asks are listed and answered."""

from __future__ import annotations

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.action import Action
from diagnosis.pipeline.asks.cause import Cause
from diagnosis.pipeline.asks.change import Change
from diagnosis.pipeline.asks.existence import Existence
from diagnosis.pipeline.asks.first import First
from diagnosis.pipeline.asks.health import Health
from diagnosis.pipeline.asks.history import History
from diagnosis.pipeline.asks.kind import AskKind
from diagnosis.pipeline.asks.listing import Listing
from diagnosis.pipeline.asks.logs import Logs
from diagnosis.pipeline.asks.priority import Priority
from diagnosis.pipeline.asks.runbook import Runbook
from diagnosis.pipeline.asks.threshold import Threshold
from diagnosis.pipeline.asks.trend import Trend
from diagnosis.pipeline.asks.value import Value

KINDS: dict[str, AskKind] = {
    kind.name: kind
    for kind in (
        Existence(),
        Value(),
        Threshold(),
        Trend(),
        History(),
        Cause(),
        Change(),
        Logs(),
        Runbook(),
        Listing(),
        Priority(),
        First(),
        Health(),
        Action(),
    )
}


def ask_label(ask: Ask) -> str:
    """How a gap and a plan step name the ask: `checkout 的当前值`, `处理优先级`."""
    label = KINDS[ask.kind].label
    about = ask.about()
    return f"{about} 的{label}" if about else label
