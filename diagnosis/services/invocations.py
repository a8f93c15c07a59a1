"""Recording tool calls, their evidence refs extracted by code.

Every call becomes one `ToolInvocation`. Its evidence refs are extracted by code here, at record
time, so the model can only cite text the tool really returned; its receipt (`tools.evidence.receipt`)
keeps the requests its source sent and the hash of its output. A failing tool, bad arguments or
an unknown tool name are recorded as `success=false` and never raised to the caller.

The calls of one executor turn are run first (no transaction open while a source answers), then
inserted together in one short transaction (`invocations_record`), so a turn costs one commit and
every call has its id (the `source_invocation_id` claims cite) before the model sees its message.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from pydantic import BaseModel, ValidationError

from diagnosis import tracing
from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.pipeline.contracts import record_path
from tools import clock
from tools.evidence.receipt import Receipt, receipt_of, requests_captured
from tools.evidence.record import EvidenceRecord
from tools.evidence.registry import current_name, tool_label
from tools.evidence.result import FAILED, NO_EVIDENCE, NO_EVIDENCE_PATH, NOT_EVIDENCE, SUPPORTED, ToolResult
from tools.evidence.tool import EvidenceTool, ToolContext, UnknownToolError, get_tool, guidance_tool_names
from tools.source_names import source_name

logger = logging.getLogger(__name__)

ERROR_CHARS = 1000
# What neither database stores: NUL (PostgreSQL refuses it in text and JSON) and surrogate code points
# (not UTF-8; a lone one from a broken source fails both). Replaced before refs index the output.
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"
# The class of a failure the tool reported in its output (`success: false`) rather than raised.
TOOL_REPORTED_FAILURE = "tool_failed"
# Sessions whose calls are a caller's own, their arguments as the caller wrote them (an MCP client's
# tool call, the claims someone asks to verify): a query written by someone is checked before it runs.
CALLER_WRITTEN_KINDS = frozenset({DiagnosisSession.Kind.TOOL, DiagnosisSession.Kind.VERIFY})


def invocation_record(
    *, session: DiagnosisSession, round: int, tool_name: str, arguments: dict
) -> ToolInvocation:
    """Run one tool call and record it (its own commit)."""
    return invocations_record(session=session, round=round, calls=[(tool_name, arguments)])[0]


def invocations_record(
    *,
    session: DiagnosisSession,
    round: int,
    calls: list[tuple[str, dict]],
    concurrency: int = 1,
    recorded: Sequence[ToolInvocation] | None = None,
    at: datetime | None = None,
    **progress: Any,
) -> list[ToolInvocation]:
    """Run the calls, up to `concurrency` at once, asking their sources about `at` (None: now, the tools'
    clock), then insert them all in one transaction, with
    `progress` (session columns for the live view, such as `current_stage`) written in the same commit.
    Two or more guidance lookups in one turn run one by one after the rest, so their blocks dedup
    against each other. `recorded`: the session's calls so far, when the caller keeps them (then a
    guidance lookup dedups against them instead of reading them back); None reads them when needed.
    A call by a tool's former name (a scripted model, an old recorded plan) is recorded under its name now."""
    calls = [(current_name(tool_name), arguments) for tool_name, arguments in calls]
    runs: list[_ToolRun | None] = [None] * len(calls)
    guidance = guidance_tool_names()
    lookups = [index for index, (name, _arguments) in enumerate(calls) if name in guidance]
    parallel = [index for index in range(len(calls)) if len(lookups) < 2 or index not in lookups]
    workers = min(concurrency, len(parallel))
    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tool-call") as pool:
            futures = {
                index: pool.submit(_run_in_thread, session, round, *calls[index], recorded, at)
                for index in parallel
            }
            for index, future in futures.items():
                runs[index] = future.result()
    else:
        for index in parallel:
            runs[index] = _invocation_run(
                session=session,
                round=round,
                tool_name=calls[index][0],
                arguments=calls[index][1],
                batch=[],
                recorded=recorded,
                at=at,
            )
    for index, (tool_name, arguments) in enumerate(calls):
        if runs[index] is None:
            done = [run.invocation for run in runs if run is not None]
            runs[index] = _invocation_run(
                session=session,
                round=round,
                tool_name=tool_name,
                arguments=arguments,
                batch=done,
                recorded=recorded,
                at=at,
            )
    with transaction.atomic():
        # One INSERT … RETURNING: PostgreSQL and SQLite ≥ 3.35 hand every row its id.
        recorded = ToolInvocation.objects.bulk_create([run.invocation for run in runs])
        if progress:
            DiagnosisSession.objects.filter(pk=session.pk, status=DiagnosisSession.Status.RUNNING).update(
                **progress
            )
    tracing.tool_calls_traced(_traced(run) for run in runs)
    return recorded


