"""The names people write for the same widely used software (`PostgreSQL` for a job named `postgres`),
as language data (`data/software_names.json`): a service the sources know under one of them is named by
the others too. Django-free: the pipeline's inventory reads it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

SOFTWARE_NAMES_FILE = Path(__file__).parent / "data" / "software_names.json"


@cache
def _groups() -> tuple[tuple[str, ...], ...]:
    data = json.loads(SOFTWARE_NAMES_FILE.read_text(encoding="utf-8"))
    return tuple(tuple(names) for names in data["names"])


def _folded(name: str) -> str:
    return re.sub(r"[-_\s]+", "", name).casefold()


def software_aliases(services: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Service → the other names of its software; a name another known service has stays that one's."""
    known = {_folded(service) for service in services}
    aliases = {}
    for service in services:
        for names in _groups():
            if _folded(service) in {_folded(name) for name in names}:
                others = tuple(name for name in names if _folded(name) not in known)
                if others:
                    aliases[service] = others
    return aliases
