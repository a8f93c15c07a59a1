"""The configured world vocabulary: its file, `DIAGNOSIS["VOCABULARY_FILE"]`, read per call
(evaluation cases and tests change it); the file itself is cached by its modification time."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from tools.vocabulary import DEFAULT_VOCABULARY_FILE, Vocabulary, VocabularyError, vocabulary_load


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
    # The shipped file's PromQL templates and service aliases are the demo world's: not a real
    # Prometheus's world.
    if path == DEFAULT_VOCABULARY_FILE and settings.DIAGNOSIS.get("PROMETHEUS_URL"):
        return vocabulary.without_demo_names()
    return vocabulary
