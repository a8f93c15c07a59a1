"""Traces over OTLP/HTTP, as a collector receives them: a session is one trace of its stages, its
model calls and its tool calls, with the GenAI conventions' attributes, and (unless capture is turned
on) no question, prompt, reply or evidence text."""

import json
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django_q.signals import post_execute_in_worker

from diagnosis import tracing
from diagnosis.evaluation.fixtures import CASES_DIR
from diagnosis.models import DiagnosisSession
from diagnosis.services.sessions import session_start
from diagnosis.tasks import session_run_task
from tests.factories import DiagnosisSessionFactory
from tests.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.tools.support import record, use_source
from tools.evidence.series.source import SeriesSource
from tools.sources.http import SourceError

pytestmark = pytest.mark.django_db

QUESTIONS = {"demo": "order-service 为什么频繁 Full GC？", "shop": "checkout 为什么反复重启？"}
# The same with a topic excluded: every stage asks the model (a plain cause question is planned by code
# and its candidates only explained, by one model call).
MODEL_QUESTIONS = {world: f"{question}不要分析数据库" for world, question in QUESTIONS.items()}
# An executor turn calling a tool the question's asks did not call: a call of the executor's own.
ALL_ALERTS_TURN = {"tool_calls": [{"name": "query_alerts", "arguments": {}}]}
CONTENT_ATTRIBUTES = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "diagnosis.thought",
}
SESSION_SPAN = "invoke_agent diagnosis"
# OTLP's enums: SpanKind CLIENT, StatusCode ERROR.
CLIENT_KIND = 3
ERROR_STATUS = 2
Status = DiagnosisSession.Status
REFUSED_QUERY = 'sum(rate(payment_card_number{pan="4111111111111111"}[5m]))'


class EchoingPrometheus(SeriesSource):
    """A Prometheus that refuses the query, quoting it back, as a real one's `bad_data` error does."""

    def query_promql(self, *, query: str, **_: object) -> dict:
        raise SourceError(kind="prometheus", location="http://prometheus:9090", cause=f"bad_data: {query}")


def exported(receiver: OtlpReceiver) -> OtlpReceiver:
    tracing.flush()
    return receiver


def root_of(spans: OtlpReceiver) -> ReceivedSpan:
    [root] = spans.named(SESSION_SPAN)
    return root


def stage_span(spans: OtlpReceiver, stage: str, round: int = 1) -> ReceivedSpan:
    [span] = [s for s in spans.named(f"stage {stage}") if s.attributes["diagnosis.round"] == round]
    return span


def assert_no_content(spans: OtlpReceiver, session: DiagnosisSession, also: list[str] = ()) -> None:
    """No span carries a content attribute, and no attribute, event or status holds the question, the
    answer, any evidence text or any of `also` (the prompts, the replies, an error's words)."""
    texts = [
        session.query,
        session.answer,
        *(ref["text"] for invocation in session.tool_invocations.all() for ref in invocation.evidence_refs),
        *also,
    ]
    for span in spans.spans:
        assert not CONTENT_ATTRIBUTES & span.attributes.keys(), span.name
        attributes = [span.attributes, *(event_attributes for _name, event_attributes in span.events)]
        values = [v for a in attributes for v in a.values() if isinstance(v, str)] + [span.status_message]
        leaked = [text for text in texts if text and any(text in value for value in values)]
        assert not leaked, f"{span.name} carries {leaked[0][:60]!r}"


