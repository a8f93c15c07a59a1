"""Evaluation fixtures: one folder per case holding a `case.yaml`, validated by the models below.

    question: 只确认 checkout 是否存在 KubePodCrashLooping 告警
    engine: rules                # rules | llm
    tags: [positive, narrow]
    settings: {MAX_ROUNDS: 1}    # DIAGNOSIS overrides for this case only
    tools:                       # the case's own tool data, on top of the demo world or instead of it
      query_logs: {mode: merge, logs: [...]}      # or `error: 日志服务连接超时` (the tool is down)
    script:                      # llm only: replies per stage, served by the fake OpenAI server
      executor: [...]
    expect:
      verdict: PASS
      output_type: NORMAL
      answer_contains: ["91%"]
      forbidden: [内存泄漏]      # never anywhere user-facing (answer + composer material)
      slot: {ask: existence, answer_contains: [KubePodCrashLooping]}  # on the answer's `结论` line
      subjects: [postgres]       # world subjects a PASS answer may name besides the question's

A broken file is reported as `<path>: <field>: <problem>`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from diagnosis.evaluation.templates import fixed_text_holding
from diagnosis.pipeline.asks.registry import KINDS
from diagnosis.pipeline.gatekeeper import RULE_SEVERITY
from diagnosis.pipeline.guards import CANDIDATE_RULE, EVIDENCE_AS_DATA_RULE, RESTATED_RULE
from diagnosis.pipeline.scope import FOCUS_RULE, SCOPE_RULE
from tools.evidence.registry import CATALOG, LOGS, PLANNABLE_TOOLS, current_name, kind_name
from tools.evidence.tool import get_tool

CASE_FILE = "case.yaml"
CASES_DIR = Path(__file__).resolve().parent / "cases"
# Worlds other than the demo one: `worlds/<name>/world.yaml` (its tools' records) and `vocabulary.json`.
WORLDS_DIR = Path(__file__).resolve().parent / "worlds"
VOCABULARY_FILE = "vocabulary.json"
# The demo world's records, read by the eval itself (not through the tools) to know its subjects.
# How the demo world is named where cases are grouped by world (a case naming no `world`).
DEMO_WORLD = "demo"
DEMO_WORLD_DIR = Path(__file__).resolve().parents[2] / "tools" / "data" / "demo_world"
# The demo clock every case runs at unless it says otherwise (the tests pin the same moment).
DEFAULT_NOW = "2026-11-29T15:00:00+08:00"
FIXTURE_SOURCE = "tools.sources.fixture.FixtureSource"

TAGS = {
    "positive": "the evidence exists and the answer should confirm it",
    "negative": "nothing matches; the answer may only say so",
    "adversarial": "a model, a tool or the data tries to get past a guard",
    "fabricated": "cites evidence that is not there: must be REJECT (recall metric)",
    "grounded": "every citation is real: must never be REJECT (false-reject metric)",
    "narrow": "a narrow question (只确认 / 是否存在)",
    "exclusion": "the question excludes topics",
    "retry": "a second round is expected",
    "english": "asked in English",
    "tool_failure": "a tool is down",
    "llm_failure": "the model endpoint fails",
    "gatekeeper": "exercises a gatekeeper rule",
    "verifier": "exercises the verdict computed over the verifier's checks",
    "composer": "exercises the composer guard",
    "parse": "malformed or truncated model output",
    "injection": "tool data tries to instruct the model",
    "unknown": "an unknown service or procedure",
    "knowledge": "runbooks and past cases",
    "seed003": "from the first design's eval matrix: narrow scope, pool logs, no placeholder records",
    "exported": "exported from a reviewed session",
    "known_gap": "the correct expectation for a wrong answer the product still gives (`--exclude-tag known_gap`)",
    "slot": "states the slot its question's ask must fill (`expect.slot`)",
    "cause": "asks why: the cause slot, and what a model may reason beyond it",
    "focus": "answers only what was asked: focus guard, inventory, unknown subjects",
    "vocabulary": "the world vocabulary as data",
    "polarity": "an excerpt that drops or adds a negation",
    "second_world": "a world other than the demo one (`world:`)",
    "recorded": "a world recorded from live sources, replayed through the real source clients",
    # Mutation tests (`tests/diagnosis/test_eval_mutations.py`): switching the guard off turns one red.
    "guard:citation": "catches the gatekeeper's citation check switched off",
    "guard:polarity": "catches the gatekeeper's negation and polarity checks switched off",
    "guard:label": "catches the label check (a line called an error, timeout or slow) switched off",
    "guard:exclusion": "catches the scope / exclusion guard switched off",
    "guard:focus": "catches the focus guard switched off",
    "guard:evidence_as_data": "catches the evidence-as-data guard (remedies, instructions) switched off",
    "guard:restated": "catches the guard that counts a claim restating a conclusion line as that slot switched off",
    "guard:candidates": "catches the guard that drops a root cause outside the ranked candidates, or uncited, switched off",
    "guard:citation_cap": "catches the verdict cap from the gatekeeper's severity switched off",
    "guard:coverage": "catches the coverage guard switched off",
    "guard:fail-closed": "catches the guard that caps a question word no ask answers (未能理解所问) switched off",
    "guard:composer": "catches the composer guard switched off",
    "guard:remedy": "catches the removal of remedies from the composed answer switched off",
    "guard:grounding": "catches the grounding check of claims against verified evidence switched off",
    "guard:verdict": "catches the verdict matrix switched off",
    "guard:disclosure": "catches what each output type shows the user switched off",
    "guard:retry": "catches retry routing switched off",
}
GUARD_TAG_PREFIX = "guard:"
# `cause`: the executor's cause path (the model explains code's ranked candidates by number).
Stage = Literal["planner", "executor", "verifier", "composer", "cause"]
# The kinds of ask a case may expect: the registered ones, so a new kind needs no line here. The eval
# still checks the pipeline against the case: a kind the pipeline stops producing fails its cases.
AskKind = Literal[tuple(KINDS)]
# The tools a case's world answers for are the ones a plan may name; a case written before a tool was
# renamed names it by its former name and still reads.
ToolName = Annotated[
    Literal[PLANNABLE_TOOLS],
    BeforeValidator(current_name),
]
KNOWN_RULES = {*RULE_SEVERITY, SCOPE_RULE, FOCUS_RULE, EVIDENCE_AS_DATA_RULE, RESTATED_RULE, CANDIDATE_RULE}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AlertRecord(_Strict):
    """An alert in the demo world's stored shape (`tools/data/demo_world/alerts.json`)."""

    alert_name: str
    service: str
    state: Literal["firing", "pending", "resolved"] = "firing"
    severity: str = "warning"
    started_minutes_ago: int = Field(ge=0)
    description: str
    labels: dict[str, str] = {}
    value: str = ""
    threshold: str = ""


