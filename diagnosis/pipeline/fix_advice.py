"""Fix recommendations in a composed answer (contracts §14): the composer may only suggest the
allowed evidence-gathering actions, never a remedy (restart, scale, delete, change config…).

A pure function over text: a clause that names a remedy is a recommendation unless that remedy is
one of the allowed actions, or the clause only restates a fact of the material (e.g. a finding
that a process restarted) without recommending anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REMEDY_TERMS = (
    "重启",
    "重新启动",
    "扩容",
    "缩容",
    "扩副本",
    "删除",
    "回滚",
    "修改配置",
    "调整配置",
    "更改配置",
    "修改参数",
    "调整参数",
    "调大",
    "调高",
    "调低",
    "调小",
    "升级",
    "降级",
    "下线",
    "清理",
    "重建",
    "杀掉",
    "终止进程",
    "restart",
    "reboot",
    "scale",
    "delete",
    "rollback",
    "kill",
)
ADVICE_CUES = ("建议", "应该", "应当", "需要", "请", "尝试", "可以", "立即", "马上", "考虑", "should", "try")
CLAUSE_BREAK = re.compile(r"[。；;！!？?\n]")
REMEDY = re.compile("|".join(re.escape(term) for term in REMEDY_TERMS), re.IGNORECASE)


def fix_recommendations(*, answer: str, allowed_actions: Iterable[str], facts: Iterable[str]) -> list[str]:
    """The remedies the answer recommends that no allowed action names (`facts`: the material's
    findings, inferences and gaps, which an answer may restate)."""
    allowed = " ".join(allowed_actions).lower()
    stated = " ".join(facts).lower()
    offending: list[str] = []
    for clause in CLAUSE_BREAK.split(answer):
        lowered = clause.lower()
        advising = any(cue in lowered for cue in ADVICE_CUES)
        for match in REMEDY.finditer(lowered):
            term = match.group(0)
            if term in allowed or (term in stated and not advising):
                continue
            offending.append(f"处置建议：{clause.strip()[:60]}")
            break
    return list(dict.fromkeys(offending))