def test_a_rules_session_is_one_trace_of_its_stages_and_its_tool_calls(otlp_receiver, either_world):
    session = session_start(query=QUESTIONS[either_world], engine="rules", run_inline=True)

    spans = exported(otlp_receiver)
    root = root_of(spans)
    assert (root.parent_span_id, root.resource["service.name"]) == ("", "aiops-diagnosis")
    assert {span.trace_id for span in spans.spans} == {root.trace_id}
    assert root.attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "diagnosis",
        "gen_ai.conversation.id": session.session_id,
        "session.id": session.session_id,
        "diagnosis.session.kind": "chat",
        "diagnosis.engine": "rules",
        "diagnosis.status": "COMPLETED",
        "diagnosis.output_type": session.output_type,
        "diagnosis.verdict": session.verdict,
        "diagnosis.rounds": session.rounds,
        "diagnosis.groundedness_score": session.groundedness_score,
    }
    assert (session.verdict, session.output_type) == ("PASS", "NORMAL")
    # A span per recorded step, in order, each a child of the session.
    stages = spans.named("stage")
    steps = list(session.steps.order_by("id"))
    assert [
        (
            s.attributes["diagnosis.stage"],
            s.attributes["diagnosis.round"],
            s.attributes["diagnosis.step.status"],
        )
        for s in stages
    ] == [(step.agent, step.round, step.status) for step in steps]
    assert all(spans.parent_of(stage) == root for stage in stages)
    assert all(stage.attributes["gen_ai.conversation.id"] == session.session_id for stage in stages)
    # A span per recorded tool call, named by its tool, identified by its invocation id.
    tools = spans.named("execute_tool")
    invocations = {str(i.pk): i for i in session.tool_invocations.all()}
    assert sorted(t.attributes["gen_ai.tool.call.id"] for t in tools) == sorted(invocations)
    for tool in tools:
        invocation = invocations[tool.attributes["gen_ai.tool.call.id"]]
        assert tool.name == f"execute_tool {invocation.tool_name}"
        assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
        assert tool.attributes["gen_ai.tool.name"] == invocation.tool_name
        assert tool.attributes["diagnosis.evidence_status"] == invocation.evidence_status
        assert tool.attributes["diagnosis.evidence_refs"] == len(invocation.evidence_refs)
        parent = spans.parent_of(tool)
        assert parent.start_ns <= tool.start_ns <= tool.end_ns <= parent.end_ns
    # The asks' calls are made by code between the stages, the executor's own inside its stage.
    executor = stage_span(spans, "executor")
    parents = Counter(spans.parent_of(tool).name for tool in tools)
    assert set(parents) == {SESSION_SPAN, executor.name} and parents[executor.name] >= 1
    assert_no_content(spans, session)


def test_an_llm_session_traces_each_model_call_under_its_stage_with_its_tokens(
    otlp_receiver, fake_llm, either_world
):
    server = fake_llm({"executor": [ALL_ALERTS_TURN]})

    session = session_start(query=MODEL_QUESTIONS[either_world], engine="llm", run_inline=True)

    spans = exported(otlp_receiver)
    root = root_of(spans)
    assert (root.attributes["diagnosis.engine"], root.attributes["diagnosis.verdict"]) == ("llm", "PASS")
    assert root.attributes["diagnosis.output_type"] == session.output_type == "NORMAL"
    chats = spans.named("chat")
    assert len(chats) == len(server.requests) >= 5  # one span per model call
    model = settings.DIAGNOSIS["LLM_MODEL"]
    port = int(server.base_url.split(":")[2].split("/")[0])
    for chat in chats:
        assert (chat.name, chat.kind) == (f"chat {model}", CLIENT_KIND)
        assert {
            key: chat.attributes[key]
            for key in (
                "gen_ai.operation.name",
                "gen_ai.provider.name",
                "gen_ai.system",
                "gen_ai.request.model",
                "gen_ai.conversation.id",
                "server.address",
                "server.port",
            )
        } == {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.system": "openai",
            "gen_ai.request.model": model,
            "gen_ai.conversation.id": session.session_id,
            "server.address": "127.0.0.1",
            "server.port": port,
        }
        assert (
            chat.attributes["gen_ai.usage.input_tokens"] > 0 < chat.attributes["gen_ai.usage.output_tokens"]
        )
        assert spans.parent_of(chat).name == f"stage {chat.attributes['diagnosis.stage']}"
    # The model's own token counts: per stage, what its step records.
    spent: dict[tuple, tuple[int, int]] = {}
    for chat in chats:
        stage = spans.parent_of(chat)
        key = (stage.attributes["diagnosis.stage"], stage.attributes["diagnosis.round"])
        inputs, outputs = spent.get(key, (0, 0))
        spent[key] = (
            inputs + chat.attributes["gen_ai.usage.input_tokens"],
            outputs + chat.attributes["gen_ai.usage.output_tokens"],
        )
    assert spent == {
        (step.agent, step.round): (step.prompt_tokens, step.completion_tokens)
        for step in session.steps.filter(llm_calls__gt=0)
    }
    executor = stage_span(spans, "executor")
    executor_chats = [chat for chat in chats if spans.parent_of(chat) == executor]
    assert [c.attributes["gen_ai.response.finish_reasons"] for c in executor_chats] == [
        ["tool_calls"],
        ["stop"],
    ]
    # The call the model asked for is a tool span of the executor stage, between its two model calls.
    call = session.tool_invocations.get(tool_name="query_alerts", input={})
    [tool] = [t for t in spans.named("execute_tool") if t.attributes["gen_ai.tool.call.id"] == str(call.pk)]
    assert spans.parent_of(tool) == executor
    assert executor_chats[0].end_ns <= tool.start_ns <= tool.end_ns <= executor_chats[1].start_ns
    prompts = [
        m["content"] for r in server.requests for m in r["messages"] if isinstance(m.get("content"), str)
    ]
    assert_no_content(spans, session, also=prompts)