class LogRecord(_Strict):
    """A log line in the demo world's stored shape (`tools/data/demo_world/logs.json`)."""

    minutes_ago: int = Field(ge=0)
    topic: Literal["system-metrics", "application-logs", "database-slow-query", "system-events"]
    level: Literal["DEBUG", "INFO", "WARN", "ERROR", "FATAL"]
    service: str
    instance: str = ""
    message: str
    metrics: dict[str, Any] = {}


class KnowledgeRecord(_Strict):
    block_id: str
    title: str
    content: str
    source_document: str = "runbooks/eval-fixture.md"
    exact_terms: list[str] = []
    section: str = ""


class RecordedCall(_Strict):
    """One recorded call, answered exactly as recorded: records as the tool returned them, or an error."""

    arguments: dict[str, Any]
    records: list[dict[str, Any]] = []
    error: str | None = None


class _ToolOverride(_Strict):
    # The field holding this tool's own records.
    records_field: ClassVar[str]

    mode: Literal["merge", "replace"] = "merge"
    error: str | None = None

    def source_data(self) -> dict[str, Any]:
        """The plain JSON `tools.sources.fixture.FixtureSource` serves."""
        data = self.model_dump(mode="json")
        records = data.pop(self.records_field)
        return {**data, "records": records}


class AlertsOverride(_ToolOverride):
    records_field = "alerts"
    alerts: list[AlertRecord] = []
    responses: list[RecordedCall] = []


class LogsOverride(_ToolOverride):
    records_field = "logs"
    logs: list[LogRecord] = []
    responses: list[RecordedCall] = []


class KnowledgeOverride(_ToolOverride):
    records_field = "blocks"
    blocks: list[KnowledgeRecord] = []


class ToolOverrides(_Strict):
    query_alerts: AlertsOverride | None = None
    query_logs: LogsOverride | None = None
    lookup_knowledge: KnowledgeOverride | None = None

    @model_validator(mode="before")
    @classmethod
    def _current_names(cls, data: Any) -> Any:
        """A case or world written before a tool was renamed keys its data by the former name."""
        if not isinstance(data, Mapping):
            return data
        return {current_name(name): override for name, override in data.items()}

    def source_data(self) -> dict[str, dict[str, Any]]:
        return {
            name: override.source_data()
            for name in type(self).model_fields
            if (override := getattr(self, name)) is not None
        }


