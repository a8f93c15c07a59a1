"""How the benchmark reads a conclusion: the candidates' subjects in order, the data's services among
them as the ranking, and the others counted apart (a name the data do not have); which spans a case
serves."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

from diagnosis.evaluation.nezha.bench import (
    BenchOptions,
    candidate_subjects,
    candidates_named,
    case_spans,
    lead_mechanism,
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