def test_with_capture_on_the_messages_and_the_tool_calls_are_recorded(
    otlp_receiver, fake_llm, either_world, monkeypatch
):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    server = fake_llm({"executor": [ALL_ALERTS_TURN]})

    session = session_start(query=MODEL_QUESTIONS[either_world], engine="llm", run_inline=True)

    spans = exported(otlp_receiver)
    root = root_of(spans)
    assert json.loads(root.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": session.query}]}
    ]
    [answer] = json.loads(root.attributes["gen_ai.output.messages"])
    assert answer["parts"] == [{"type": "text", "content": session.answer}]
    # Each model call: the messages sent, in the conventions' shape, and the reply.
    chats = spans.named("chat")
    for chat, request in zip(chats, server.requests, strict=True):
        sent = json.loads(chat.attributes["gen_ai.input.messages"])
        assert [m["role"] for m in sent] == [m["role"] for m in request["messages"]]
        assert sent[0]["parts"] == [{"type": "text", "content": request["messages"][0]["content"]}]
    executor = stage_span(spans, "executor")
    tool_turn = next(chat for chat in chats if spans.parent_of(chat) == executor)
    [reply] = json.loads(tool_turn.attributes["gen_ai.output.messages"])
    assert reply["finish_reason"] == "tool_calls"
    assert [(p["type"], p["name"], p["arguments"]) for p in reply["parts"]] == [
        ("tool_call", "query_alerts", "{}")
    ]
    # The tool call: its arguments and the message the model saw, evidence text included.
    call = session.tool_invocations.get(tool_name="query_alerts", input={})
    [tool] = [t for t in spans.named("execute_tool") if t.attributes["gen_ai.tool.call.id"] == str(call.pk)]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {}
    result = json.loads(tool.attributes["gen_ai.tool.call.result"])
    assert result["invocation_id"] == call.pk
    assert [ref["text"] for ref in result["evidence_refs"]] == [ref["text"] for ref in call.evidence_refs]
    assert executor.attributes["diagnosis.thought"] == session.steps.get(agent="executor").thought


def test_a_model_endpoint_that_fails_is_an_error_span_and_the_rules_engine_answers_in_the_same_trace(
    otlp_receiver, fake_llm, either_world
):
    fake_llm({"planner": [{"http_status": 500}, {"http_status": 500}]})

    session = session_start(query=MODEL_QUESTIONS[either_world], engine="llm", run_inline=True)

    assert session.status == Status.COMPLETED
    spans = exported(otlp_receiver)
    [failed_call] = spans.named("chat")
    assert failed_call.status_code == ERROR_STATUS
    assert failed_call.attributes["error.type"] == "InternalServerError"
    assert "gen_ai.usage.input_tokens" not in failed_call.attributes
    model_planner, rules_planner = spans.named("stage planner")
    assert spans.parent_of(failed_call) == model_planner
    assert (model_planner.status_code, model_planner.attributes["diagnosis.step.status"]) == (
        ERROR_STATUS,
        "failed",
    )
    assert rules_planner.attributes["diagnosis.prompt_version"] == "rules-v1"
    assert rules_planner.attributes["diagnosis.step.status"] == "ok"
    root = root_of(spans)
    assert root.status_code != ERROR_STATUS and root.attributes["diagnosis.status"] == "COMPLETED"
    assert_no_content(spans, session)


def test_a_session_that_fails_ends_its_span_failed_with_its_error_id(
    otlp_receiver, either_world, monkeypatch
):
    def broken_verifier(self, stage_input):
        raise RuntimeError("rules verifier exploded")

    monkeypatch.setattr("diagnosis.engines.rules.RulesEngine.verify", broken_verifier)

    session = session_start(query=QUESTIONS[either_world], engine="rules", run_inline=True)

    assert session.status == Status.FAILED
    spans = exported(otlp_receiver)
    root = root_of(spans)
    assert root.status_code == ERROR_STATUS
    assert root.status_message == f"session failed (error id {session.error_id})"
    assert root.attributes["error.type"] == "RuntimeError"
    assert (root.attributes["diagnosis.status"], root.attributes["diagnosis.error_id"]) == (
        "FAILED",
        session.error_id,
    )
    verifier = stage_span(spans, "verifier")
    assert (verifier.status_code, verifier.attributes["diagnosis.step.status"]) == (ERROR_STATUS, "failed")
    assert [s.attributes["diagnosis.stage"] for s in spans.named("stage")] == list(
        session.steps.order_by("id").values_list("agent", flat=True)
    )
    assert_no_content(spans, session, also=["rules verifier exploded"])