def fixture_sources(tool_data: dict[str, dict[str, Any]], *, config: Mapping[str, Any]) -> dict[str, Any]:
    """The `settings.DIAGNOSIS` overrides that serve each tool's data (`ToolOverrides.source_data`)
    through `FixtureSource`, in place of the source the environment chose for the tool's kind."""
    kinds = {kind_name(source_kind) for tool in tool_data if (source_kind := get_tool(tool).source_kind)}
    # The metric catalog is the samples the log records carry: it follows the logs' data.
    if LOGS.tool in tool_data:
        kinds.add(CATALOG.package)
    return {
        "SOURCE_CLASSES": config["SOURCE_CLASSES"] | dict.fromkeys(kinds, FIXTURE_SOURCE),
        "FIXTURE_TOOL_DATA": tool_data,
    }


class CaseSettings(_Strict):
    """`settings.DIAGNOSIS` keys a case may change for itself."""

    MAX_ROUNDS: int | None = Field(default=None, ge=1, le=5)
    MAX_TOOL_CALLS: int | None = Field(default=None, ge=1, le=50)
    LOW_CONFIDENCE_THRESHOLD: float | None = Field(default=None, ge=0, le=1)
    LLM_TIMEOUT: float | None = Field(default=None, gt=0, le=60)
    LLM_MAX_RETRIES: int | None = Field(default=None, ge=0, le=5)
    # Sources a recorded world's case runs without (its other sources stay configured): a kind left
    # with none must be said to have none, never answered from the demo world.
    UNSET: list[Literal["PROMETHEUS_URL", "ALERTMANAGER_URL", "LOKI_URL", "RUNBOOKS_DIR"]] = []

    def overrides(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, exclude={"UNSET"})

    def unset(self) -> dict[str, None]:
        return dict.fromkeys(self.UNSET)


class ClaimCount(_Strict):
    min: int = Field(default=0, ge=0)
    max: int | None = Field(default=None, ge=0)


class ExpectedNumber(_Strict):
    """A number the slot's line must state within `tolerance` of `value`, in the unit the answer
    should use (a rate per second, a ratio in percent): a rate read twice moves a little."""

    value: float
    tolerance: float = Field(ge=0)


class SlotExpectation(_Strict):
    """The slot the answer must fill for the question's ask. The case author takes
    `answer_contains` and `answer_numbers` from the world's data (the value, the threshold, the step),
    never from product code."""

    ask: AskKind
    answer_contains: list[Annotated[str, Field(min_length=1)]] = []
    answer_numbers: list[ExpectedNumber] = []
    # The answer opens with one `结论` line per ask: the slot is filled there, not somewhere below.
    conclusion: bool = True

    @model_validator(mode="after")
    def _something_expected(self) -> SlotExpectation:
        if not (self.answer_contains or self.answer_numbers):
            raise ValueError("a slot needs answer_contains or answer_numbers")
        return self


class Expectation(_Strict):
    """What the finished session must look like. Unset fields are not checked."""

    status: Literal["COMPLETED", "FAILED"] = "COMPLETED"
    output_type: Literal["NORMAL", "LOW_CONFID_WITH_DISCLAIMER", "DEGRADED"] | None = None
    verdict: Literal["PASS", "LOW_CONFID", "REJECT"] | None = None
    gatekeeper_severity: Literal["none", "low_confid", "reject"] | None = None
    # Exactly these gatekeeper rules failed in the final round (order does not matter).
    failed_rules: list[str] | None = None
    # Rules that must be among the final round's gatekeeper and guard warnings (e.g. scope.excluded_topic).
    warnings_include: list[str] = []
    rounds: int | None = Field(default=None, ge=1)
    composer_status: Literal["valid", "replaced", "skipped"] | None = None
    executor_parse_status: Literal["valid", "repaired", "parse_failed"] | None = None
    # Every call of the tool ended with this evidence status.
    evidence_status: dict[ToolName, Literal["supported", "no_evidence", "failed"]] = {}
    # Claims kept after the scope guard, final round.
    claims: ClaimCount | None = None
    # One claim's verified citations come from all of these tools (e.g. an alert and its logs).
    a_claim_cites: list[ToolName] = []
    answer_contains: list[str] = []
    forbidden: list[str] = []
    error_contains: list[str] = []
    # Scripted stages the pipeline must never call (e.g. the verifier after a gatekeeper reject).
    not_called: list[Stage] = []
    slot: SlotExpectation | None = None
    # World subjects (services, alerts) a PASS answer may name although the question does not: a
    # list question's alerts, a typo's nearest names, a related alert's runbook.
    subjects: list[str] = []

    @field_validator("failed_rules", "warnings_include")
    @classmethod
    def _known_rules(cls, rules: list[str] | None) -> list[str] | None:
        unknown = sorted(set(rules or ()) - KNOWN_RULES)
        if unknown:
            raise ValueError(f"unknown rule(s) {unknown}; known: {sorted(KNOWN_RULES)}")
        return rules

    @model_validator(mode="after")
    def _something_checked(self) -> Expectation:
        if self.status == "COMPLETED" and not (self.verdict or self.output_type):
            raise ValueError("a completed session needs an expected verdict or output_type")
        return self


