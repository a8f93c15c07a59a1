"""`manage.py llm_real`: demo-world questions through the llm engine against a real local model.

Starts llama.cpp's `llama-server` (built by `diagnosis/evaluation/real_llm/llama_server.sh`) on a
free 127.0.0.1 port with the given GGUF, runs each question as an inline session on a throwaway
database, prints per question the tool calls made, verdict, output type, tokens and wall time, and
stops the server. Minutes of CPU per question on a small machine: not part of the test suite
(`make test-llm-real`).
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
from django.db.models import Sum
from django.test import override_settings

from diagnosis.evaluation.database import throwaway_database
from diagnosis.models import AgentStep
from diagnosis.services.sessions import session_start
from tools.world import demo_questions

QUESTIONS = demo_questions()
SERVER_START_SECONDS = 180


class Command(BaseCommand):
    help = "Run demo-world questions through the llm engine against a local llama-server and a GGUF model."

    def add_arguments(self, parser):
        parser.add_argument("--server", required=True, help="path of the llama-server binary")
        parser.add_argument("--model", required=True, help="path of the GGUF model")
        parser.add_argument("--questions", type=int, default=len(QUESTIONS))
        parser.add_argument("--context", type=int, default=8192, help="context tokens of the server")
        parser.add_argument("--structured-output", default="json_schema")
        parser.add_argument("--tool-calls", default="native")
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument(
            "--replies",
            type=Path,
            help="directory to write each session's steps to (the model's replies, as stored), one JSON file per question",
        )

    def handle(self, *args, **options):
        for path in (options["server"], options["model"]):
            if not Path(path).is_file():
                raise CommandError(f"not found: {path}")
        # A stopped run still stops its server (the `finally` below) instead of leaving it on both cores.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        with _llama_server(options) as base_url, throwaway_database(), self._endpoint(base_url, options):
            self.stdout.write(
                f"{'#':>2} {'tools':>5} {'verdict':<10} {'output type':<27} {'tokens':>7} {'wall s':>7}  question"
            )
            for number, question in enumerate(QUESTIONS[: options["questions"]], start=1):
                started = time.perf_counter()
                session = session_start(query=question, engine="llm", run_inline=True)
                wall = time.perf_counter() - started
                usage = AgentStep.objects.filter(session=session).aggregate(
                    prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens")
                )
                tokens = (usage["prompt"] or 0) + (usage["completion"] or 0)
                verdict = session.verdict or session.status
                output = session.output_type or session.status
                self.stdout.write(
                    f"{number:>2} {session.tool_invocations.count():>5} {verdict:<10} {output:<27} "
                    f"{tokens:>7} {wall:>7.1f}  {question}"
                )
                if session.status != session.Status.COMPLETED:
                    failed = session.steps.filter(status=AgentStep.Status.FAILED).first()
                    detail = (failed.model_output or {}).get("server_error") if failed else session.error
                    self.stdout.write(f"   failed: {detail}")
                if options["replies"]:
                    _write_steps(session, options["replies"] / f"question-{number:02d}.json")

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
    """What each stage sent back, as stored: the throwaway database is gone after the run."""
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
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"query": session.query, "verdict": session.verdict, "answer": session.answer, "steps": steps}
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
