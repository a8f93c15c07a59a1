"""A second world with other names for range-query evidence: one node `web`, its load alert whose
rule compares against 0.5, and a five-point load series; plus an llm executor script citing it."""

from datetime import datetime

from tests.tools.support import use_source
from tools.evidence.alerts.source import AlertSource
from tools.evidence.series.source import SeriesSource
from tools.inventory import SourceInventory

AT = datetime.fromisoformat("2026-11-29T14:58:00+08:00").timestamp()
# A second world with other names: one node, one load alert whose rule compares against 0.5.
SERIES = {"__name__": "node_load1", "instance": "web-1:9100", "service": "web", "note": "<b>x</b>"}
VALUES = [[AT - 240, "0.31"], [AT - 180, "0.42"], [AT - 120, "0.88"], [AT - 60, "0.61"], [AT, "0.52"]]
ALERT = {
    "alert_name": "NodeLoadHigh",
    "service": "web",
    "severity": "warning",
    "state": "firing",
    "started_at": "2026-11-29 14:50:00",
    "duration": "8m",
    "description": "node load above 0.5",
    "labels": {"instance": "web-1:9100"},
    "expr": "node_load1 > 0.5",
    "value": "0.52",
}
QUESTION = "web 的 NodeLoadHigh 告警最近怎样？"


class LoadPrometheus(AlertSource, SeriesSource):
    """A Prometheus with one alert and a five-point load series (any range query answers it)."""

    def provenance(self) -> tuple[str, str]:
        return "prometheus", "http://prom.test:9090"

    def inventory(self, *, now) -> SourceInventory:
        return SourceInventory(services={"web"}, alerts={"NodeLoadHigh"})

    def query_alerts(self, *, service, alert_name, now) -> list[dict]:
        return [ALERT]

    def query_promql(self, *, query: str, minutes: int, now) -> dict:
        if minutes:
            return {"result_type": "matrix", "series": [{"metric": SERIES, "values": VALUES}]}
        return {"result_type": "vector", "series": [{"metric": SERIES, "value": VALUES[-1]}]}


def executor_citing(*, minutes: int) -> list[dict]:
    """An executor that asks for the alert and the load series, then cites the series' excerpt."""
    return [
        {
            "tool_calls": [
                {"name": "query_alerts", "arguments": {"service": "web"}},
                {"name": "query_promql", "arguments": {"query": "node_load1", "minutes": minutes}},
            ]
        },
        {
            "answer_version": "executor_evidence_v2",
            "claims": [
                {
                    "claim_id": "c1",
                    "claim_type": "observation",
                    "claim_text": "web 的 node_load1 区间最大 0.88，最新值 0.52",
                    "evidence_bindings": [
                        {
                            "tool_name": "query_promql",
                            "source_invocation_id": "{{inv:query_promql}}",
                            "raw_path": "$.series[0]",
                            "evidence_excerpt": "{{ref:query_promql:0:$.series[0]}}",
                        }
                    ],
                }
            ],
            "hypotheses": [],
            "missing_info": [],
            "recommended_actions": [],
            "diagnosis_summary": "",
            "user_facing_answer": "",
        },
    ]


def use_load_prometheus(settings) -> None:
    """Serve `query_alerts` and `query_promql` from `LoadPrometheus`."""
    use_source(settings, LoadPrometheus, AlertSource, SeriesSource)