@dataclass(frozen=True)
class _ToolRun:
    """A call run and its record built, not yet saved; when it ran (ns since the epoch) and the class of
    its failure, for its span."""

    invocation: ToolInvocation
    started_ns: int
    ended_ns: int
    error_type: str


def _traced(run: _ToolRun) -> tracing.ToolCallTrace:
    invocation = run.invocation
    return tracing.ToolCallTrace(
        tool_name=invocation.tool_name,
        invocation_id=invocation.pk,
        round=invocation.round,
        started_ns=run.started_ns,
        ended_ns=run.ended_ns,
        source=invocation.source,
        evidence_status=invocation.evidence_status,
        evidence_refs=len(invocation.evidence_refs),
        error=invocation.error,
        error_type=run.error_type,
        arguments=invocation.input,
        message=lambda: invocation.tool_result().message(),
    )


def _run_in_thread(
    session: DiagnosisSession,
    round: int,
    tool_name: str,
    arguments: dict,
    recorded: Sequence[ToolInvocation] | None,
    at: datetime | None,
) -> _ToolRun:
    try:
        return _invocation_run(
            session=session,
            round=round,
            tool_name=tool_name,
            arguments=arguments,
            batch=[],
            recorded=recorded,
            at=at,
        )
    finally:
        connection.close()  # this worker thread's own connection; nobody else would close it


def _invocation_run(
    *,
    session: DiagnosisSession,
    round: int,
    tool_name: str,
    arguments: dict,
    batch: list[ToolInvocation],
    recorded: Sequence[ToolInvocation] | None,
    at: datetime | None = None,
) -> _ToolRun:
    """The call run and its record built, not yet saved; `batch` holds this turn's earlier calls."""
    started_ns = time.time_ns()
    started = time.perf_counter()
    answer = tool_answer(
        tool_name=tool_name,
        arguments=arguments,
        now=at or clock.now(),
        caller_written=session.kind in CALLER_WRITTEN_KINDS,
        seen_block_ids=lambda: blocks_seen(session, tool_name, batch, recorded),
    )
    elapsed = time.perf_counter() - started
    invocation = ToolInvocation(
        session=session,
        round=round,
        tool_name=tool_name,
        # The arguments as the database would give them back (JSON, not the caller's own dict): the rounds
        # read this row as kept, never read back.
        input=storable(json.loads(json.dumps(arguments or {}, ensure_ascii=False))),
        output=answer.output,
        success=not answer.error,
        error=answer.error,
        retrieval_details=answer.retrieval_details,
        latency_ms=int(elapsed * 1000),
        source=answer.receipt.source[:64],
        source_location=answer.receipt.location[:500],
        receipt=storable(answer.receipt.stored()),
    )
    ended_ns = started_ns + int(elapsed * 1e9)
    return _ToolRun(invocation, started_ns=started_ns, ended_ns=ended_ns, error_type=answer.error_type)


@dataclass(frozen=True)
class ToolAnswer:
    """One call run and not recorded: the output and refs a row stores, its error and its receipt. The
    recorder stores it; a replay (`diagnosis.services.replay`) compares it with the row."""

    output: dict[str, Any]
    retrieval_details: dict[str, Any]
    error: str
    # The class of the failure, for the call's span: an exception's, or TOOL_REPORTED_FAILURE.
    error_type: str
    receipt: Receipt