def test_an_endpoint_and_the_sdk_disabled_trace_nothing(otlp_receiver, either_world, monkeypatch):
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")

    session = session_start(query=QUESTIONS[either_world], engine="rules", run_inline=True)

    tracing.flush()
    assert session.status == Status.COMPLETED
    assert otlp_receiver.paths == [] and not tracing.enabled()


def test_without_an_endpoint_the_recorder_and_the_threads_work_are_not_wrapped(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    recorder = object()

    with tracing.stages_traced(recorder) as traced:
        assert traced is recorder
    assert tracing.in_this_trace(print) is print
    assert not tracing.enabled()


def test_a_worker_exports_what_a_task_traced_as_soon_as_the_task_ends(otlp_receiver, monkeypatch):
    # Nothing exported on the batch's own schedule: only the end of the task sends it.
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")
    session = DiagnosisSessionFactory(query=QUESTIONS["demo"])

    session_run_task(session.pk)
    assert otlp_receiver.paths == []
    post_execute_in_worker.send(sender="django_q", func=session_run_task, task={"args": (session.pk,)})

    root = root_of(otlp_receiver)
    assert root.attributes["gen_ai.conversation.id"] == session.session_id


def test_a_management_command_exports_its_traces_when_it_ends(otlp_receiver, tmp_path):
    case = CASES_DIR / "seed003-hikaricp-order-positive"
    env = os.environ | {
        "DIAGNOSIS_DEV": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'eval.sqlite3'}",
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.endpoint,
        "OTEL_SERVICE_NAME": "diagnosis-eval",
    }

    done = subprocess.run(
        [sys.executable, "manage.py", "eval", str(case)],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    root = root_of(otlp_receiver)
    assert root.resource["service.name"] == "diagnosis-eval"
    assert root.attributes["diagnosis.verdict"] == "PASS"
    assert otlp_receiver.named("stage") and otlp_receiver.named("execute_tool")


def test_work_handed_to_a_thread_nests_in_the_callers_trace(otlp_receiver):
    session = DiagnosisSessionFactory(query=QUESTIONS["shop"])

    def tool_call_traced(started_ns: int) -> None:
        tracing.tool_calls_traced(
            [
                tracing.ToolCallTrace(
                    tool_name="query_logs",
                    invocation_id=7,
                    round=1,
                    started_ns=started_ns,
                    ended_ns=started_ns + 1000,
                    source="loki",
                    evidence_status="supported",
                    evidence_refs=1,
                    error="",
                    error_type="",
                    arguments={"service": "checkout"},
                    message=dict,
                )
            ]
        )

    with tracing.session_traced(session), ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(tracing.in_this_trace(tool_call_traced), started_ns=time.time_ns()).result()
        pool.submit(tool_call_traced, started_ns=time.time_ns()).result()

    spans = exported(otlp_receiver)
    nested, alone = spans.named("execute_tool query_logs")
    assert spans.parent_of(nested) == root_of(spans)
    assert nested.attributes["gen_ai.conversation.id"] == session.session_id
    assert alone.parent_span_id == "" and "gen_ai.conversation.id" not in alone.attributes


def refused_tool_span(otlp_receiver, settings) -> tuple[ReceivedSpan, DiagnosisSession]:
    use_source(settings, EchoingPrometheus, SeriesSource)
    session = DiagnosisSessionFactory(query=QUESTIONS["demo"])

    with tracing.session_traced(session):
        invocation = record(session, "query_promql", query=REFUSED_QUERY)

    assert REFUSED_QUERY in invocation.error  # the record keeps the source's words for the engineer
    [span] = exported(otlp_receiver).named("execute_tool query_promql")
    return span, session


def test_without_capture_a_failed_tool_span_names_the_failures_class_not_its_words(otlp_receiver, settings):
    span, session = refused_tool_span(otlp_receiver, settings)

    assert (span.status_code, span.status_message) == (ERROR_STATUS, "SourceError")
    assert span.attributes["error.type"] == "SourceError"
    assert_no_content(otlp_receiver, session, also=[REFUSED_QUERY, "bad_data"])


def test_with_capture_on_a_failed_tool_span_carries_the_sources_words(otlp_receiver, settings, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")

    span, _session = refused_tool_span(otlp_receiver, settings)

    assert span.status_message.startswith("SourceError: prometheus http://prometheus:9090: bad_data: ")
    assert span.attributes["error.type"] == "SourceError"
    assert json.loads(span.attributes["gen_ai.tool.call.arguments"]) == {"query": REFUSED_QUERY}
