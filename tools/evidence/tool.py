"""Evidence tools are plugins: a base class, a registry, one tool per kind (`tools.evidence.<kind>.tool`).

A tool validates its arguments with a pydantic model (which also gives the JSON schema the LLM
sees), asks the source of its kind for records, and returns them typed (`ToolResult`). It knows nothing about
sessions or the database: recording and evidence extraction happen in `diagnosis.services.invocations`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar, cast

import openai
from pydantic import BaseModel, ConfigDict

from tools.bounds import OutputBounds, output_bounded
from tools.evidence.kind import EvidenceKind
from tools.evidence.result import ToolResult
from tools.evidence.source import Source

SourceT = TypeVar("SourceT", bound=Source)


@dataclass
class SourceChoice:
    """Which source answers a kind now and what would configure one: the sources' choice (`tools.sources`).

    The backends there implement the kinds' protocols, so they import the kinds' packages and the tools
    cannot import them back; the tools app hands the choice over when it starts (`tools.apps`).
    """

    source_for: Callable[[type[Source]], Source | None] | None = None
    settings_needed: Callable[[type[Source]], str] | None = None

    def chosen(self, kind: type[Source]) -> Source | None:
        if self.source_for is None:
            raise RuntimeError("no source choice yet: the tools app has not started")
        return self.source_for(kind)

    def needed(self, kind: type[Source]) -> str:
        return self.settings_needed(kind) if self.settings_needed is not None else ""


SOURCES = SourceChoice()
# The most text a free-text argument carries: as much as a chat question
# (`diagnosis.services.sessions.MAX_QUERY_CHARS` is this bound), so no call stores or sends more.
MAX_TEXT_CHARS = 2000


class ToolArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass
class ToolContext:
    """What a tool may know about the call beyond its arguments."""

    now: datetime
    # lookup_knowledge blocks already returned earlier in this session (per-session dedup).
    seen_block_ids: set[str] = field(default_factory=set)
    # The arguments are a caller's own (an MCP client's call), not planned by a diagnosis: a query
    # written by someone is checked before it reaches a source.
    caller_written: bool = False


class SourceUnavailableError(RuntimeError):
    """No source answers the tool's kind (PromQL without Prometheus)."""


class EvidenceTool(ABC, Generic[SourceT]):
    # The tool's row in `tools.evidence.registry`: its name, record list key and guidance flag come from it.
    kind: ClassVar[EvidenceKind]
    name: ClassVar[str]
    description: ClassVar[str]
    arguments_model: ClassVar[type[ToolArguments]]
    # Key of the record list in the output (`alerts`, `logs`, `evidence_blocks`); None = helper tool.
    collection_key: ClassVar[str | None] = None
    # What one record is called in the totals of a cut output (`total_series`, `total_lines`).
    record_noun: ClassVar[str] = "records"
    # Guidance (runbooks, past cases), never a current-incident fact: it can support a claim only
    # indirectly. Its records are knowledge blocks, deduped per session and ranked by layer.
    is_guidance: ClassVar[bool] = False
    # The protocol of the source it reads (its kind's `source`), None for a helper; which source answers
    # is chosen by environment, and the tool never knows which.
    source_kind: ClassVar[type[Source] | None] = None
    # What it says when no source answers its kind: "PromQL 需要 Prometheus 数据源"; by default its
    # kind's `unconfigured` ("未配置日志源").
    source_needed: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            cls.name, cls.collection_key, cls.is_guidance, cls.record_noun, cls.source_kind = (
                cls.kind.tool,
                cls.kind.collection_key,
                cls.kind.guidance,
                cls.kind.counted_as,
                cls.kind.source,
            )
            if "source_needed" not in cls.__dict__:
                cls.source_needed = cls.kind.unconfigured

    @property
    def is_evidence(self) -> bool:
        return self.collection_key is not None

    def source(self) -> SourceT:
        """The source of its kind now; SourceUnavailableError (naming what to set) when none answers."""
        source = self._current_source()
        if source is None:
            needed = SOURCES.needed(self.source_kind) if self.source_kind is not None else ""
            raise SourceUnavailableError(f"{self.source_needed}：未设置 {needed}")
        return cast(SourceT, source)

    def available(self) -> bool:
        """Whether a source answers it now (PromQL needs Prometheus); a helper always is."""
        return self.source_kind is None or self._current_source() is not None

    def provenance(self) -> tuple[str, str]:
        """(kind, location) of the source that would answer it now; empty when none would."""
        source = self._current_source()
        return source.provenance() if source is not None else ("", "")

    def _current_source(self) -> Source | None:
        return SOURCES.chosen(self.source_kind) if self.source_kind is not None else None

    @abstractmethod
    def run(self, arguments: ToolArguments, context: ToolContext) -> ToolResult:
        """The call's result, its source's answer typed (`typed`). Raise on failure; the recorder turns
        it into success=false."""

    def typed(self, output: dict[str, Any], arguments: ToolArguments) -> ToolResult:
        """The output a tool built from its source's answer as a `ToolResult`: its records the kind's
        typed records, the rest (message, total, result_type…) its details, with the request as sent."""
        return ToolResult.from_output(
            tool_name=self.name,
            kind=self.kind,
            arguments=arguments.model_dump(mode="json"),
            output=output,
            source=self.provenance()[0],
        )

    def bounded_run(self, arguments: ToolArguments, context: ToolContext) -> ToolResult:
        """`run`, its records cut to the configured bounds before anything keeps or reads them; a cut
        result says so (`truncated`, `totals`)."""
        result = self.run(arguments, context)
        if self.collection_key is None:
            return result
        output = result.output()
        bounded = output_bounded(
            output, key=self.collection_key, noun=self.record_noun, bounds=OutputBounds.configured()
        )
        return result if bounded is output else self.typed(bounded, arguments)

    def openai_tool(self) -> dict[str, Any]:
        """The function-tool definition sent to an OpenAI-compatible endpoint: strict parameters
        (every argument required, nullable when optional), built by the SDK's public helper."""
        return openai.pydantic_function_tool(
            self.arguments_model, name=self.name, description=self.description
        )


_REGISTRY: dict[str, EvidenceTool[Any]] = {}


def register(tool_class: type[EvidenceTool[Any]]) -> type[EvidenceTool[Any]]:
    _REGISTRY[tool_class.name] = tool_class()
    return tool_class


def get_tool(name: str) -> EvidenceTool[Any]:
    """The tool of that name, also by a name it had before (recorded sessions, shipped cases)."""
    tool = next((tool for tool in _REGISTRY.values() if tool.kind.owns(name)), None)
    if tool is None:
        raise UnknownToolError(name)
    return tool


def all_tools() -> list[EvidenceTool[Any]]:
    return list(_REGISTRY.values())


def guidance_tool_names() -> frozenset[str]:
    """The registered guidance tools (the pipeline's verdict caps what they can support)."""
    return frozenset(tool.name for tool in all_tools() if tool.is_guidance)


class UnknownToolError(LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown tool: {name}")
        self.name = name