def tool_answer(
    *,
    tool_name: str,
    arguments: dict,
    now: datetime,
    caller_written: bool,
    seen_block_ids: Callable[[], set[str]],
) -> ToolAnswer:
    """Run one call at `now` as the recorder does, its source's requests captured on its receipt.
    `seen_block_ids` is asked only by a guidance lookup (the blocks the session returned before)."""
    tool: EvidenceTool | None = None
    parsed: BaseModel | None = None
    result: ToolResult | None = None
    source = location = error_type = ""
    with requests_captured() as sent:
        try:
            tool = get_tool(tool_name)
            source, location = tool.provenance()
            parsed = tool.arguments_model.model_validate(arguments or {})
            # Only guidance lookups dedup, so only they look up what the session has seen.
            context = ToolContext(
                now=now,
                seen_block_ids=seen_block_ids() if tool.is_guidance else set(),
                caller_written=caller_written,
            )
            result = tool.bounded_run(parsed, context)
            # Bounded before anything copies it; round-tripped so an output that cannot be stored fails
            # here, as this tool's failure.
            output = storable(json.loads(json.dumps(result.output(), ensure_ascii=False)))
            if output != result.output():
                # What the database cannot store was replaced: the refs quote the records as stored.
                result = tool.typed(output, parsed)
            error = "" if result.success else str(result.said or "工具返回失败")
            error_type = TOOL_REPORTED_FAILURE if error else ""
        except Exception as exc:  # any tool failure is recorded as a gap; the pipeline goes on
            if not isinstance(exc, UnknownToolError | ValidationError):
                logger.warning("tool %s failed", tool_name, exc_info=True)
            result, output, error, error_type = None, {}, tool_error_text(exc), type(exc).__name__
    error = storable(error[:ERROR_CHARS])
    if error:
        output = {**output, "success": False, "error": error}
    return ToolAnswer(
        output=output,
        retrieval_details=_retrieval_details(
            tool=tool, parsed=parsed, result=None if error else result, source=source
        ),
        error=error,
        error_type=error_type,
        receipt=receipt_of(
            source=source,
            location=location,
            evaluated_at=now,
            sent=sent,
            # A call that raised returned no data to hash.
            output=None if result is None else output,
        ),
    )


def collection_key_of(tool_name: str) -> str | None:
    """Where a tool's output keeps its records; None for helpers and unknown tools."""
    try:
        return get_tool(tool_name).collection_key
    except UnknownToolError:
        return None


def is_evidence_call(tool_name: str) -> bool:
    """Every call but a helper's: a call to an unknown tool was still an attempt to gather
    evidence (and failed), so it stays visible as a gap."""
    try:
        return get_tool(tool_name).is_evidence
    except UnknownToolError:
        return True


def is_guidance_call(tool_name: str) -> bool:
    """A call of a guidance tool (runbooks, past cases): indirect support at best, never a fact."""
    try:
        return get_tool(tool_name).is_guidance
    except UnknownToolError:
        return False


def blocks_seen(
    session: DiagnosisSession,
    tool_name: str,
    batch: list[ToolInvocation],
    recorded: Sequence[ToolInvocation] | None,
) -> set[str]:
    """Knowledge blocks already returned as evidence earlier in this session (per-session dedup),
    also by a call of this turn not yet saved."""
    seen: set[str] = set()
    if recorded is None:
        saved = session.tool_invocations.filter(tool_name=tool_name, success=True).values_list(
            "retrieval_details", flat=True
        )
    else:
        saved = [call.retrieval_details for call in recorded if call.tool_name == tool_name and call.success]
    unsaved = [run.retrieval_details for run in batch if run.tool_name == tool_name and run.success]
    for details in [*saved, *unsaved]:
        seen.update((details or {}).get("evidence_blocks") or ())
    return seen


