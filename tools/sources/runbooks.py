"""A folder of Markdown runbooks (sub-folders too), YAML front matter optional.

One document per file, one block per heading. A block's exact terms are the front matter's
`alerts` and `title` and the file's stem (`KubePodCrashLooping.md` names the alert
`KubePodCrashLooping`), so a question or an alert's `runbook_url` naming the file finds it. A file
that cannot be read or whose front matter is not a mapping is skipped with a warning, and so is
anything that is not a regular file inside the folder: a link is read only as the runbook of the
folder it names (`runbook_texts`).
"""

from __future__ import annotations

import errno
import logging
import os
import posixpath
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from tools.evidence.knowledge.source import KnowledgeSource
from tools.inventory import SourceInventory
from tools.knowledge_block import KnowledgeBlock
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
        """Files of the folder that are not read: links out of it, special, oversized or malformed."""
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
        for runbook in runbook_texts(self.folder)[0]:
            try:
                meta, text = front_matter(runbook.text)
                inventory.alerts |= set(meta_alerts(meta))
            except (yaml.YAMLError, RunbookError) as exc:
                logger.warning("runbook %s skipped: %s", runbook.relative, exc)
                continue
            inventory.runbooks |= {runbook.stem, document_title(meta, text, stem=runbook.stem)}
        return inventory


@dataclass(frozen=True)
class RunbookText:
    # Its path inside the folder: `team/disk-full.md`.
    relative: str
    text: str

    @property
    def stem(self) -> str:
        return PurePosixPath(self.relative).stem


def runbook_blocks(folder: Path) -> list[KnowledgeBlock]:
    return runbooks_read(folder)[0]


def runbooks_read(folder: Path) -> tuple[list[KnowledgeBlock], int]:
    """The blocks of the folder's runbooks, and how many files were skipped (unsafe or unreadable)."""
    runbooks, skipped = runbook_texts(folder)
    blocks: list[KnowledgeBlock] = []
    for runbook in runbooks:
        try:
            blocks += document_blocks(runbook)
        except (yaml.YAMLError, RunbookError) as exc:
            logger.warning("runbook %s skipped: %s", runbook.relative, exc)
            skipped += 1
    return blocks, skipped


def runbook_texts(folder: Path) -> tuple[list[RunbookText], int]:
    """The text of each Markdown runbook of the folder and its sub-folders, and how many files were
    skipped with a warning: whoever can merge into the runbooks must not read the server's files.

    Each file is opened once, relative to its folder's descriptor and without following a link
    (nor a linked sub-folder), and checked and read on that descriptor: a regular file of a
    runbook's size, read up to that size. Checking a path and then reading it would read whatever
    the path names by then (a file swapped for `→ /proc/self/environ` in between). A link to a
    runbook of the folder (`alias.md → team/disk-full.md`) reads as that runbook, by the link's text,
    never by opening through it."""
    try:
        # The configured folder may itself be a link (`/srv/runbooks → /data/runbooks-v2`): its
        # operator chose it; what is inside it is what others can change.
        root = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise RunbookError(f"runbooks {folder}: 不是可读的目录") from exc
    scan = _Scan(folder)
    try:
        scan.walk(root, PurePosixPath())
    finally:
        os.close(root)
    return scan.resolved()


# Opened without following a link, nor waiting on a FIFO someone left in the folder.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class _Scan:
    """One walk of a runbook folder: the texts read, the links to resolve, the files skipped."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.texts: dict[str, str] = {}
        self.links: dict[str, str] = {}
        self.skipped = 0

    def walk(self, dir_fd: int, relative: PurePosixPath) -> None:
        with os.scandir(dir_fd) as listed:
            entries = sorted(listed, key=lambda entry: entry.name)
        for entry in entries:
            path = relative / entry.name
            if entry.is_dir(follow_symlinks=False):
                self._walk_into(entry.name, dir_fd=dir_fd, relative=path)
            elif entry.name.endswith(".md"):
                self._read(entry.name, dir_fd=dir_fd, relative=path.as_posix())
            elif entry.is_symlink() and entry.is_dir():
                self._skip(path.as_posix(), "a link to a folder (links are not followed)")

    def _walk_into(self, name: str, *, dir_fd: int, relative: PurePosixPath) -> None:
        try:
            child = os.open(name, _FILE_FLAGS | os.O_DIRECTORY, dir_fd=dir_fd)
        except OSError as exc:  # swapped for a link or a file since it was listed
            self._skip(relative.as_posix(), exc.strerror or str(exc))
            return
        try:
            self.walk(child, relative)
        finally:
            os.close(child)

    def _read(self, name: str, *, dir_fd: int, relative: str) -> None:
        try:
            self.texts[relative] = _text_at(name, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                self._skip(relative, exc.strerror or str(exc))
                return
            try:
                self.links[relative] = os.readlink(name, dir_fd=dir_fd)
            except OSError as again:  # swapped back for a file: read on the next walk
                self._skip(relative, again.strerror or str(again))
        except (UnicodeDecodeError, RunbookError) as exc:
            self._skip(relative, str(exc))

    def _skip(self, relative: str, reason: str) -> None:
        logger.warning("runbook %s skipped: %s", relative, reason)
        self.skipped += 1

    def resolved(self) -> tuple[list[RunbookText], int]:
        """The texts read and each link's as the runbook it names; a link to anything else skipped."""
        texts = dict(self.texts)
        for relative, target in self.links.items():
            named = _inside(self.folder, link=relative, target=target)
            if named in self.texts:
                texts[relative] = self.texts[named]
            else:
                self._skip(relative, f"it points outside {self.folder} or to no runbook of it")
        return [RunbookText(relative=r, text=texts[r]) for r in sorted(texts)], self.skipped


def _text_at(name: str, *, dir_fd: int) -> str:
    """The text of a runbook file, checked and read on the one descriptor it is opened with."""
    fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise RunbookError("not a regular file")
        if status.st_size > MAX_RUNBOOK_BYTES:
            raise RunbookError(f"larger than {MAX_RUNBOOK_BYTES} bytes")
        data = b""
        while len(data) <= MAX_RUNBOOK_BYTES and (chunk := os.read(fd, MAX_RUNBOOK_BYTES + 1 - len(data))):
            data += chunk
        if len(data) > MAX_RUNBOOK_BYTES:  # it grew since the check
            raise RunbookError(f"larger than {MAX_RUNBOOK_BYTES} bytes")
        return data.decode("utf-8")
    finally:
        os.close(fd)


def _inside(folder: Path, *, link: str, target: str) -> str | None:
    """The path inside the folder a link's text names (relative to the link, or absolute under the
    folder), or None when it names a place outside it."""
    if posixpath.isabs(target):
        roots = {os.path.abspath(folder), os.path.realpath(folder)}
        under = [posixpath.relpath(posixpath.normpath(target), root) for root in roots]
        named = next((path for path in under if not path.startswith("..")), None)
        return posixpath.normpath(named) if named else None
    named = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
    return None if named.startswith("..") else named


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


def document_title(meta: dict, text: str, *, stem: str) -> str:
    heading = HEADING.search(text)
    return str(meta.get("title") or (heading[1] if heading else stem)).strip()


def document_blocks(runbook: RunbookText) -> list[KnowledgeBlock]:
    meta, text = front_matter(runbook.text)
    alerts = meta_alerts(meta)
    headings = list(HEADING.finditer(text))
    title = document_title(meta, text, stem=runbook.stem)
    relative = runbook.relative
    terms = tuple(
        dict.fromkeys(str(term) for term in [*alerts, meta.get("title") or "", runbook.stem] if term)
    )
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
