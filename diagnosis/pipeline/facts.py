"""Fact tokens: the parts of a text that must never change between evidence and what we say.

Numbers (with their units), every name the session's sources know (services, alert names, runbook
names and the vocabulary's aliases, of any shape: `web` as much as `api-gateway-v2`), identifier-
shaped words (hyphenated, snake_case, CamelCase: host and pod names, metric names, exception names),
endpoints and error codes. One extractor, used by the gatekeeper (excerpt vs. evidence ref), the
grounding check (claim vs. its verified excerpts) and the composer guard (answer vs. allowed material).

Tokens are compared in a canonical form, so `91.0%` equals `91%`, `4.2s` equals `4200ms`,
`１５ 分钟` equals `15m`, and `FooBar` equals `foobar`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

# ASCII-only look-arounds: Python's \w also matches CJK, and "当前91%" must still yield 91%.
_A = "A-Za-z0-9"

ENDPOINT = re.compile(rf"(?<![{_A}/.])/[A-Za-z][{_A}_.-]*(?:/[{_A}_.{{}}:-]+)*(?<!\.)")
DATE = re.compile(rf"(?<![{_A}-])\d{{4}}-\d{{2}}-\d{{2}}(?![{_A}])")
TIME = re.compile(rf"(?<![{_A}:-])(\d{{1,2}}):(\d{{2}})(?::(\d{{2}}))?(?![{_A}:])")
# Hyphenated or snake_case words are identifiers: web-api, db-primary-01, load_avg1, ERR_TIMEOUT.
COMPOUND = re.compile(rf"(?<![{_A}_-])[A-Za-z][{_A}]*(?:[-_][{_A}]+)+(?![{_A}_-])")
# CamelCase names with a hump: DiskAlmostFull, OutOfMemoryError, OOMKilled.
CAMEL = re.compile(rf"(?<![{_A}_])[A-Za-z][a-z0-9]*[A-Z][{_A}]*(?![{_A}_])")
PERCENTILE = re.compile(rf"(?<![{_A}_])[Pp]\d{{2,3}}(?![{_A}_])")
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_UNIT = r"%|ms|毫秒|sec|秒钟|秒|s|min|分钟|m|小时|h|TB|GB|GiB|Gi|G|MB|MiB|Mi|M|KB|K"
NUMBER = re.compile(rf"(?<![{_A}_.])({_NUMBER})(?:\s*({_UNIT}))?(?![{_A}_])(?!\.\d)")
RATIO = re.compile(rf"(?<![{_A}_.])({_NUMBER})(?:\s*({_UNIT}))?/({_NUMBER})(?:\s*({_UNIT}))?(?![{_A}_])")
# "1. xxx" / "2) xxx" at a line start is Markdown numbering, not a fact.
LIST_MARKER = re.compile(r"^(\s*(?:#+\s*)?)\d{1,2}[.)、](?=\s)", re.M)

# An ASCII word that may be a known name: looked up in the session's names, not judged by its shape.
NAME_WORD = re.compile(rf"(?<![{_A}_-])[{_A}](?:[{_A}_-]*[{_A}])?(?![{_A}_-])")
UNIT_ALIASES = {
    "毫秒": "ms",
    "sec": "s",
    "秒钟": "s",
    "秒": "s",
    "分钟": "min",
    "m": "min",
    "小时": "h",
    "GiB": "GB",
    "Gi": "GB",
    "G": "GB",
    "MiB": "MB",
    "Mi": "MB",
    "M": "MB",
    "K": "KB",
}
MILLISECONDS = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000}
ELLIPSIS = re.compile(r"\.{2,}|…|⋯")


def folded(name: str) -> str:
    """A name as compared: case, `-`, `_` and spaces do not matter (`Cart_API` is `cart-api`)."""
    return re.sub(r"[-_\s]+", "", normalize(name)).casefold()


@dataclass(frozen=True, eq=False)
class FactNames:
    """The names a session's sources know, each a fact token wherever it appears, whatever its shape.

    `canonical` maps a folded name (and a folded alias) to the name it stands for; non-ASCII aliases
    (a Chinese name of a service) are found as substrings. Compared by identity: one per session."""

    canonical: dict[str, str]
    aliases: tuple[tuple[str, str], ...] = ()
    # Names of several words (`Checkout API`), each found whole before any single word is read: its
    # first word may be another name (`checkout`) that it must never stand for.
    phrases: tuple[tuple[re.Pattern[str], str], ...] = ()

    @classmethod
    def of(cls, names: Iterable[str], aliases: Iterable[tuple[str, str]] = ()) -> FactNames:
        """`names` as the sources spell them; `aliases`: (alias, name) pairs."""
        names = list(names)
        canonical = {folded(name): name.casefold() for name in names if folded(name) and not name.isdigit()}
        ascii_aliases, other_aliases = {}, []
        for alias, name in aliases:
            if alias.isascii():
                ascii_aliases[folded(alias)] = name.casefold()
            elif alias.strip():
                other_aliases.append((normalize(alias).casefold(), name.casefold()))
        phrases = sorted({name.strip() for name in names if len(name.split()) > 1}, key=len, reverse=True)
        return cls(
            canonical=ascii_aliases | canonical,
            aliases=tuple(sorted(other_aliases, key=lambda pair: -len(pair[0]))),
            phrases=tuple((_phrase_pattern(name), name.casefold()) for name in phrases),
        )

    def name_of(self, word: str) -> str:
        return self.canonical.get(folded(word), "")


def _phrase_pattern(name: str) -> re.Pattern[str]:
    """A name of several words in any spacing or separator: `Checkout API`, `checkout-api`."""
    body = r"[-_\s]*".join(re.escape(part) for part in normalize(name).split())
    return re.compile(rf"(?<![{_A}_-]){body}(?![{_A}_-])", re.IGNORECASE)


NO_NAMES = FactNames(canonical={})


@dataclass(frozen=True)
class FactToken:
    kind: str  # number / ratio / time / date / endpoint / name / code
    value: str  # canonical form, compared
    surface: str  # as written, reported
    start: int
    end: int

    def supporting_forms(self, names: FactNames = NO_NAMES) -> set[str]:
        """The canonical forms this token (found in evidence) can support in another text."""
        forms = {self.value}
        if self.kind == "ratio":
            forms |= {_number_value(n, u) for n, u in _ratio_parts(self.surface)}
            forms |= {_bare(n) for n, _ in _ratio_parts(self.surface)}
        elif self.kind == "number":
            forms.add(_bare(NUMBER.match(self.surface)[1]))
        elif self.kind == "name":
            forms |= _name_parts(self.surface, names)
        elif self.kind == "time" and self.value.count(":") == 2:
            forms.add(self.value[:5])
        return forms


def normalize(text: str) -> str:
    """NFKC (full-width → half-width, `…` → `...`), the form every comparison starts from."""
    return unicodedata.normalize("NFKC", text or "")


def fact_tokens(text: str, names: FactNames = NO_NAMES) -> list[FactToken]:
    """The fact tokens of `text`; `names`: what the session's sources know (any shape is a name)."""
    text = LIST_MARKER.sub(lambda m: m[1] + " ", normalize(text))
    masked = text
    tokens: list[FactToken] = []

    def take(pattern: re.Pattern, kind: str, canonical, *, mask_all: bool = True) -> None:
        nonlocal masked
        for match in pattern.finditer(masked):
            value = canonical(match)
            if value:
                tokens.append(
                    FactToken(kind, value, text[match.start() : match.end()], match.start(), match.end())
                )
            if value or mask_all:
                masked = masked[: match.start()] + " " * (match.end() - match.start()) + masked[match.end() :]

    take(ENDPOINT, "endpoint", lambda m: m[0].rstrip(".-"))
    take(DATE, "date", lambda m: m[0])
    for pattern, name in names.phrases:
        take(pattern, "name", lambda _m, name=name: name)
    for alias, name in names.aliases:
        take(re.compile(re.escape(alias), re.IGNORECASE), "name", lambda _m, name=name: name)
    if names.canonical:
        take(NAME_WORD, "name", lambda m: names.name_of(m[0]), mask_all=False)
    take(COMPOUND, "name", lambda m: m[0].casefold())
    take(TIME, "time", _time_value)
    take(CAMEL, "code", lambda m: m[0].casefold() if any(c.islower() for c in m[0]) else "")
    take(PERCENTILE, "code", lambda m: m[0].casefold())
    take(RATIO, "ratio", lambda m: "/".join(_number_value(n, u) for n, u in _ratio_parts(m[0])))
    take(NUMBER, "number", lambda m: _number_value(m[1], m[2]))
    return sorted(tokens, key=lambda token: token.start)


