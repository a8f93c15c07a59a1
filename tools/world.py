"""The configured world: its vocabulary file, `DIAGNOSIS["VOCABULARY_FILE"]`, read per call
(evaluation cases and tests change it); the file itself is cached by its modification time."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from tools.vocabulary import DEFAULT_VOCABULARY_FILE, Vocabulary, VocabularyError, vocabulary_load

# Sample questions about the demo world (benchmarks, seeded histories): data, next to the world.
DEMO_QUESTIONS_FILE = Path(__file__).resolve().parent / "data" / "demo_world" / "bench_questions.txt"
# The chat page's examples on the demo world (a world with its own sources gets its own).
DEMO_EXAMPLES_FILE = DEMO_QUESTIONS_FILE.with_name("example_questions.txt")


def vocabulary_path() -> Path:
    configured = settings.DIAGNOSIS.get("VOCABULARY_FILE")
    return Path(configured) if configured else DEFAULT_VOCABULARY_FILE


def current_vocabulary() -> Vocabulary:
    path = vocabulary_path()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    vocabulary = vocabulary_load(path, stamp)
    # The shipped file's PromQL templates are the demo world's series: not a real Prometheus's.
    if path == DEFAULT_VOCABULARY_FILE and settings.DIAGNOSIS.get("PROMETHEUS_URL"):
        return vocabulary.without_demo_series()
    return vocabulary


def demo_questions() -> list[str]:
    """The demo world's sample questions, narrow ones first."""
    return _question_lines(DEMO_QUESTIONS_FILE)


def demo_examples() -> list[str]:
    """The demo world's example questions for the chat page."""
    return _question_lines(DEMO_EXAMPLES_FILE)


def _question_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]
