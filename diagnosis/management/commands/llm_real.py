"""`manage.py llm_real`: questions through the llm engine against a real local model, each beside the
rules engine on the same question.

Starts llama.cpp's `llama-server` (built by `diagnosis/evaluation/real_llm/llama_server.sh`) on a
free 127.0.0.1 port with the given GGUF, asks each question once with each engine, inline on a
throwaway database, prints per question the slots filled (llm / rules), the verdicts, the llm
session's prompt tokens, both wall times and the llm's tool calls with a name the sources do not
know that reached a source unresolved, then a summary; and stops the server. The demo world's
questions by default; `--question` (repeatable) and the source options (`--prometheus` …) ask other
questions of other sources: `python -m tests.integration.llm_real_stack` runs the integration tests'
questions against the real stack they start. Minutes of CPU per question on a small machine: not part
of the test suite (`make test-llm-real`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.test import override_settings

from diagnosis.evaluation.database import throwaway_database
from diagnosis.evaluation.real_llm.comparison import HEADER, engines_compared, summary_lines
from tools.demo_questions import demo_questions

QUESTIONS = demo_questions()
SERVER_START_SECONDS = 180
# Source options → the DIAGNOSIS settings they set (as a team configures its own sources).
SOURCE_SETTINGS = {
    "prometheus": "PROMETHEUS_URL",
    "alertmanager": "ALERTMANAGER_URL",
    "loki": "LOKI_URL",
    "loki_tenant": "LOKI_TENANT",
    "runbooks": "RUNBOOKS_DIR",
    "vocabulary": "VOCABULARY_FILE",
}


class Command(BaseCommand):
    help = "Ask questions of the llm engine against a local llama-server and a GGUF model, beside the rules engine."

    def add_arguments(self, parser):
        parser.add_argument("--server", required=True, help="path of the llama-server binary")
        parser.add_argument("--model", required=True, help="path of the GGUF model")
        parser.add_argument(
            "--question", action="append", default=[], help="a question to ask (default: the demo world's)"
        )
        parser.add_argument("--questions", type=int, help="ask only the first N questions")
        parser.add_argument("--context", type=int, default=8192, help="context tokens of the server")
        parser.add_argument("--structured-output", default="json_schema")
        parser.add_argument("--tool-calls", default="native")
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument("--prometheus", help="Prometheus base URL (instead of the demo world)")
        parser.add_argument("--alertmanager", help="Alertmanager base URL")
        parser.add_argument("--loki", help="Loki base URL")
        parser.add_argument("--loki-tenant", help="Loki X-Scope-OrgID")
        parser.add_argument("--runbooks", help="runbooks folder")
        parser.add_argument("--vocabulary", help="vocabulary file")
        parser.add_argument(
            "--replies",
            type=Path,
            help="directory to write each llm session's steps to (the model's replies, as stored), one JSON file per question",
        )

    def handle(self, *args, **options):
        for path in (options["server"], options["model"]):
            if not Path(path).is_file():
                raise CommandError(f"not found: {path}")
        questions = (options["question"] or QUESTIONS)[: options["questions"]]
        # A stopped run still stops its server (the `finally` below) instead of leaving it on both cores.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        with _llama_server(options) as base_url, throwaway_database(), self._endpoint(base_url, options):
            comparisons = []
            self.stdout.write(HEADER)
            for number, question in enumerate(questions, start=1):
                comparison = engines_compared(question, number=number)
                comparisons.append(comparison)
                for line in comparison.lines():
                    self.stdout.write(line)
                if options["replies"]:
                    _write_steps(comparison.llm.session, options["replies"] / f"question-{number:02d}.json")
            for line in summary_lines(comparisons):
                self.stdout.write(line)

    @contextmanager
    def _endpoint(self, base_url: str, options: dict):
        saved = {key: os.environ.get(key) for key in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
        os.environ.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="local")
        diagnosis = settings.DIAGNOSIS | {
            "LLM_MODEL": Path(options["model"]).stem,
            "LLM_CONTEXT_TOKENS": options["context"],
            "LLM_STRUCTURED_OUTPUT": options["structured_output"],
            "LLM_TOOL_CALLS": options["tool_calls"],
        }
        if options["prometheus"]:
            # The team's own sources, read live: no demo clock.
            diagnosis |= {name: options[option] for option, name in SOURCE_SETTINGS.items()} | {
                "DEMO_NOW": None
            }
        try:
            with override_settings(DIAGNOSIS=diagnosis):
                yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@contextmanager
def _llama_server(options: dict):
    port = _free_port()
    command = [
        options["server"],
        "--model", options["model"],
        "--host", "127.0.0.1",
        "--port", str(port),
        "--ctx-size", str(options["context"]),
        "--threads", str(options["threads"]),
        "--parallel", "1",
        # --jinja: the model's own chat template (tool calls); --no-repack: these machines report
        # AMX instructions that crash when the weights are repacked for them.
        "--jinja",
        "--no-repack",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_healthy(port, process)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def _write_steps(session, path: Path) -> None:
    """What each stage sent back and the calls it recorded, as stored: the throwaway database is gone
    after the run."""
    steps = [
        {
            "round": step.round,
            "agent": step.agent,
            "status": step.status,
            "thought": step.thought,
            "latency_ms": step.latency_ms,
            "llm_calls": step.llm_calls,
            "model_output": step.model_output,
        }
        for step in session.steps.order_by("pk")
    ]
    calls = [
        {"tool_name": call.tool_name, "input": call.input, "success": call.success, "error": call.error}
        for call in session.tool_invocations.order_by("pk")
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "query": session.query,
        "verdict": session.verdict,
        "answer": session.answer,
        "steps": steps,
        "tool_invocations": calls,
    }
    path.write_text(json.dumps(record, ensure_ascii=False, indent=2))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_healthy(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise CommandError(f"llama-server exited with {process.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise CommandError(f"llama-server not healthy after {SERVER_START_SECONDS} s")