def unsupported_facts(
    text: str,
    evidence_texts: Iterable[str],
    *,
    truncation_tolerant: bool = False,
    names: FactNames = NO_NAMES,
) -> list[str]:
    """Fact tokens of `text` (as written) that none of `evidence_texts` supports.

    With `truncation_tolerant`, a token cut by the start or end of `text` (or by an ellipsis) is
    accepted when what is left of it appears literally in the evidence: "…1%，JVM" may begin
    inside "91%".
    """
    evidence_texts = [normalize(t) for t in evidence_texts]
    supported = set().union(*(_supported_forms(t, names) for t in evidence_texts))
    literal = [_compact(t) for t in evidence_texts] if truncation_tolerant else []
    normalized = LIST_MARKER.sub(lambda m: m[1] + " ", normalize(text))
    missing = []
    for token in fact_tokens(text, names):
        if token.value in supported:
            continue
        if (
            truncation_tolerant
            and _at_cut(normalized, token)
            and any(_compact(token.surface) in t for t in literal)
        ):
            continue
        missing.append(token.surface)
    return list(dict.fromkeys(missing))


@lru_cache(maxsize=4096)
def _supported_forms(evidence_text: str, names: FactNames) -> frozenset[str]:
    """Cached: the same evidence texts are read by the gatekeeper, the grounding check and the guard."""
    return frozenset(
        form for token in fact_tokens(evidence_text, names) for form in token.supporting_forms(names)
    )


