"""`manage.py eval` end to end, in its own process: it creates and drops its own throwaway database,
which must never be the one these tests run on."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from django.conf import settings

from diagnosis.evaluation.fixtures import CASES_DIR


def run_eval(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess:
    env = os.environ | {
        "DIAGNOSIS_DEV": "1",
        # A database of its own (SQLite; the throwaway copy lives in memory).
        "DATABASE_URL": f"sqlite:///{tmp_path / 'eval.sqlite3'}",
    }
    return subprocess.run(
        [sys.executable, "manage.py", "eval", *arguments],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_green_cases_print_the_table_and_the_summary_and_exit_zero(tmp_path):
    report = tmp_path / "report.json"

    done = run_eval(
        tmp_path,
        str(CASES_DIR / "seed003-hikaricp-order-positive"),
        str(CASES_DIR / "gk-excerpt-altered-number"),
        "--json",
        str(report),
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "seed003-hikaricp-order-positive  rules   PASS/NORMAL" in done.stdout
    assert "gk-excerpt-altered-number" in done.stdout and "REJECT/DEGRADED" in done.stdout
    for label in (
        "verdict accuracy               100.0%  (n=2)",
        "  engine cases (rules)         100.0%  (n=1)",
        "  code over a scripted model   100.0%  (n=1)",
        "REJECT recall (fabricated)     100.0%  (n=1)",
        "false-reject rate (grounded)   0.0%  (n=1)",
        "answered rate (expected slot)  -",
        "false PASS (slot not filled)   0",
        "forbidden-term leaks           0 in 0 case(s)",
        "off-topic PASS                 0",
        "mean rounds",
        "LLM calls / session (llm)",
        "tokens / session (llm)",
        "latency p50 / p95",
    ):
        assert label in done.stdout
    # Per world and engine kind: one demo-world case of each kind here.
    rows = done.stdout.split("per world and engine kind\n", 1)[1].splitlines()
    assert rows[0].split()[:4] == ["world", "/", "engine", "kind"]
    assert rows[1].startswith("demo / code over a scripted model") and "100.0% (1)" in rows[1]
    assert rows[2].startswith("demo / rules engine") and "100.0% (1)" in rows[2]
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["summary"]["passed"] == 2
    assert [(g["world"], g["engine_kind"]) for g in written["summary"]["groups"]] == [
        ("demo", "code over a scripted model"),
        ("demo", "rules engine"),
    ]
    assert {case["name"] for case in written["cases"]} == {
        "seed003-hikaricp-order-positive",
        "gk-excerpt-altered-number",
    }


def test_a_failing_case_is_explained_and_the_exit_code_is_non_zero(tmp_path):
    folder = tmp_path / "cases" / "wrong-expectation"
    folder.mkdir(parents=True)
    (folder / "case.yaml").write_text(
        yaml.safe_dump(
            {
                "question": "只确认 payment-service 当前是否存在 HighCPUUsage 告警",
                "tags": ["positive"],
                # Wrong on purpose: the verdict, a forbidden value that is there, a slot that is not.
                "expect": {
                    "verdict": "REJECT",
                    "forbidden": ["92%"],
                    "slot": {"ask": "threshold", "answer_contains": ["阈值 95%"]},
                },
            },
            allow_unicode=True,
        ),
        encoding="utf-8",
    )

    done = run_eval(tmp_path, str(tmp_path / "cases"))

    assert done.returncode == 1
    assert "✗ wrong-expectation" in done.stdout
    assert "verdict：期望 REJECT，实际 PASS" in done.stdout
    assert "用户可见内容出现禁止词：92%" in done.stdout
    assert "所问未回答（threshold）：没有一行「结论」同时包含 ['阈值 95%']" in done.stdout
    assert "answered rate (expected slot)  0.0%  (n=1)" in done.stdout
    assert "1 个用例未通过：wrong-expectation" in done.stderr


def test_cases_are_filtered_by_engine_and_tags(tmp_path):
    done = run_eval(tmp_path, "--engine", "rules", "--tag", "seed003", "--exclude-tag", "negative")

    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("seed003-")]
    assert rows == [
        "seed003-exclusion-highcpu-only",
        "seed003-highcpu-narrow",
        "seed003-highmemory-narrow-no-leak",
        "seed003-hikaricp-order-positive",
        "seed003-slowresponse-alert-and-logs",
    ]


def test_a_broken_case_file_stops_the_run_naming_it(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "case.yaml").write_text("question: x\nexpect: {verdict: MAYBE}\n", encoding="utf-8")

    done = run_eval(tmp_path, str(folder))

    assert done.returncode == 1
    assert f"{folder / 'case.yaml'}: expect.verdict" in done.stderr
