"""Chinese names for the keys and codes the reviewers' desk shows (JSON records, enum values, times).

Records keep their English keys and codes (they are the contract); the desk shows people words.
The raw key or code stays in the element's `title`, so a reviewer can still match it to the record.
"""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.html import format_html

from diagnosis.pipeline.routing import OUTPUT_TYPE_LABELS

register = template.Library()

KEY_LABELS = {
    # verifier record
    "answer": "回答",
    "attempts": "尝试次数",
    "claim_id": "断言编号",
    "claim_text": "断言",
    "claim_type": "断言类型",
    "claims": "断言",
    "critical_fact_count": "关键事实数",
    "detail": "说明",
    "error": "错误",
    "errors": "错误",
    "evidence_level": "证据层级",
    "excerpt": "摘录",
    "fact": "事实",
    "failed_rules": "未通过的规则",
    "gaps": "证据缺口",
    "groundedness_score": "证据支撑度",
    "hypotheses": "假设",
    "instruction": "补充取证要求",
    "invocation_count": "调用次数",
    "is_critical": "关键",
    "message": "信息",
    "missing_evidence_facts": "缺少证据的事实",
    "missing_info": "信息缺口",
    "no_hit_invocation_count": "未命中次数",
    "offending_tokens": "越界内容",
    "output_summary": "输出摘要",
    "overrides": "代码修正",
    "planner_output": "规划输出",
    "rationale": "判定理由",
    "raw_path": "原始路径",
    "reason": "原因",
    "recommended_actions": "建议操作",
    "round": "轮次",
    "rule": "规则",
    "severity": "严重程度",
    "similarity": "相似度",
    "source_invocation_id": "工具调用编号",
    "source_invocation_ids": "工具调用编号",
    "status": "状态",
    "text": "文本",
    "tool_name": "工具",
    "trace_ref": "轨迹编号",
    "traceability_version": "可追溯版本",
    "verdict": "校验结论",
    "warnings": "警告",
    # rule evaluation
    "delta": "分值",
    "evidence_score": "证据分",
    "factors": "计分项",
    "name": "名称",
    "source": "来源",
    # alerts (AIOps)
    "active_at": "触发时间",
    "alert_name": "告警",
    "annotations": "注解",
    "description": "描述",
    "duration": "持续时间",
    "ends_at": "结束时间",
    "fingerprint": "指纹",
    "instance": "实例",
    "labels": "标签",
    "service": "服务",
    "starts_at": "开始时间",
    "state": "状态",
    "summary": "概要",
    "engine": "引擎",
    "route": "路由",
    "focus": "问题焦点",
    "focus_notes": "焦点说明",
    "inventory": "当时已知的服务与告警",
}

VALUE_LABELS = {
    # verdicts and gatekeeper severities
    "PASS": "通过",
    "LOW_CONFID": "低置信",
    "REJECT": "拒绝",
    "none": "无问题",
    "low_confid": "低置信",
    "reject": "拒绝",
    "pass": "通过",
    "fail": "未通过",
    # output types and the route a round took
    **OUTPUT_TYPE_LABELS,
    "RETRY": "补充取证（重试一轮）",
    # pipeline stages (current_stage) and step states
    "planner": "规划",
    "executor": "取证",
    "gatekeeper": "核验引用",
    "verifier": "校验",
    "composer": "撰写",
    "done": "已结束",
    "ok": "成功",
    "valid": "有效",
    "fallback": "回退",
    "skipped": "跳过",
    "failed": "失败",
    "replaced": "已替换",
    # evidence
    "supported": "有证据",
    "no_evidence": "未检索到证据",
    "not_evidence": "辅助工具",
    "direct": "直接",
    "indirect": "间接",
    "firing": "告警中",
    "resolved": "已恢复",
    # engines and record sources
    "rules": "规则引擎",
    "llm": "大模型引擎",
    "rule": "规则",
    # rule-evaluation factors
    "execution_failed": "会话执行失败",
    "no_tool_call": "没有证据工具调用",
    "has_successful_tool_call": "有成功的证据工具调用",
    "l0_exact_match": "知识检索 L0 精确命中",
    "l1_semantic_match": "知识检索 L1 语义命中",
    "retrieval_no_hit": "知识检索均未命中",
    "all_tool_calls_failed": "证据工具调用全部失败",
}


@register.filter
def key_label(key: str) -> str:
    """A record key as a Chinese heading (raw key in the title)."""
    label = KEY_LABELS.get(key)
    return format_html('<span title="{}">{}</span>', key, label) if label else key


@register.filter
def value_label(value):
    """A code as Chinese words (raw code in the title); anything else unchanged."""
    label = VALUE_LABELS.get(value) if isinstance(value, str) else None
    return format_html('<span title="{}">{}</span>', value, label) if label else value


def code_text(value: str) -> str:
    """A code as plain Chinese words, for places that cannot hold markup (choices, options)."""
    return VALUE_LABELS.get(value, value)


@register.filter
def local_time(moment: datetime | None) -> str:
    """`2026-11-29 13:31:05` in the configured zone (`DJANGO_TIME_ZONE`); "—" when unset."""
    if moment is None:
        return "—"
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S")


@register.simple_tag
def time_zone_name() -> str:
    """The zone every time on the desk is in, e.g. `Asia/Shanghai（UTC+08:00）`."""
    offset = timezone.localtime().strftime("%z")
    return f"{timezone.get_current_timezone_name()}（UTC{offset[:3]}:{offset[3:]}）"
