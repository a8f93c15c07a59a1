"""`aiops_rule_evaluation`: light rule checks of a finished analysis, not a verifier.

They read the report's record (`AiopsReport`), so a report that strays from its alerts fails whoever
wrote it. The record keeps the report's own words apart from what it quotes (excerpts, runbooks,
error-log lines, sources), so quoted evidence never counts as a subject.
"""

from __future__ import annotations

import re
from collections import Counter

from aiops.report import REPORT_TITLE, REQUIRED_EVIDENCE_TOOLS, AiopsReport, AlertAnalysis, AlertSubject
from tools.configured_vocabulary import current_vocabulary
from tools.evidence.tool import get_tool


def aiops_checks(
    *,
    report: AiopsReport | None,
    scope_alerts: list[dict],
    active_alerts: list[dict],
    analysed: dict[AlertSubject, Counter],
) -> dict:
    """The four checks on a finished analysis, and the verdict (pass/fail).

    `report` is None when no report was written; `scope_alerts` are the alerts of the request (payload
    or filter), any state; `active_alerts` the alerts query_alerts reported as current when the
    analysis started; `analysed` maps each analysed alert to the tool calls of its child session, by
    tool name.
    """
    checks = [
        _final_report_check(report, list(analysed)),
        _focus_check(report, scope_alerts, active_alerts),
        _evidence_tools_check(analysed),
        _unrelated_alert_check(report, scope_alerts, active_alerts),
    ]
    return {
        "verdict": "pass" if all(check["passed"] for check in checks) else "fail",
        "source": "rule",
        "checks": checks,
    }


def _check(name: str, passed: bool, reason: str) -> dict:
    return {"name": name, "passed": passed, "reason": reason}


def _final_report_check(report: AiopsReport | None, subjects: list[AlertSubject]) -> dict:
    if report is None:
        return _check("final_report_exists", False, f"没有以“{REPORT_TITLE}”为标题的最终报告")
    sectioned = {analysis.subject.alert_name.lower() for analysis in report.analyses}
    missing = [s.label for s in subjects if s.alert_name.lower() not in sectioned]
    if missing:
        return _check("final_report_exists", False, "报告缺少这些告警的分析章节：" + "、".join(missing))
    return _check("final_report_exists", True, f"最终报告存在，覆盖 {len(subjects)} 条分析的告警")


def _focus_check(report: AiopsReport | None, scope_alerts: list[dict], active_alerts: list[dict]) -> dict:
    names, services = _scope_vocabulary(scope_alerts)
    # The world vocabulary names alerts and services beyond the active ones.
    vocabulary = current_vocabulary()
    known_names = names | {a["alert_name"] for a in active_alerts} | set(vocabulary.alert_topics)
    known_services = (
        services | {a["service"] for a in active_alerts if a.get("service")} | set(vocabulary.service_aliases)
    )
    mentioned_names = {analysis.subject.alert_name for analysis in _analyses(report)}
    mentioned_services = {
        analysis.subject.service.lower() for analysis in _analyses(report) if analysis.subject.service
    }
    for text in _own_words(report):
        mentioned_services |= {s.lower() for s in known_services if _names(text, s)}
        mentioned_names |= {n for n in known_names if _names(text, n)}
    strays = sorted(mentioned_names - names) + sorted(mentioned_services - services)
    if strays:
        return _check("report_focused_on_alerts", False, "报告涉及输入告警之外的对象：" + "、".join(strays))
    return _check(
        "report_focused_on_alerts",
        True,
        "报告只涉及输入的告警与服务：" + "、".join(sorted(names) + sorted(services))
        if names
        else "报告未涉及任何告警",
    )


def _evidence_tools_check(analysed: dict[AlertSubject, Counter]) -> dict:
    if not analysed:
        return _check("evidence_tools_called", True, "没有需要分析的 firing 告警")
    lacking, called = [], []
    # A kind no source serves cannot have been checked: the report's notes say it has none.
    required = [tool for tool in REQUIRED_EVIDENCE_TOOLS if get_tool(tool).available()]
    for subject, tools in analysed.items():
        missing = [tool for tool in required if not tools[tool]]
        if missing:
            lacking.append(f"{subject.label} 未调用 {'、'.join(missing)}")
        called.append(
            f"{subject.label}：" + ("、".join(f"{t}×{n}" for t, n in sorted(tools.items())) or "无")
        )
    if lacking:
        return _check("evidence_tools_called", False, "；".join(lacking))
    return _check("evidence_tools_called", True, "；".join(called))


def _unrelated_alert_check(
    report: AiopsReport | None, scope_alerts: list[dict], active_alerts: list[dict]
) -> dict:
    in_scope = {(a["alert_name"], a.get("service") or "") for a in scope_alerts}
    scope_names = {name for name, _ in in_scope}
    unrelated = [
        AlertSubject(a["alert_name"], a.get("service") or "")
        for a in active_alerts
        if (a["alert_name"], a.get("service") or "") not in in_scope
    ]
    subjects = [analysis.subject for analysis in _analyses(report)]
    expanded = [
        alert.label
        for alert in dict.fromkeys(unrelated)
        if any(
            subject.alert_name.lower() == alert.alert_name.lower()
            and (
                alert.alert_name not in scope_names
                or (alert.service and subject.service.lower() == alert.service.lower())
            )
            for subject in subjects
        )
    ]
    if expanded:
        return _check(
            "no_unrelated_alert_expanded", False, "无关的活跃告警被展开为诊断对象：" + "、".join(expanded)
        )
    reason = f"{len(unrelated)} 条无关的活跃告警未被展开" if unrelated else "没有输入之外的活跃告警"
    return _check("no_unrelated_alert_expanded", True, reason)


def _scope_vocabulary(scope_alerts: list[dict]) -> tuple[set[str], set[str]]:
    names = {a["alert_name"] for a in scope_alerts}
    services = {a["service"].lower() for a in scope_alerts if a.get("service")}
    return names, services


def _analyses(report: AiopsReport | None) -> list[AlertAnalysis]:
    return report.analyses if report is not None else []


def _own_words(report: AiopsReport | None) -> list[str]:
    """What the report says in its own words: the scope, notes and the alerts left unanalysed, and per
    alert its findings and inferences, gaps and next steps; never a quote, a runbook or a log line."""
    if report is None:
        return []
    texts = [report.scope_line, *report.notes, *report.not_analysed]
    for analysis in report.analyses:
        texts += [statement.text for statement in [*analysis.findings, *analysis.inferences]]
        texts += [*analysis.gaps, *analysis.actions]
    return texts


def _names(text: str, name: str) -> bool:
    """`name` appears in `text` as a whole word (Chinese text around it counts as a boundary)."""
    return bool(re.search(rf"(?<![A-Za-z0-9_-]){re.escape(name)}(?![A-Za-z0-9_-])", text, re.IGNORECASE))
