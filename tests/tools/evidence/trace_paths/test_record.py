"""A step of the traces in a sample: the shares of the traces that took it in which another step came
next, as the investigation and the gatekeeper compute them, and its ref text."""

from datetime import UTC, datetime

from tools.evidence.trace_paths.record import TracePathsRecord

BASELINE, SPLIT, END = 1_800_000_000, 1_800_001_800, 1_800_002_100


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


RECORD = TracePathsRecord(
    service="ledger",
    step="c.l.PostingService#88",
    event=True,
    traces=60,
    windows=[
        {
            "start": BASELINE,
            "end": SPLIT,
            "traces": 40,
            "next": [{"step": "ledger c.l.PostingService#91", "traces": 38, "event": True}],
        },
        {
            "start": SPLIT,
            "end": END,
            "traces": 20,
            "next": [
                {"step": "ledger c.l.PostingService#91", "traces": 4, "event": True},
                {"step": "vault Save", "traces": 15},
            ],
        },
    ],
)


def test_a_share_is_of_the_traces_in_the_windows_asked_that_took_the_step():
    assert RECORD.share(["ledger c.l.PostingService#91"], start=at(BASELINE), end=at(SPLIT)) == (0.95, 40)
    assert RECORD.share(["ledger c.l.PostingService#91"], start=at(SPLIT), end=at(END)) == (0.2, 20)
    assert RECORD.share(["vault Save"], start=at(BASELINE), end=at(END)) == (0.25, 60)
    assert RECORD.share(["vault Save"], start=at(END), end=at(END + 60)) is None


def test_a_path_share_has_no_given_step():
    assert RECORD.share(["vault Save"], start=at(BASELINE), end=at(END), given="vault Save") is None


def test_its_ref_text_names_the_step_and_what_came_next_the_most_often_first():
    assert RECORD.ref_text() == (
        "ledger「c.l.PostingService#88」在 60 条调用链中之后接：ledger c.l.PostingService#91、vault Save"
    )
    assert RECORD.is_event("ledger c.l.PostingService#91")
    assert not RECORD.is_event("vault Save")
    assert RECORD.identity() == "ledger c.l.PostingService#88"
