"""The `safe_markdown` filter: an answer's Markdown as HTML, escaped and allow-listed
(`diagnosis.presenters.markdown`)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from diagnosis.presenters.markdown import markdown_to_html

register = template.Library()


@register.filter(name="safe_markdown")
def safe_markdown(text: str) -> SafeString:
    # Safe because nh3 keeps only the tags and attributes `presenters.markdown` allows.
    return mark_safe(markdown_to_html(text))
