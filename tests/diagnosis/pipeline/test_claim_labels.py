"""The label check on the loghub-style lines the tests' Loki serves: a claim calling a
line an error, a timeout or a slow request needs that property in the line; both worlds' vocabularies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnosis.pipeline.claim_labels import claimed_topics, labels_unsupported
from diagnosis.pipeline.contracts import Claim, EvidenceBinding
from tools.evidence.logs.record import LogLine
from tools.evidence.registry import kind_named
from tools.evidence.result import NO_EVIDENCE_PATH, ToolResult
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

ROOT = Path(__file__).parents[3]
LOGHUB = json.loads((ROOT / "tests" / "world" / "loghub_streams.json").read_text())
VOCABULARIES = {
    "demo": vocabulary_load(DEFAULT_VOCABULARY_FILE),
    "second": vocabulary_load(ROOT / "tests" / "world" / "vocabulary.json"),
}


def line(service: str, contains: str) -> str:
    return next(
        entry["line"]
        for stream in LOGHUB
        if stream["stream"]["service"] == service
        for entry in stream["lines"]
        if contains in entry["line"]
    )


NOVA_200 = line("cart-api", "status: 200")
SLOWVM1 = line("cart-api", "Compute_service record updated for cp-1.slowvm1")
NEGOTIATED = line("zookeeper", "negotiated timeout 10000")
TIMED_OUT = line("zookeeper", "Notification time out: 60000")
CANCELLED = line("zookeeper", "CancelledKeyException")


def logs_call(service: str, level: str, *messages: str, pk: int = 5) -> ToolResult:
    lines = [
        LogLine(timestamp=f"2026-11-29 14:5{i}:00", level=level, service=service, message=m)
        for i, m in enumerate(messages)
    ]
    return ToolResult.from_stored(
        tool_name="query_logs",
        kind=kind_named("query_logs"),
        invocation_id=pk,
        arguments={"query": "error", "service": service},
        success=True,
        output={"logs": [line.stored() for line in lines]},
        retrieval_details={
            "evidence_status": "supported",
            "evidence_refs": [
                {"raw_path": f"$.logs[{i}]", "text": line.ref_text()} for i, line in enumerate(lines)
            ],
        },
    )


def claim(text: str, result: ToolResult, *indexes: int) -> Claim:
    return Claim(
        claim_id="claim-1",
        claim_type="observation",
        claim_text=text,
        evidence_bindings=[EvidenceBinding.of_ref(result, result.refs[i]) for i in indexes or (0,)],
    )


@pytest.fixture(params=sorted(VOCABULARIES))
def vocabulary(request):
    return VOCABULARIES[request.param]


def failed(claim_: Claim, result: ToolResult, vocabulary) -> list[str]:
    return [f.raw_path for f in labels_unsupported([claim_], results=[result], vocabulary=vocabulary)]


def test_an_info_line_called_an_error_fails(vocabulary):
    call = logs_call("cart-api", "INFO", NOVA_200)

    assert failed(claim(f"cart-api 的错误日志记录：{NOVA_200}", call), call, vocabulary) == ["$.logs[0]"]
    assert failed(claim("cart-api has 1 error log line", call), call, vocabulary) == ["$.logs[0]"]


def test_an_error_line_called_an_error_passes(vocabulary):
    call = logs_call("zookeeper", "ERROR", CANCELLED)

    assert failed(claim(f"zookeeper 的错误日志记录：{CANCELLED}", call), call, vocabulary) == []


def test_slowvm1_is_no_slow_request(vocabulary):
    call = logs_call("cart-api", "INFO", SLOWVM1)

    assert failed(claim(f"cart-api 的慢请求日志记录：{SLOWVM1}", call), call, vocabulary) == ["$.logs[0]"]


def test_a_negotiated_timeout_is_no_timeout_and_a_notification_time_out_is(vocabulary):
    call = logs_call("zookeeper", "INFO", NEGOTIATED, TIMED_OUT)

    assert failed(claim("zookeeper 的超时日志记录", call, 0, 1), call, vocabulary) == ["$.logs[0]"]
    assert failed(claim(f"zookeeper 的超时日志：{TIMED_OUT}", call, 1), call, vocabulary) == []


def test_what_the_quoted_line_says_is_not_what_the_claim_calls_it(vocabulary):
    call = logs_call("zookeeper", "INFO", NEGOTIATED)

    assert claimed_topics(f"zookeeper 的日志记录：「{NEGOTIATED}」", [], vocabulary=vocabulary) == []
    assert failed(claim(f"zookeeper 的日志记录：{NEGOTIATED}", call), call, vocabulary) == []


def test_a_claim_that_denies_calls_no_line_anything(vocabulary):
    call = logs_call("cart-api", "INFO", NOVA_200)

    assert failed(claim("cart-api 没有错误日志，匹配的行均为 INFO", call), call, vocabulary) == []


def test_a_negation_inside_the_quoted_line_is_no_denial_of_the_claim(vocabulary):
    negating = 'open() "/srv/static/app.css" failed (2: No such file or directory)'
    call = logs_call("cart-api", "INFO", negating, NOVA_200)

    assert failed(claim(f"cart-api 的错误日志记录：{negating}", call, 0, 1), call, vocabulary) == [
        "$.logs[0]",
        "$.logs[1]",
    ]


def test_a_search_that_found_nothing_and_unrecorded_lines_are_left_to_the_gatekeeper(vocabulary):
    call = logs_call("cart-api", "INFO", NOVA_200)
    unrecorded = claim("cart-api 的错误日志记录", call).model_copy(
        update={
            "evidence_bindings": [
                EvidenceBinding(
                    tool_name="query_logs",
                    source_invocation_id=99,
                    raw_path="$.logs[0]",
                    evidence_excerpt="x",
                ),
                EvidenceBinding(
                    tool_name="query_logs",
                    source_invocation_id=call.invocation_id,
                    raw_path=NO_EVIDENCE_PATH,
                    evidence_excerpt="未检索到",
                ),
            ]
        }
    )

    assert failed(unrecorded, call, vocabulary) == []
