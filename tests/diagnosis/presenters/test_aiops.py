"""An analysis's report head says each alert's outcome as a badge and its identity as labels."""

from diagnosis.presenters.aiops import aiops_report_view
from diagnosis.selectors.aiops import OUTCOMES, AiOpsReport, AlertRow


def row(*, outcome: str, identity: dict[str, str]) -> AlertRow:
    return AlertRow(
        alert_name="DiskAlmostFull",
        service="ledger",
        identity=identity,
        state="firing",
        ends_at=None,
        session_id=None,
        verdict="",
        outcome=outcome,
        note="",
    )


def test_each_outcome_has_its_badge_and_the_identity_reads_as_sorted_labels():
    report = AiOpsReport(
        rows=[row(outcome=outcome, identity={"mount": "/data", "instance": "db-2"}) for outcome in OUTCOMES],
        tally=dict.fromkeys(OUTCOMES, 1),
    )

    view = aiops_report_view(report)

    assert [(each.outcome_label, each.outcome_tone) for each in view.rows] == [
        ("已核验", "good"),
        ("有证据缺口", "warn"),
        ("已降级", "bad"),
        ("诊断中", "none"),
        ("未分析", "none"),
    ]
    assert view.rows[0].where == ["instance=db-2", "mount=/data"]
    assert (view.tally, view.analysed_count) == (report.tally, 4)