class EvalCase(_Strict):
    question: str = Field(min_length=1, max_length=2000)
    engine: Literal["rules", "llm"] = "rules"
    tags: list[str] = []
    description: str = ""
    now: datetime = datetime.fromisoformat(DEFAULT_NOW)
    settings: CaseSettings = CaseSettings()
    # Another world (`worlds/<name>`): its records replace the demo world's, its vocabulary is used.
    world: str | None = None
    tools: ToolOverrides = ToolOverrides()
    script: dict[Stage, list[Any]] = {}
    expect: Expectation
    # Filled in by the loader, never written in case.yaml.
    name: str = Field(default="", exclude=True)
    path: str = Field(default="", exclude=True)

    @field_validator("tags")
    @classmethod
    def _known_tags(cls, tags: list[str]) -> list[str]:
        unknown = sorted(set(tags) - TAGS.keys())
        if unknown:
            raise ValueError(f"unknown tag(s) {unknown}; known: {sorted(TAGS)}")
        return tags

    @field_validator("world")
    @classmethod
    def _known_world(cls, world: str | None) -> str | None:
        if world is not None and not (WORLDS_DIR / world / "world.yaml").is_file():
            known = sorted(path.name for path in WORLDS_DIR.iterdir() if path.is_dir())
            raise ValueError(f"unknown world {world!r}; known: {known}")
        return world

    def tool_overrides(self) -> ToolOverrides:
        """The case's own tool data over its world's (a tool the case sets is the case's)."""
        if not self.world:
            return self.tools
        world = world_tools(self.world)
        return ToolOverrides(
            **{name: getattr(self.tools, name) or getattr(world, name) for name in ToolOverrides.model_fields}
        )

    def vocabulary_file(self) -> Path | None:
        """The case folder's vocabulary.json (it may extend its world's), else its world's; None for a
        world without one (its team kept the product's shipped words)."""
        own = Path(self.path).parent / VOCABULARY_FILE if self.path else None
        if own and own.is_file():
            return own
        world = WORLDS_DIR / self.world / VOCABULARY_FILE if self.world else None
        return world if world and world.is_file() else None

    @model_validator(mode="after")
    def _consistent(self) -> EvalCase:
        if self.script and self.engine != "llm":
            raise ValueError("script is only for engine: llm")
        if not_scripted := set(self.expect.not_called) - set(self.script):
            raise ValueError(f"expect.not_called names stages without a script: {sorted(not_scripted)}")
        if "fabricated" in self.tags and self.expect.verdict != "REJECT":
            raise ValueError("a case tagged fabricated must expect verdict REJECT")
        if "grounded" in self.tags and self.expect.verdict in (None, "REJECT"):
            raise ValueError("a case tagged grounded must expect a verdict other than REJECT")
        if weak := self._weak_answer_checks():
            raise ValueError(f"answer_contains items that cannot fail: {'; '.join(weak)}")
        known = self.world_subjects().names
        if unknown := sorted(set(self.expect.subjects) - known):
            raise ValueError(
                f"expect.subjects names no subject of the case's world: {unknown}; known: {sorted(known)}"
            )
        return self

    def recorded_world(self) -> Path | None:
        """The folder of the case's world when it was recorded from live sources, else None."""
        if self.world and world_file(self.world).recording is not None:
            return WORLDS_DIR / self.world
        return None

    def _weak_answer_checks(self) -> list[str]:
        """The `answer_contains` items (also the slot's) that cannot fail: copied from the question, or
        part of the fixed text the product writes whatever the evidence."""
        slot_items = self.expect.slot.answer_contains if self.expect.slot else []
        weak = []
        for item in dict.fromkeys([*self.expect.answer_contains, *slot_items]):
            if item.strip().casefold() in self.question.casefold():
                weak.append(f"{item!r} is in the question")
            elif (template := fixed_text_holding(item)) is not None:
                weak.append(f"{item!r} is in the fixed text {template!r}")
        return weak

    def world_subjects(self) -> WorldSubjects:
        """The services and alerts of the records the case's tools serve (its own, its world's and,
        unless replaced, the demo world's; a recorded world's as its recording names them)."""
        if self.recorded_world():
            subjects = world_file(self.world).subjects
            return WorldSubjects(
                services=frozenset(subjects.services), alert_services=frozenset(subjects.alerts)
            )
        tools = self.tool_overrides()
        demo_alerts, demo_logs = demo_world_records()
        alerts = _served(override=tools.query_alerts, demo=demo_alerts)
        logs = _served(override=tools.query_logs, demo=demo_logs)
        return WorldSubjects(
            services=frozenset({alert.service for alert in alerts} | {log.service for log in logs}),
            alert_services=frozenset((alert.alert_name, alert.service) for alert in alerts),
        )

    @property
    def expected_label(self) -> str:
        if self.expect.status == "FAILED":
            return "FAILED"
        return "/".join(part for part in (self.expect.verdict, self.expect.output_type) if part)


