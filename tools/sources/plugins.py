"""Source classes named by dotted path in settings, for what the environment cannot name:

- `DIAGNOSIS["SOURCE_CLASSES"]`: `{kind: path}` replaces the environment's choice for that kind
  (an evaluation case's own data, a team's own Python source, a test's);
- `DIAGNOSIS["KNOWLEDGE_SOURCES"]`: knowledge other apps keep (the case library), added to the
  runbooks without this package importing those apps.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from tools.evidence.knowledge.source import KnowledgeSource
from tools.evidence.source import Source
from tools.knowledge_block import KnowledgeBlock


def source_class_load(path: str, *, kind: type[Source]) -> type[Source]:
    """The class at `path`; ImproperlyConfigured when it does not answer what its kind asks."""
    source_class = import_string(path)
    if not (isinstance(source_class, type) and issubclass(source_class, kind)):
        raise ImproperlyConfigured(
            f"{path} is not a {kind.__name__}: subclass {kind.__module__}.{kind.__name__} and define its methods"
        )
    return source_class


def knowledge_sources_blocks() -> list[KnowledgeBlock]:
    """The blocks of every class of `DIAGNOSIS["KNOWLEDGE_SOURCES"]`."""
    return [
        block
        for path in settings.DIAGNOSIS["KNOWLEDGE_SOURCES"]
        for block in source_class_load(path, kind=KnowledgeSource)().knowledge_blocks()
    ]
