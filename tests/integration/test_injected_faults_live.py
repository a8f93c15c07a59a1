"""Injected faults with known causes on the exporter stack (§23): one stack for the module (nginx,
PostgreSQL, Redis, their exporters, blackbox, node_exporter, Prometheus scraping every second,
Alertmanager, the log files in the test Loki server, and `checkout` behind nginx), a clean baseline,
then each fault in turn, held while a "为什么…" question is asked of both engines (the llm engine:
the real openai SDK against the local fake server), then undone and let settle.

The first root-cause candidate must be the component the fault was injected into, and its numbers
(before → after) must lie within what the same series held before and during the fault, read here
straight from Prometheus."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command

from diagnosis.evaluation.fake_llm import FakeOpenAIServer
from tests.integration.exporter_stack import missing_packages
from tests.integration.fault_stack import FaultStack, fault_stack_start

pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.django_db]

# Seconds of fault-free traffic before the first fault (the rates read over 3 minutes settle), each
# fault is held before it is asked about, and the stack settles after one (those rates decay).
BASELINE_SECONDS = 300
HOLD_SECONDS = 75
SETTLE_SECONDS = 150
ZONE = ZoneInfo("Asia/Shanghai")
CANDIDATE = re.compile(
    r"^结论：根因候选：(?P<subject>[^（]+)（(?P<mechanism>[^，]+)，\d\d:\d\d起，(?P<before>[^→]+) → (?P<after>[^）]+)）"
)
UNITS = {"核": 1, "GiB": 2**30, "MiB": 2**20, "KiB": 2**10, "B": 1, "ms": 1e-3, "s": 1, "": 1}


@dataclass(frozen=True)
class Fault:
    name: str
    question: str
    component: str
    hold_seconds: float = HOLD_SECONDS


# In the order they are injected: no two in a row move the same component's signals.
FAULTS = (
    # A latency is read at its 90th percentile over the 3-minute rate window: held 75 s, the slowed
    # requests are under a tenth of checkout's in most of the points after the start and its p90
    # barely moves (9 → 16 ms); held past the window, the slowdown is what checkout's latency says.
    Fault("slow_upstream", "从 {start} 开始，/api/checkout/ 为什么变慢了？", "checkout", hold_seconds=240),
    Fault("redis_full", "从 {start} 开始，缓存的 key 为什么一直被驱逐？", "redis"),
    # Checkout's error lines name PostgreSQL's address, which postgres_exporter's `server` label says
    # is postgres's: checkout's latency (83 ms → 1.24 s) is then explained by the lock holder, whose
    # locks and transaction age rose.
    Fault("postgres_lock", "从 {start} 开始，/api/checkout/ 为什么变慢、返回 500？", "postgres"),
    Fault("cpu_burner", "从 {start} 开始，CPU 为什么升高了？", "checkout"),
    Fault("upstream_stopped", "从 {start} 开始，/api/checkout/ 为什么返回 502？", "checkout"),
)


@pytest.fixture(scope="module")
def faults() -> Iterator[FaultStack]:
    if missing := missing_packages():
        pytest.fail(f"Debian packages missing: {', '.join(missing)} (`make sources-stack` installs them)")
    running = fault_stack_start()
    try:
        time.sleep(BASELINE_SECONDS)
        yield running
    finally:
        running.stop()


@pytest.fixture
def sources(settings, faults, monkeypatch):
    settings.DIAGNOSIS = (
        settings.DIAGNOSIS
        | faults.stack.settings()
        | {"VOCABULARY_FILE": None, "DEMO_NOW": None, "LLM_TIMEOUT": 10.0, "LLM_MAX_RETRIES": 1}
    )
    with FakeOpenAIServer(None) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield settings.DIAGNOSIS


def asked(question: str, engine: str, capsys) -> dict:
    call_command("diagnose", question, "--engine", engine, "--json")
    return json.loads(capsys.readouterr().out)


def first_conclusion(trace: dict) -> str:
    lines = trace["session"]["answer"].splitlines()
    return next((line for line in lines if line.startswith("结论：")), trace["session"]["answer"][:300])


def amount(text: str) -> float:
    """`38.2 ms`, `1.41 s`, `0.97 核`, `8 MiB`, `120/s`, `1` as a number in the base unit."""
    found = re.fullmatch(r"(-?[\d.]+(?:e-?\d+)?)\s*([^\d\s/]*)(?:/s)?", text.strip())
    assert found, text
    return float(found[1]) * UNITS[found[2]]


def cited(trace: dict) -> tuple[str, dict]:
    """The query and the series labels the first candidate's numbers are computed from."""
    [slot] = [
        s for s in trace["self_evaluation"]["verifier_evaluation"]["slots"] if s["ask"]["kind"] == "cause"
    ]
    binding = slot["bindings"][0]
    [invocation] = [i for i in trace["tool_invocations"] if i["id"] == binding["source_invocation_id"]]
    index = int(re.fullmatch(r"\$\.series\[(\d+)\]", binding["raw_path"])[1])
    return invocation["input"]["query"], invocation["output"]["series"][index]["metric"]


def read(faults: FaultStack, query: str, labels: dict, start: float, end: float) -> list[float]:
    """The series' values over [start, end], read straight from Prometheus."""
    series = faults.stack.prometheus("/api/v1/query_range", query=query, start=start, end=end, step=5)
    [values] = [[float(v) for _, v in s["values"]] for s in series["result"] if s["metric"] == labels]
    return [value for value in values if not math.isnan(value)]


def within(said: float, values: list[float]) -> bool:
    """Whether a said number (three significant digits) lies within what the series held."""
    return min(values) * 0.99 - 1e-3 <= said <= max(values) * 1.01 + 1e-3


@pytest.mark.parametrize("fault", FAULTS, ids=lambda fault: fault.name)
def test_an_injected_fault_names_its_component_first_with_its_numbers(faults, sources, capsys, fault):
    # Injected at the start of a minute: the question's start (a minute) is the injection's.
    time.sleep(60 - time.time() % 60 + 1)
    began = time.time()
    question = fault.question.format(start=datetime.now(ZONE).strftime("%H:%M"))
    with getattr(faults, fault.name)():
        time.sleep(fault.hold_seconds)
        traces = {engine: asked(question, engine, capsys) for engine in ("rules", "llm")}
        now = time.time()
    time.sleep(SETTLE_SECONDS)

    for engine, trace in traces.items():
        line = first_conclusion(trace)
        with capsys.disabled():
            print(f"\n{fault.name} · {engine} · {question}\n  {line}", flush=True)
        found = CANDIDATE.match(line)
        assert found and found["subject"] == fault.component, (engine, line)
        query, labels = cited(trace)
        before, after = (
            read(faults, query, labels, began - 600, began),
            read(faults, query, labels, began, now),
        )
        assert within(amount(found["before"]), before), (engine, line, query, before)
        assert within(amount(found["after"]), after), (engine, line, query, after)
        assert trace["session"]["engine"] == engine