@dataclass(frozen=True)
class WorldSubjects:
    """What a case's world is about, as its records name it: the services and the alerts on them."""

    services: frozenset[str]
    # (alert name, service) of every alert record: the alert fires on that service.
    alert_services: frozenset[tuple[str, str]]

    @property
    def alerts(self) -> frozenset[str]:
        return frozenset(alert for alert, _ in self.alert_services)

    @property
    def names(self) -> frozenset[str]:
        return self.services | self.alerts


@cache
def demo_world_records() -> tuple[tuple[AlertRecord, ...], tuple[LogRecord, ...]]:
    def read(name: str) -> list[dict[str, Any]]:
        return json.loads((DEMO_WORLD_DIR / name).read_text(encoding="utf-8"))

    return (
        tuple(AlertRecord.model_validate(alert) for alert in read("alerts.json")),
        tuple(LogRecord.model_validate(log) for log in read("logs.json")),
    )


def _served(*, override: AlertsOverride | LogsOverride | None, demo: tuple) -> list:
    """The records a tool serves: the demo world's, the override's own, or both (merge)."""
    own = getattr(override, override.records_field) if override else []
    return own if override and override.mode == "replace" else [*demo, *own]


class RecordedSources(_Strict):
    """A world recorded from live sources (`recording.json`, replayed through the real source clients)."""

    loki_tenant: str | None = None


class RecordedSubjects(_Strict):
    services: list[str] = []
    # [alert name, service] of every recorded alert.
    alerts: list[tuple[str, str]] = []


class WorldFile(_Strict):
    tools: ToolOverrides = ToolOverrides()
    recording: RecordedSources | None = None
    subjects: RecordedSubjects = RecordedSubjects()


def world_file(name: str) -> WorldFile:
    raw = yaml.safe_load((WORLDS_DIR / name / "world.yaml").read_text(encoding="utf-8")) or {}
    return WorldFile.model_validate(raw)


def world_tools(name: str) -> ToolOverrides:
    return world_file(name).tools


class CaseFileError(ValueError):
    """A case file that cannot be read or does not validate; the message names the file and field."""


def case_load(path: Path) -> EvalCase:
    """Load one case from its folder or its case.yaml."""
    file = path / CASE_FILE if path.is_dir() else path
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CaseFileError(f"{file}: cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise CaseFileError(f"{file}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise CaseFileError(f"{file}: must be a mapping with question, expect, ...")
    try:
        case = EvalCase.model_validate(raw)
    except ValidationError as exc:
        problems = "\n".join(
            f"{file}: {'.'.join(str(part) for part in error['loc']) or '(top level)'}: {error['msg']}"
            for error in exc.errors()
        )
        raise CaseFileError(problems) from exc
    return case.model_copy(update={"name": file.parent.name, "path": str(file)})


def cases_discover(paths: list[Path] | None = None) -> list[EvalCase]:
    """Every case under the given folders or files (default: the shipped cases), sorted by name."""
    files: list[Path] = []
    for path in paths or [CASES_DIR]:
        if path.is_file():
            files.append(path)
        elif (path / CASE_FILE).is_file():
            files.append(path / CASE_FILE)
        elif path.is_dir():
            files.extend(sorted(path.rglob(CASE_FILE)))
        else:
            raise CaseFileError(f"{path}: no such case file or folder")
    return sorted((case_load(file) for file in dict.fromkeys(files)), key=lambda case: case.name)
