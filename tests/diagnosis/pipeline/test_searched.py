"""What was searched: every empty or failed call nothing cites is a gap naming the call and its source."""

import pytest

from diagnosis.pipeline.contracts import Claim, EvidenceBinding, ExecutorOutput
from diagnosis.pipeline.searched import searched_gaps, unconfigured_gaps
from diagnosis.pipeline.slot import Slot
from tests.diagnosis.pipeline.asks.support import WORLD_IDS, WORLDS, Names, asks_of, failed, message
from tools.evidence.result import NO_EVIDENCE_PATH, ToolResult


def no_hit(invocation_id: int, service: str) -> ToolResult:
    # The ref text as the recorder writes it: the tool and the source in the words people read.
    text = f"在 日志查询（关键词 Deadlock，服务 {service}，来源 Loki）中未检索到匹配记录"
    return message(
        invocation_id,
        "query_logs",
        "logs",
        [],
        [],
        arguments={"service": service, "query": "Deadlock"},
        source="loki",
        refs=[{"raw_path": NO_EVIDENCE_PATH, "text": text}],
    ).model_copy(update={"evidence_status": "no_evidence"})


def output_citing(*invocation_ids: int) -> ExecutorOutput:
    return ExecutorOutput(
        claims=[
            Claim(
                claim_id=f"claim-{i}",
                claim_type="negative_observation",
                claim_text="未检索到匹配记录",
                evidence_bindings=[
                    EvidenceBinding(
                        tool_name="query_logs",
                        source_invocation_id=invocation_id,
                        raw_path=NO_EVIDENCE_PATH,
                        evidence_excerpt="未检索到匹配记录",
                    )
                ],
            )
            for i, invocation_id in enumerate(invocation_ids)
        ],
        hypotheses=[],
        missing_info=[],
        recommended_actions=[],
        diagnosis_summary="",
        user_facing_answer="",
    )


@pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)
def test_an_empty_search_nothing_cites_is_a_gap_with_its_call_and_source(names: Names):
    messages = [no_hit(7, names.service)]

    gaps = searched_gaps(results=messages, output=output_citing(), slots=[])

    assert gaps == [f"在 日志查询（关键词 Deadlock，服务 {names.service}，来源 Loki）中未检索到匹配记录"]


@pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)
def test_a_failed_call_is_a_gap_naming_its_arguments_and_source(names: Names):
    messages = [failed(3, "query_alerts", arguments={"service": names.other}, source="prometheus")]

    gaps = searched_gaps(results=messages, output=output_citing(), slots=[])

    assert gaps == [f"告警查询（service={names.other}，来源 Prometheus）调用失败，未获得证据"]


@pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)
def test_a_search_a_claim_or_a_filled_slot_cites_is_no_gap(names: Names):
    cited, in_slot = no_hit(1, names.service), no_hit(2, names.other)
    ask = asks_of(f"{names.other} 有没有超时日志？", names)[0]
    slot = Slot(
        ask=ask,
        filled=True,
        conclusion="未检索到",
        bindings=[
            EvidenceBinding(
                tool_name="query_logs",
                source_invocation_id=2,
                raw_path=NO_EVIDENCE_PATH,
                evidence_excerpt="未检索到",
            )
        ],
    )

    assert searched_gaps(results=[cited, in_slot], output=output_citing(1), slots=[slot]) == []


def test_a_search_that_found_evidence_is_no_gap():
    found = message(4, "query_logs", "logs", [{"message": "order timed out"}], ["order timed out"])

    assert searched_gaps(results=[found], output=output_citing(), slots=[]) == []


def test_a_planned_kind_no_source_serves_is_one_gap_unless_a_slot_says_so():
    planned = ["query_alerts", "query_logs", "lookup_knowledge"]
    served = frozenset({"query_alerts", "query_promql"})
    logs_slot = Slot(ask=asks_of("checkout 的错误日志", WORLDS[0])[0], filled=False, why="未配置日志源")

    assert unconfigured_gaps(planned=planned, tools=served, slots=[]) == [
        "未配置日志源：未查询日志",
        "未配置处理手册库：未查询处理手册",
    ]
    assert unconfigured_gaps(planned=planned, tools=served, slots=[logs_slot]) == [
        "未配置处理手册库：未查询处理手册"
    ]
