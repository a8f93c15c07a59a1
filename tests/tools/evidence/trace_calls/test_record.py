"""An operation's calls in a sample of traces: the shares the investigation and the gatekeeper compute
from it, its ref text, and the tool's bounds on what it is asked."""

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from tools.evidence.trace_calls.record import TraceCallsRecord
from tools.evidence.trace_calls.tool import QueryTraceCallsArguments

BASELINE, SPLIT, END = 1_800_000_000, 1_800_001_800, 1_800_002_100


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


RECORD = TraceCallsRecord(
    service="ledger",
    operation="Post",
    spans=40,
    windows=[
        {"start": BASELINE, "end": SPLIT, "shapes": [{"calls": ["fx Rate", "vault Save"], "spans": 20}]},
        {
            "start": SPLIT,
            "end": END,
            "shapes": [
                {"calls": ["fx Rate", "vault Save"], "spans": 5},
                {"calls": ["fx Rate"], "spans": 10},
                {"calls": [], "spans": 5},
            ],
        },
    ],
)


def test_a_share_is_of_the_spans_in_the_windows_asked_and_of_those_that_made_the_given_call():
    assert RECORD.share(["vault Save"], start=at(BASELINE), end=at(SPLIT)) == (1.0, 20)
    assert RECORD.share(["vault Save"], start=at(SPLIT), end=at(END)) == (0.25, 20)
    assert RECORD.share(["vault Save"], start=at(SPLIT), end=at(END), given="fx Rate") == (5 / 15, 15)
    assert RECORD.share(["vault Save"], start=at(BASELINE), end=at(END)) == (25 / 40, 40)
    assert RECORD.share(["vault Save"], start=at(END), end=at(END + 60)) is None


def test_its_ref_text_names_the_operation_and_its_calls_the_most_made_first():
    assert RECORD.ref_text() == "ledger「Post」40 个 span 的调用：fx Rate、vault Save"
    assert RECORD.calls() == ["fx Rate", "vault Save"]


def test_the_incident_is_within_the_window_read():
    assert QueryTraceCallsArguments(minutes=35, incident_minutes=5).incident_minutes == 5
    with pytest.raises(ValidationError, match="incident_minutes"):
        QueryTraceCallsArguments(minutes=5, incident_minutes=35)
