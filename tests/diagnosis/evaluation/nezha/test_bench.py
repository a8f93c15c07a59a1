"""How the benchmark reads a conclusion: the candidates' subjects in order, the data's services among
them as the ranking, and the others counted apart (a name the data do not have); which spans a case
serves; how far a day is moved to the present; a fault after one at its own service is scored apart."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

from diagnosis.evaluation.nezha.bench import (
    BenchOptions,
    CaseOutcome,
    candidate_subjects,
    candidates_named,
    case_spans,
    follows_own,
    lead_mechanism,
    present_shift,
    report_lines,
)
from diagnosis.evaluation.nezha.data import Fault

SERVICES = ["ledger-store", "ledger-gateway", "pricing"]


def test_the_ranking_is_the_candidates_in_order_and_a_stranger_is_kept_apart():
    line = (
        "结论：根因候选：pricing（CPU 使用升高，10:02起，0.1 核 → 0.9 核）；其次：10.0.0.7（被调用延迟升高，"
        "10:03起，3 ms → 2.1 s）；ledger-store（延迟升高，10:04起，9 ms → 40 ms）"
    )

    assert candidate_subjects(line) == ["pricing", "10.0.0.7", "ledger-store"]
    assert candidates_named(line, SERVICES) == ["pricing", "ledger-store"]


def test_a_line_without_candidates_ranks_the_services_it_names_in_order():
    line = "结论：未找到根因证据：ledger-gateway 与 pricing 的信号都没有变化"

    assert candidate_subjects(line) == []
    assert candidates_named(line, SERVICES) == ["ledger-gateway", "pricing"]


def test_what_the_first_candidate_rested_on_leaves_out_whose_and_which_it_was():
    def rested_on(mechanism: str) -> str:
        return lead_mechanism(f"结论：根因候选：pricing（{mechanism}，10:02起，1 → 2）")

    assert rested_on("CPU 使用升高") == "CPU 使用升高"
    assert rested_on("ledger-gateway 看到的被调用延迟升高") == "被调用延迟升高"
    assert rested_on("ledger-gateway「Quote」调用 ledger-store 的占比下降") == "调用占比下降"
    assert rested_on("ledger-gateway「Quote」调用它（Price.Get）后再调用 ledger-store 的占比下降") == (
        "调用方在其应答后的后续调用占比下降"
    )


FAULT = Fault(
    day="2022-08-22", at=datetime(2022, 8, 22, 4, 2, 7, tzinfo=UTC), pod="pricing-5b-x2", kind="cpu"
)
HEADER = "TraceID,SpanID,ParentID,PodName,OperationName,StartTimeUnixNano,EndTimeUnixNano\n"


def span_line(span: str, at: datetime) -> str:
    ns = int(at.timestamp()) * 10**9
    return f"t-{span},{span},root,pricing-5b67c48447-mv5hb,Price.Get,{ns},{ns + 10**6}\n"


def test_a_case_serves_the_spans_of_its_files_from_the_baseline_to_the_question_shifted(tmp_path: Path):
    folder = tmp_path / "2022-08-22" / "trace"
    folder.mkdir(parents=True)
    # Half an hour and a minute before the injection: before the baseline, not read.
    (folder / "03_31_trace.csv").write_text(
        HEADER + span_line("early", datetime(2022, 8, 22, 3, 30, 30, tzinfo=UTC))
    )
    (folder / "04_03_trace.csv").write_text(
        HEADER + span_line("during", datetime(2022, 8, 22, 4, 2, 30, tzinfo=UTC))
    )
    options = BenchOptions(root=tmp_path, systems=["ob"], repository=tmp_path)

    spans = case_spans(options, "2022-08-22", FAULT, shift=timedelta(days=1))

    assert [(span.span_id, span.start_ns) for span in spans] == [
        ("during", int(datetime(2022, 8, 23, 4, 2, 30, tzinfo=UTC).timestamp()) * 10**9)
    ]
    assert (
        case_spans(BenchOptions(root=tmp_path, systems=["ob"]), "2022-08-22", FAULT, shift=timedelta(0)) == []
    )


def fault_at(pod: str, hour: int, minute: int) -> Fault:
    return Fault(day="2023-01-29", at=datetime(2023, 1, 29, hour, minute, tzinfo=UTC), pod=pod, kind="return")


def test_a_day_moves_by_whole_minutes_to_end_shortly_before_now_whenever_it_is_run():
    """Every minute of the data stays a clock minute, so two runs read the same minutes alike."""
    end = datetime(2023, 1, 29, 15, 50, 9, tzinfo=UTC)
    runs = [datetime(2026, 12, 6, 8, 30, second, tzinfo=UTC) for second in (0, 21, 59)]

    shifts = [present_shift(end, now=now) for now in runs]

    assert all(shift % timedelta(minutes=1) == timedelta(0) for shift in shifts)
    assert [(end + shift).second for shift in shifts] == [9, 9, 9]
    assert all(
        timedelta(minutes=2) <= now - (end + shift) < timedelta(minutes=3)
        for now, shift in zip(runs, shifts, strict=True)
    )


def test_a_fault_follows_its_own_when_its_service_had_one_within_the_baseline_before():
    first = fault_at("ledger-store-7d9c5-abcde", 9, 3)
    again = fault_at("ledger-store-7d9c5-abcde", 9, 12)
    elsewhere = fault_at("pricing-5b67c48447-mv5hb", 9, 20)
    much_later = fault_at("ledger-store-7d9c5-abcde", 10, 0)
    faults = [first, again, elsewhere, much_later]

    def follows(fault: Fault) -> bool:
        return follows_own(fault, faults, within=timedelta(minutes=30))

    assert [follows(fault) for fault in faults] == [False, True, False, False]


def outcome(fault: Fault, *, named: str, follows: bool) -> CaseOutcome:
    return CaseOutcome(
        system="tt",
        fault=fault,
        question="",
        product=[named],
        baseline=[],
        seconds=1.0,
        conclusion="",
        verdict="PASS",
        follows_own=follows,
    )


def test_the_report_scores_first_faults_at_a_service_apart_from_those_after_one():
    outcomes = [
        outcome(fault_at("ledger-store-7d9c5-abcde", 9, 3), named="ledger-store", follows=False),
        outcome(fault_at("ledger-store-7d9c5-abcde", 9, 12), named="pricing", follows=True),
        outcome(fault_at("pricing-5b67c48447-mv5hb", 9, 20), named="pricing", follows=False),
    ]

    rows = {line[:34].strip(): line for line in report_lines(outcomes)}

    assert "2/2 100.0%" in rows["first at its service"]
    assert "0/1   0.0%" in rows["after one at its service"]
