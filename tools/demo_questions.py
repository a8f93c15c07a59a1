"""The demo world's questions, kept as data next to its world (`tools/data/demo_world`): the sample
questions benchmarks and seeded histories ask, and the chat page's examples."""

from __future__ import annotations

from pathlib import Path

# Sample questions about the demo world (benchmarks, seeded histories): data, next to the world.
DEMO_QUESTIONS_FILE = Path(__file__).resolve().parent / "data" / "demo_world" / "bench_questions.txt"
# The chat page's examples on the demo world (a world with its own sources gets its own).
DEMO_EXAMPLES_FILE = DEMO_QUESTIONS_FILE.with_name("example_questions.txt")


def demo_questions() -> list[str]:
    """The demo world's sample questions, narrow ones first."""
    return _question_lines(DEMO_QUESTIONS_FILE)


def demo_examples() -> list[str]:
    """The demo world's example questions for the chat page."""
    return _question_lines(DEMO_EXAMPLES_FILE)


def _question_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]
