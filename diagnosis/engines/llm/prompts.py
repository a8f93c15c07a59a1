"""Prompt files (`prompts/<name>.md`, Chinese Jinja2 templates) rendered for the LLM engine.

Each file is the stage's rules, then a `## 输入` section: what depends on this question (a note for a
narrow plan or a retry round), then exactly the stage input as one `<input>` JSON block. The rules are
sent as the `system` message, the input section as the `user` message. The rules hold
no variable, so a stage's system message is the same for every question: the prefix a server's
prompt cache reuses.

Undefined variables are errors (StrictUndefined), so a renamed stage input can never silently
render an empty section. Each file opens with `{# version: <name>-vN #}`; the version, plus a short
hash of the file's content (so an edit without a version bump still shows), is recorded on every
AgentStep so a reviewer knows exactly which prompt produced an output.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from jinja2 import Environment, FileSystemLoader, StrictUndefined, Template

VERSION_PATTERN = re.compile(r"\A\{#\s*version:\s*(?P<version>[\w.-]+)\s*#\}")


INPUT_HEADING = "## 输入"


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    version: str

    @property
    def system(self) -> str:
        """The rules: everything before the input section."""
        return self.text[: self.text.rindex(INPUT_HEADING)].rstrip()

    @property
    def user(self) -> str:
        """The input section: notes for this question, then the stage input block."""
        return self.text[self.text.rindex(INPUT_HEADING) + len(INPUT_HEADING) :].strip()


class PromptVersionMissingError(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"prompt {name!r} must start with a '{{# version: {name}-vN #}}' line")


def prompt_render(name: str, **variables: Any) -> RenderedPrompt:
    template, version = _prompt_template(name)
    return RenderedPrompt(text=template.render(**variables), version=version)


def prompt_version(name: str) -> str:
    """The version of a prompt file, as recorded on a step (also one that sent nothing)."""
    return _prompt_template(name)[1]


def _to_json(value: Any) -> str:
    # Readable for the model: real characters, not \uXXXX escapes (Jinja's tojson escapes for HTML).
    return json.dumps(value, ensure_ascii=False)


@functools.cache
def _environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(settings.BASE_DIR / "prompts"),
        undefined=StrictUndefined,
        autoescape=False,  # plain text for a model, never HTML
        auto_reload=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["to_json"] = _to_json
    return environment


@functools.cache
def _prompt_template(name: str) -> tuple[Template, str]:
    environment = _environment()
    filename = f"{name}.md"
    source, _, _ = environment.loader.get_source(environment, filename)
    match = VERSION_PATTERN.match(source)
    if match is None:
        raise PromptVersionMissingError(name)
    digest = hashlib.sha256(source.encode()).hexdigest()[:8]
    return environment.get_template(filename), f"{match.group('version')}+{digest}"