def storable(value: Any) -> Any:
    """The JSON value with every string (keys too) stripped of what no database stores: a NUL in a
    log line or a runbook ends that text's character as U+FFFD, never the session."""
    if isinstance(value, str):
        return UNSTORABLE.sub(REPLACEMENT, value)
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [storable(item) for item in value]
    return value


def tool_error_text(exc: Exception) -> str:
    """A failed call in words: an unknown tool, the arguments that do not validate, or the exception."""
    if isinstance(exc, UnknownToolError):
        return f"未知工具: {exc.name}"
    if isinstance(exc, ValidationError):
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '参数'}: {e['msg']}" for e in exc.errors())
        return f"参数无效: {problems}"
    return f"{type(exc).__name__}: {exc}"


def _arguments_text(parsed: BaseModel | None) -> str:
    """What was searched, in words: each given argument by its field's title (`服务 checkout`)."""
    given = parsed.model_dump(mode="json", exclude_unset=True, exclude_none=True) if parsed else {}
    fields = type(parsed).model_fields if parsed else {}
    return "，".join(
        f"{(fields[key].title if key in fields else None) or key} {value}" for key, value in given.items()
    )


def no_hit_text(*, tool_name: str, searched: str, source: str) -> str:
    """'Nothing found' as a sentence naming what was searched and where, in the words people read
    (`在 日志查询（…，来源 Loki）中未检索到匹配记录`): claims quote it as it is written here."""
    where = "，".join(part for part in (searched, f"来源 {source_name(source)}" if source else "") if part)
    return f"在 {tool_label(tool_name)}{f'（{where}）' if where else ''}中未检索到匹配记录"


def _retrieval_details(
    *, tool: EvidenceTool | None, parsed: BaseModel | None, result: ToolResult | None, source: str
) -> dict[str, Any]:
    """The row's evidence status and refs; `result` is None for a failed call."""
    if tool is not None and not tool.is_evidence:
        return {"evidence_status": FAILED if result is None else NOT_EVIDENCE, "evidence_refs": []}
    if tool is None or result is None:
        details: dict[str, Any] = {"evidence_status": FAILED, "evidence_refs": []}
    else:
        details = _evidence(tool=tool, parsed=parsed, records=result.records, source=source)
    if tool is not None and tool.is_guidance:
        details |= _knowledge_details([] if result is None else result.records)
    return details


def _evidence(
    *, tool: EvidenceTool, parsed: BaseModel | None, records: list[EvidenceRecord], source: str
) -> dict[str, Any]:
    """One ref per record, in the text the record writes (deduped knowledge blocks are not new
    evidence), else the no-hit ref."""
    refs = [
        {"raw_path": record_path(tool.collection_key, index), "text": record.ref_text()}
        for index, record in enumerate(records)
        if not getattr(record, "deduped", False)
    ]
    if refs:
        return {"evidence_status": SUPPORTED, "evidence_refs": refs}
    text = no_hit_text(tool_name=tool.name, searched=_arguments_text(parsed), source=source)
    if records:
        text += f"（无新证据：{len(records)} 个知识块已在本会话中返回过）"
    return {"evidence_status": NO_EVIDENCE, "evidence_refs": [{"raw_path": NO_EVIDENCE_PATH, "text": text}]}


def _knowledge_details(blocks: list[EvidenceRecord]) -> dict[str, list[str]]:
    """Retrieval facts of the new blocks only: a deduped block is not new evidence."""
    fresh = [block for block in blocks if not getattr(block, "deduped", False)]

    def unique(field: str) -> list[str]:
        return list(dict.fromkeys(getattr(block, field) for block in fresh))

    return {
        "retrieval_layers": unique("retrieval_layer"),
        "relevance_levels": unique("relevance"),
        "source_documents": unique("source_document"),
        "evidence_blocks": unique("block_id"),
        "deduped_blocks": [block.block_id for block in blocks if getattr(block, "deduped", False)],
    }
