"""A folder of Markdown runbooks (sub-folders too), YAML front matter optional.

One document per file, one block per heading. A block's exact terms are the front matter's
`alerts` and `title` and the file's stem (`KubePodCrashLooping.md` names the alert
`KubePodCrashLooping`), so a question or an alert's `runbook_url` naming the file finds it. A file
that cannot be read or whose front matter is not a mapping is skipped with a warning.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from tools.inventory import SourceInventory
from tools.retrieval import KnowledgeBlock
from tools.sources.kinds import KnowledgeSource
from tools.sources.plugins import knowledge_sources_blocks

logger = logging.getLogger(__name__)

# A runbook is a page of text; anything larger is not one (and must not fill a worker's memory).
MAX_RUNBOOK_BYTES = 1_000_000
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)^---[ \t]*\n?", re.DOTALL | re.MULTILINE)


class RunbookError(ValueError):
    pass


class RunbooksSource(KnowledgeSource):
    kind = "runbooks"

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        self.location = str(self.folder)

    @classmethod
    def configured(cls, config: Mapping[str, Any]) -> RunbooksSource:
        return cls(config["RUNBOOKS_DIR"])

    def provenance(self) -> tuple[str, str]:
        return self.kind, self.location

    def check(self) -> None:
        if not self.folder.is_dir():
            raise RunbookError(f"{self.kind} {self.location}: 不是可读的目录")

    def skipped(self) -> int:
        """Files of the folder that are not read: symlinks out of it, special, oversized or malformed."""
        self.check()
        return runbooks_read(self.folder)[1]

    def knowledge_blocks(self) -> list[KnowledgeBlock]:
        """The folder's runbooks and the case library's past cases."""
        self.check()
        return [*runbook_blocks(self.folder), *knowledge_sources_blocks()]

    def inventory(self, *, now: datetime) -> SourceInventory:
        """Alerts the front matter names; runbooks by title and file stem."""
        self.check()
        inventory = SourceInventory()
        for path in runbook_files(self.folder):
            try:
                meta, text = front_matter(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError, RunbookError) as exc:
                logger.warning("runbook %s skipped: %s", path, exc)
                continue
            inventory.alerts |= set(meta_alerts(meta))
            inventory.runbooks |= {path.stem, document_title(meta, text, path)}
        return inventory


def runbook_files(folder: Path) -> list[Path]:
    return _scanned(folder)[0]


def _scanned(folder: Path) -> tuple[list[Path], int]:
    """The folder's Markdown runbooks that are regular files inside it and of a runbook's size, and
    how many were skipped. A symlink out of the folder (`environ.md → /proc/self/environ`), a special
    file or an oversized file is skipped with a warning: whoever can merge into the runbooks must not
    read the server's files."""
    root = folder.resolve()
    files, skipped = [], 0
    for path in sorted(folder.rglob("*.md")):
        resolved = path.resolve()
        if not resolved.is_relative_to(root):
            logger.warning("runbook %s skipped: it points outside %s", path, folder)
        elif not resolved.is_file():
            logger.warning("runbook %s skipped: not a regular file", path)
        elif resolved.stat().st_size > MAX_RUNBOOK_BYTES:
            logger.warning("runbook %s skipped: larger than %d bytes", path, MAX_RUNBOOK_BYTES)
        else:
            files.append(path)
            continue
        skipped += 1
    return files, skipped


def runbook_blocks(folder: Path) -> list[KnowledgeBlock]:
    return runbooks_read(folder)[0]


def runbooks_read(folder: Path) -> tuple[list[KnowledgeBlock], int]:
    """The blocks of the folder's runbooks, and how many files were skipped (unsafe or unreadable)."""
    files, skipped = _scanned(folder)
    blocks: list[KnowledgeBlock] = []
    for path in files:
        try:
            blocks += document_blocks(path, relative=path.relative_to(folder).as_posix())
        except (OSError, UnicodeDecodeError, yaml.YAMLError, RunbookError) as exc:
            logger.warning("runbook %s skipped: %s", path, exc)
            skipped += 1
    return blocks, skipped


def front_matter(text: str) -> tuple[dict, str]:
    """(front matter, the text after it) of a runbook."""
    match = FRONT_MATTER.match(text)
    if not match:
        return {}, text
    meta = yaml.safe_load(match[1]) or {}
    if not isinstance(meta, dict):
        raise RunbookError("front matter is not a mapping")
    return meta, text[match.end() :]


def meta_alerts(meta: dict) -> list[str]:
    alerts = meta.get("alerts") or []
    if isinstance(alerts, str):
        alerts = [alerts]
    if not isinstance(alerts, list):
        raise RunbookError("front matter `alerts` is not a list")
    return [str(alert) for alert in alerts]


def document_title(meta: dict, text: str, path: Path) -> str:
    heading = HEADING.search(text)
    return str(meta.get("title") or (heading[1] if heading else path.stem)).strip()


def document_blocks(path: Path, *, relative: str) -> list[KnowledgeBlock]:
    meta, text = front_matter(path.read_text(encoding="utf-8"))
    alerts = meta_alerts(meta)
    headings = list(HEADING.finditer(text))
    title = document_title(meta, text, path)
    terms = tuple(dict.fromkeys(str(term) for term in [*alerts, meta.get("title") or "", path.stem] if term))
    sections = _sections(text, headings)
    return [
        KnowledgeBlock(
            block_id=f"runbooks/{relative}#{index}",
            source_document=f"runbooks/{relative}",
            title=title if not heading or heading == title else f"{title} · {heading}",
            content=content,
            exact_terms=terms,
            section=heading,
        )
        for index, (heading, content) in enumerate(sections, start=1)
    ]


def _sections(text: str, headings: list[re.Match[str]]) -> list[tuple[str, str]]:
    """(heading, content) per heading with content; text before the first heading is its own block."""
    bounds = [(None, 0), *((m, m.end()) for m in headings)]
    sections = []
    for (match, start), following in zip(bounds, [*headings, None], strict=True):
        content = text[start : following.start() if following else len(text)].strip()
        if content:
            sections.append((match[1].strip() if match else "", content))
    return sections
