"""Nothing wired to a world: no service or alert name of any world's data in product Python.
Names are taken from the world data files themselves, so a new world is covered
as soon as it has data."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from diagnosis.evaluation.fixtures import world_file

ROOT = Path(__file__).resolve().parent.parent
DEMO_DATA = ROOT / "tools" / "data" / "demo_world"
WORLDS = ROOT / "diagnosis" / "evaluation" / "worlds"
# The sources' test world (real Prometheus, Loki streams, runbooks): tests/world.
SOURCES_WORLD = ROOT / "tests" / "world"
NOT_PRODUCT = ("tests", ".venv", "node_modules")
# The `job` names stock exporters are scraped under in the exporters world: the software's own names,
# which the product also uses for what it runs on (its Redis broker, PostgreSQL, the Prometheus
# source), not names a team chose. Its alert names are still checked.
STOCK_JOBS = {"alertmanager", "blackbox", "nginx", "node", "postgres", "prometheus", "redis"}


def world_names() -> set[str]:
    alerts = json.loads((DEMO_DATA / "alerts.json").read_text(encoding="utf-8"))
    logs = json.loads((DEMO_DATA / "logs.json").read_text(encoding="utf-8"))
    names = {a["alert_name"] for a in alerts} | {a["service"] for a in alerts} | {r["service"] for r in logs}
    for vocabulary_file in [
        DEMO_DATA / "vocabulary.json",
        *WORLDS.glob("*/vocabulary.json"),
        SOURCES_WORLD / "vocabulary.json",
    ]:
        vocabulary = json.loads(vocabulary_file.read_text(encoding="utf-8"))
        names |= set(vocabulary.get("service_aliases", {})) | set(vocabulary.get("alert_topics", {}))
    for path in WORLDS.glob("*/world.yaml"):
        # Read as the eval reads it: a world may key its data by a tool's former name.
        world = world_file(path.parent.name)
        if world.recording is not None:
            names |= set(world.subjects.services) - STOCK_JOBS | {alert for alert, _ in world.subjects.alerts}
            continue
        alerts, logs = world.tools.query_alerts.alerts, world.tools.query_logs.logs
        names |= {r.service for r in [*alerts, *logs]} | {alert.alert_name for alert in alerts}
    streams = json.loads((SOURCES_WORLD / "loki_streams.json").read_text(encoding="utf-8"))
    names |= {stream["stream"]["service"] for stream in streams}
    names |= {path.stem for path in SOURCES_WORLD.rglob("*.md") if path.stem[0].isupper()}
    return names


def product_files() -> list[Path]:
    """The project's Python, not what lies in hidden folders beside it (the venv, build caches)."""
    return [
        path
        for path in ROOT.rglob("*.py")
        if not set(parts := path.relative_to(ROOT).parts) & set(NOT_PRODUCT)
        and not any(part.startswith(".") for part in parts)
    ]


def code_strings(path: Path) -> list[tuple[int, str]]:
    """String literals and identifiers of a module, without its docstrings and comments (which may
    explain a shape by example): what the code does, not what it says about itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.Name):
            found.append((node.lineno, node.id))
    return found


def test_the_world_data_names_services_and_alerts_of_two_worlds():
    names = world_names()

    assert {"payment-service", "HighCPUUsage", "checkout", "KubePodCrashLooping"} <= names
    assert {"ledger-service", "billing", "PostgresReplicationLag", "NodeFilesystemAlmostFull"} <= names


def test_no_product_python_names_a_service_or_alert_of_any_world():
    patterns = {
        name: re.compile(rf"(?<![A-Za-z0-9_-]){re.escape(name)}(?![A-Za-z0-9_-])") for name in world_names()
    }
    found = [
        f"{path.relative_to(ROOT)}:{number}: {name}"
        for path in product_files()
        for number, text in code_strings(path)
        for name, pattern in patterns.items()
        if pattern.search(text)
    ]

    assert found == []


# A name's suffix is a guess about one world's naming (`order-service`, `ledger-svc`): names come from
# the data (the inventory, the records), never from how they end.
NAME_SUFFIXES = ("-service", "-svc")
REGEX_FUNCTIONS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "split"}


def suffix_rules(source: str) -> list[tuple[int, str]]:
    """The name-suffix rules of a module: a regex naming a suffix, or `endswith("-…")`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        strings = [
            constant.value
            for argument in node.args
            for constant in ast.walk(argument)
            if isinstance(constant, ast.Constant) and isinstance(constant.value, str)
        ]
        if node.func.attr == "endswith":
            found += [(node.lineno, text) for text in strings if text.startswith("-")]
        elif node.func.attr in REGEX_FUNCTIONS:
            found += [
                (node.lineno, text)
                for text in strings
                if any(suffix in text.lower() for suffix in NAME_SUFFIXES)
            ]
    return found


@pytest.mark.parametrize(
    "source",
    [
        'SERVICE = re.compile(r"[a-z]+(?:-[a-z0-9]+)*-service\\b")',
        'names = re.findall(rf"\\w+-svc{end}", text)',
        'services = [name for name in names if name.endswith("-service")]',
    ],
)
def test_a_name_suffix_rule_is_found(source):
    assert suffix_rules(source) != []


def test_a_name_rule_from_data_is_not_a_suffix_rule():
    source = 'known = [name for name in names if name in inventory]\nWORD = re.compile(r"[a-z]+(?:-[a-z]+)+")'

    assert suffix_rules(source) == []


def test_no_product_python_guesses_a_name_by_its_suffix():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {text}"
        for path in product_files()
        for number, text in suffix_rules(path.read_text(encoding="utf-8"))
    ]

    assert found == []
