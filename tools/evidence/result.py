"""What one tool call returned, typed: `ToolResult` (status, typed records, refs, source, the request as
sent, truncation) from the recorder to the readers, and the bounded message the model reads built from it.

The database keeps the call's output as JSON (the records under the kind's collection key) and its refs
in `retrieval_details`; `ToolResult.from_stored` reads that once, at the database boundary, and
`message()` writes the model's JSON at the model boundary. Between them code reads fields.
Django-free: the pipeline reads these results.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from tools.evidence.kind import EvidenceKind
from tools.evidence.record import EvidenceRecord

# Where the ref of a search that found nothing points.
NO_EVIDENCE_PATH = "$.no_evidence"
# A result's evidence_status: records cited, nothing found, failed; a helper's is never evidence.
SUPPORTED, NO_EVIDENCE, FAILED = "supported", "no_evidence", "failed"
NOT_EVIDENCE = "not_evidence"
# The tool message is bounded; the stored output stays complete and raw paths index into it.
MESSAGE_OUTPUT_CHARS = 4000
MESSAGE_REFS = 30
MESSAGE_REF_CHARS = 1000


class Ref(BaseModel):
    """One evidence ref: where it points (`$.logs[3]`, or the no-hit path) and the text its record wrote."""

    model_config = ConfigDict(frozen=True)

    path: str
    # The record's index in the result's records; None for the no-hit ref.
    index: int | None = None
    text: str

    def stored(self) -> dict[str, str]:
        return {"raw_path": self.path, "text": self.text}


class Request(BaseModel):
    """The request as sent, where the arguments say it: the query and the window (minutes, 0 = instant)."""

    query: str = ""
    minutes: int | None = None


class ToolResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    tool_name: str
    # The kind whose records it holds, given by whoever builds it (the result cannot import the registry:
    # the kinds' tools return results); None for a call not run.
    kind: SkipValidation[EvidenceKind | None] = Field(default=None, exclude=True)
    # None for a call that was not run (the round's budget was spent, a name it could not ground).
    invocation_id: int | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    success: bool
    # supported / no_evidence / failed / not_evidence
    evidence_status: str = FAILED
    source: str = ""
    records: list[EvidenceRecord] = Field(default_factory=list)
    refs: list[Ref] = Field(default_factory=list)
    # What the output says besides its records (`message`, `total`, `result_type`, `retention_minutes`),
    # in its stored order with `records_at` marking where the records stand.
    details: dict[str, Any] = Field(default_factory=dict)
    records_at: int | None = None
    error: str = ""
    # Names code resolved in the arguments before the call ran (`{"checkout-svc": "checkout"}`).
    resolved_names: dict[str, str] = Field(default_factory=dict)
    # A call not run because a name in it is unknown: the nearest known names (None for any other call).
    nearest_names: list[str] | None = None

    @classmethod
    def from_stored(
        cls,
        *,
        tool_name: str,
        kind: EvidenceKind | None,
        invocation_id: int | None,
        arguments: dict[str, Any],
        success: bool,
        output: dict[str, Any],
        retrieval_details: dict[str, Any],
        source: str = "",
        error: str = "",
    ) -> ToolResult:
        """A recorded call as its row stores it: the output JSON and the refs extracted at record time."""
        return cls.from_output(
            tool_name=tool_name,
            kind=kind,
            arguments=arguments,
            output=output,
            source=source,
            invocation_id=invocation_id,
            success=success,
            evidence_status=(retrieval_details or {}).get("evidence_status", FAILED),
            refs=refs_read(retrieval_details, key=kind.collection_key if kind is not None else None),
            error=error,
        )

    @classmethod
    def from_output(
        cls,
        *,
        tool_name: str,
        kind: EvidenceKind | None,
        arguments: dict[str, Any],
        output: dict[str, Any],
        source: str = "",
        **fields: Any,
    ) -> ToolResult:
        """An output JSON typed: its records (under the kind's collection key) as the kind's records, the
        rest as details in their order; a tool types its source's answer with it, a reader a stored row."""
        key = kind.collection_key if kind is not None else None
        stored_records = output.get(key) if key else None
        records_at = None
        details = {}
        for position, (name, value) in enumerate((output or {}).items()):
            if name == key and isinstance(stored_records, list):
                records_at = position
            else:
                details[name] = value
        records = (
            [kind.record.model_validate(record) for record in stored_records]
            if kind is not None and kind.record is not None and isinstance(stored_records, list)
            else []
        )
        fields.setdefault("success", (output or {}).get("success", True) is not False)
        return cls(
            tool_name=tool_name,
            kind=kind,
            arguments=arguments or {},
            source=source,
            records=records,
            details=details,
            records_at=records_at,
            **fields,
        )

    @property
    def request(self) -> Request:
        minutes = self.arguments.get("minutes")
        return Request(
            query=str(self.arguments.get("query") or ""),
            minutes=int(minutes) if isinstance(minutes, int) or str(minutes).isdigit() else None,
        )

    @property
    def total(self) -> int:
        """How many records the source matched (the tool's `total`), else how many were served."""
        total = self.details.get("total")
        return total if isinstance(total, int) else len(self.records)

    @property
    def said(self) -> str:
        """What the tool said of its answer in words (its output's `message`), else ""."""
        message = self.details.get("message")
        return message if isinstance(message, str) else ""

    @property
    def truncated(self) -> bool:
        """Whether the stored output was cut to its bounds (`tools.bounds`)."""
        return self.details.get("truncated") is True

    @property
    def totals(self) -> dict[str, int]:
        """The totals of a cut output before the cut (`total_series`, `total_lines`)."""
        return {
            name: value
            for name, value in self.details.items()
            if name.startswith("total_") and isinstance(value, int)
        }

    def cited(self) -> list[tuple[EvidenceRecord, Ref]]:
        """Each record a ref cites, with that ref, in the records' order (a deduped block has none)."""
        by_index = {ref.index: ref for ref in self.refs if ref.index is not None}
        return [(record, by_index[i]) for i, record in enumerate(self.records) if i in by_index]

    def record_at(self, raw_path: str | None) -> EvidenceRecord | None:
        """The record a raw_path (`$.series[0]`) points at; None when it points at none of them."""
        kind = self.kind
        index = _index_of(raw_path or "", kind.collection_key if kind is not None else None)
        return self.records[index] if index is not None and index < len(self.records) else None

    def ref_at(self, raw_path: str | None) -> Ref | None:
        return next((ref for ref in self.refs if ref.path == raw_path), None)

    def no_hit(self) -> Ref | None:
        return next((ref for ref in self.refs if ref.path == NO_EVIDENCE_PATH), None)

    def output(self) -> dict[str, Any]:
        """The output as the row stores it: the details with the records back where they stood."""
        kind = self.kind
        if self.records_at is None or kind is None or kind.collection_key is None:
            return dict(self.details)
        items = list(self.details.items())
        items.insert(self.records_at, (kind.collection_key, [record.stored() for record in self.records]))
        return dict(items)

    def message(self) -> dict[str, Any]:
        """What the model sees: enough to cite `source_invocation_id + raw_path + excerpt` exactly, the
        refs and the output bounded."""
        if self.invocation_id is None:
            return self._not_run_message()
        message: dict[str, Any] = {
            "invocation_id": self.invocation_id,
            "tool_name": self.tool_name,
            "source": self.source,
            "success": self.success,
            "evidence_status": self.evidence_status,
            "evidence_refs": [
                {"raw_path": ref.path, "text": ref.text[:MESSAGE_REF_CHARS]}
                for ref in self.refs[:MESSAGE_REFS]
            ],
            "output": self._bounded_output(),
        }
        if len(self.refs) > MESSAGE_REFS:
            message["evidence_refs_omitted"] = len(self.refs) - MESSAGE_REFS
        if self.error:
            message["error"] = self.error
        return message

    def model_message(self) -> dict[str, Any]:
        """`message()` as the executor's model reads it: with the arguments it ran with (so a later turn
        can tell what was searched) and the names code resolved in them."""
        message = self.message()
        if self.invocation_id is not None:
            message["arguments"] = self.arguments
        if self.resolved_names:
            message["resolved_names"] = self.resolved_names
        return message

    def _not_run_message(self) -> dict[str, Any]:
        if self.nearest_names is not None:
            return {
                "tool_name": self.tool_name,
                "success": False,
                "error": self.error,
                "nearest_names": self.nearest_names,
            }
        return {
            "invocation_id": None,
            "tool_name": self.tool_name,
            "success": False,
            "evidence_status": self.evidence_status,
            "evidence_refs": [],
            "error": self.error,
        }

    def _bounded_output(self) -> dict[str, Any]:
        """The output within MESSAGE_OUTPUT_CHARS: a prefix of its records (so raw paths still line up)
        and a note of how many were left out."""
        output = self.output()
        kind = self.kind
        key = kind.collection_key if kind is not None else None
        records = output.get(key) if key else None
        # Only record lists grow: failed outputs are capped by the error's bound, helper outputs are tiny.
        if not isinstance(records, list) or _json_chars(output) <= MESSAGE_OUTPUT_CHARS:
            return output
        note = (
            "输出过长，只列出前 {kept} 条，另有 {omitted} 条未列出；"
            "完整输出已记录，按 evidence_refs 的 raw_path 引用"
        )
        used = _json_chars({**output, key: [], "omitted_records": len(records), "note": note})
        kept = 0
        for record in records:
            used += _json_chars(record) + 2
            if used > MESSAGE_OUTPUT_CHARS:
                break
            kept += 1
        omitted = len(records) - kept
        return {
            **output,
            key: records[:kept],
            "omitted_records": omitted,
            "note": note.format(kept=kept, omitted=omitted),
        }


def not_run(tool_name: str, *, error: str, nearest_names: list[str] | None = None) -> ToolResult:
    """A call refused before it ran: nothing recorded, nothing to cite."""
    return ToolResult(
        tool_name=tool_name, success=False, evidence_status=FAILED, error=error, nearest_names=nearest_names
    )


def refs_read(retrieval_details: dict[str, Any], *, key: str | None) -> list[Ref]:
    """The refs a row stores in its `retrieval_details`, typed, without reading its records."""
    return [
        Ref(path=ref["raw_path"], index=_index_of(ref["raw_path"], key), text=ref["text"])
        for ref in (retrieval_details or {}).get("evidence_refs") or []
    ]


def _index_of(path: str, key: str | None) -> int | None:
    prefix = f"$.{key}["
    if key and path.startswith(prefix) and path.endswith("]") and path[len(prefix) : -1].isdigit():
        return int(path[len(prefix) : -1])
    return None


def _json_chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))