def _name_parts(surface: str, names: FactNames) -> set[str]:
    """Names inside a compound: web-api in pod-web-api-5c7d8e9f1-m3n2p, and a known
    name spelled with other separators (`cart_api` for `cart-api`)."""
    segments = re.split(r"[-_]", surface)
    joined = ["-".join(segments[i:j]) for i in range(len(segments)) for j in range(i + 1, len(segments) + 1)]
    parts = {part.casefold() for part in joined if "-" in part}
    parts |= {name for part in joined if (name := names.name_of(part))}
    return parts | {s.casefold() for s in segments if CAMEL.fullmatch(s) and any(c.islower() for c in s)}


def _time_value(match: re.Match) -> str:
    hours, minutes, seconds = match[1], match[2], match[3]
    if int(hours) > 23 or int(minutes) > 59:
        return ""
    return f"{int(hours):02d}:{minutes}" + (f":{seconds}" if seconds else "")


def _ratio_parts(surface: str) -> list[tuple[str, str | None]]:
    match = RATIO.match(surface)
    return [(match[1], match[2]), (match[3], match[4])]


def _bare(number: str) -> str:
    value = Decimal(number.replace(",", "")).normalize()
    return format(value, "f")


def _number_value(number: str, unit: str | None) -> str:
    unit = UNIT_ALIASES.get(unit, unit) if unit else ""
    if unit in MILLISECONDS:
        milliseconds = Decimal(number.replace(",", "")) * MILLISECONDS[unit]
        return format(milliseconds.normalize(), "f") + "ms"
    return _bare(number) + unit.casefold()


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text).casefold()


def _at_cut(text: str, token: FactToken) -> bool:
    """Whether nothing but punctuation separates the token from the text's edge or an ellipsis."""
    before, after = text[: token.start], text[token.end :]
    before_cut = not re.search(rf"[{_A}\u4e00-\u9fff]", ELLIPSIS.split(before)[-1])
    after_cut = not re.search(rf"[{_A}\u4e00-\u9fff]", ELLIPSIS.split(after)[0])
    return before_cut or after_cut
