import json

import pytest

from diagnosis.pipeline.contracts import Claim, EvidenceBinding, ExecutorOutput
from diagnosis.pipeline.scope import scope_guard, scope_parse, text_mentions_excluded
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

VOCABULARY = vocabulary_load(DEFAULT_VOCABULARY_FILE)

EXCLUDED = ["订单123", "OOM", "数据库慢查询", "连接池", "user-service"]
CPU_ALERT_TEXT = (
    "HighCPUUsage firing service=payment-service: CPU使用率持续超过80%，当前 92%，"
    "pod pod-payment-service-7d8f9c6b5-x2k4m，namespace production duration=25m"
)


@pytest.mark.parametrize(
    ("query", "narrow", "excluded"),
    [
        ("只确认 HighCPUUsage，不要分析订单123、OOM、数据库慢查询、连接池或 user-service", True, EXCLUDED),
        (
            "Only confirm HighCPUUsage; do not analyse order 123, OOM, slow queries or user-service.",
            True,
            ["order 123", "OOM", "slow queries", "user-service"],
        ),
        ("只确认 order-service 是否存在 HighMemoryUsage 告警", True, []),
        ("只排查 order-service 的内存", True, []),
        ("只看 payment-service 的 CPU", True, []),
        ("只回答 user-service 是否有慢请求", True, []),
        ("order-service 是否存在 HikariCP 连接池耗尽", True, []),
        ("分析 order-service 内存，不要扩展到其他服务", True, ["其他服务"]),
        ("Only confirm whether SlowResponse is firing for user-service", True, []),
        (
            "请排查 order-service 的内存问题，忽略 HikariCP 相关内容和慢查询等。",
            False,
            ["HikariCP", "慢查询"],
        ),
        ("不要分析 OOM，只看 CPU", True, ["OOM"]),
        ("payment-service 的 CPU 为什么这么高？", False, []),
        ("现在系统有哪些告警", False, []),
    ],
)
def test_scope_parse_finds_narrow_questions_and_exclusions(query, narrow, excluded):
    assert scope_parse(query) == (narrow, excluded)


@pytest.mark.parametrize(
    ("text", "mentioned"),
    [
        ("订单123 支付失败", ["订单123"]),
        ("订单1234 已创建", []),
        ("HikariPool-1 - Connection is not available", ["连接池"]),
        ("Connection is not available, request timed out after 30000ms", ["连接池"]),
        ("HikariCP pool stats: active=50/50", ["连接池"]),
        ("the connection pool is exhausted", ["连接池"]),
        ("容器重启，原因 OOMKilled", ["OOM"]),
        ("java.lang.OutOfMemoryError: Java heap space", ["OOM"]),
        ("发生内存溢出", ["OOM"]),
        ("mysql-primary-01 slow query", ["数据库慢查询"]),
        ("慢查询: SELECT * FROM orders", ["数据库慢查询"]),
        ("pod-user-service-6b8c7d9e2-k7j5q 重启", ["user-service"]),
        ("用户服务响应变慢", ["user-service"]),
        ("the room is booming", []),
        (CPU_ALERT_TEXT, []),
        ("[2026-11-29 14:58:00][WARN][payment-service] CPU使用率过高: 92.0%", []),
        ("order-service 存在 HighMemoryUsage 告警，内存使用率 91%", []),
    ],
)
def test_excluded_topics_are_found_with_their_synonyms(text, mentioned):
    assert text_mentions_excluded(text, EXCLUDED, vocabulary=VOCABULARY) == mentioned


def test_a_topic_inside_a_longer_one_does_not_widen_the_exclusion():
    # "内存溢出" excludes OOM, not every mention of 内存.
    assert text_mentions_excluded("内存使用率持续超过85%", ["内存溢出"], vocabulary=VOCABULARY) == []
    assert text_mentions_excluded("OOMKilled", ["内存溢出"], vocabulary=VOCABULARY) == ["内存溢出"]


def test_every_term_the_tools_file_under_an_excluded_topic_counts():
    # One synonym table: a log line the tools file under the connection pool is about the pool.
    terms = json.loads(DEFAULT_VOCABULARY_FILE.read_text(encoding="utf-8"))["groups"]["connection_pool"]
    assert [
        term
        for term in terms
        if text_mentions_excluded(f"日志: {term}", ["连接池"], vocabulary=VOCABULARY) != ["连接池"]
    ] == []


def test_excluding_oom_keeps_plain_memory_evidence():
    memory_log = "[2026-11-29 14:58:00][WARN][order-service] 内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB"
    assert text_mentions_excluded(memory_log, ["OOM"], vocabulary=VOCABULARY) == []
    assert text_mentions_excluded(memory_log, ["内存"], vocabulary=VOCABULARY) == ["内存"]
    assert text_mentions_excluded(
        "内核 OOM Killer: Out of memory: Killed process (java)", ["OOM"], vocabulary=VOCABULARY
    ) == ["OOM"]


def test_a_blank_topic_excludes_nothing():
    assert text_mentions_excluded(CPU_ALERT_TEXT, ["", " "], vocabulary=VOCABULARY) == []


def claim(claim_id, text, excerpt=CPU_ALERT_TEXT):
    binding = EvidenceBinding(
        tool_name="query_alerts", source_invocation_id=1, raw_path="$.alerts[0]", evidence_excerpt=excerpt
    )
    return Claim(claim_id=claim_id, claim_type="observation", claim_text=text, evidence_bindings=[binding])


def executor_output(claims, **lists):
    return ExecutorOutput(
        claims=claims,
        hypotheses=lists.get("hypotheses", []),
        missing_info=lists.get("missing_info", []),
        recommended_actions=lists.get("recommended_actions", []),
        diagnosis_summary="",
        user_facing_answer="",
    )


def test_scope_guard_blocks_claims_about_excluded_topics_and_keeps_the_rest():
    cpu = claim("claim-1", "payment-service 当前存在 HighCPUUsage 告警，CPU 92%")
    pool = claim("claim-2", "order-service 的 HikariCP 连接池已耗尽")
    oom_by_excerpt = claim(
        "claim-3", "order-service 出现 FATAL 日志", excerpt="java.lang.OutOfMemoryError: Java heap"
    )

    result = scope_guard(
        executor_output=executor_output([cpu, pool, oom_by_excerpt]),
        excluded_topics=EXCLUDED,
        vocabulary=VOCABULARY,
    )

    assert [c.claim_id for c in result.kept_output.claims] == ["claim-1"]
    assert [c.claim_id for c in result.blocked_claims] == ["claim-2", "claim-3"]
    assert {(w.rule, w.claim_id) for w in result.warnings} == {
        ("scope.excluded_topic", "claim-2"),
        ("scope.excluded_topic", "claim-3"),
    }
    assert "连接池" in result.warnings[0].message


def test_scope_guard_drops_hypotheses_and_actions_about_excluded_topics():
    output = executor_output(
        [claim("claim-1", "payment-service 当前存在 HighCPUUsage 告警")],
        hypotheses=["可能与 mysql 慢查询有关"],
        recommended_actions=["继续查看 payment-service 的线程栈", "查看 user-service 的慢请求日志"],
    )

    result = scope_guard(executor_output=output, excluded_topics=EXCLUDED, vocabulary=VOCABULARY)

    assert result.kept_output.hypotheses == []
    assert result.kept_output.recommended_actions == ["继续查看 payment-service 的线程栈"]
    assert len(result.warnings) == 2 and all(w.rule == "scope.excluded_topic" for w in result.warnings)


def test_scope_guard_without_exclusions_changes_nothing():
    output = executor_output([claim("claim-1", "order-service 的 HikariCP 连接池已耗尽")])

    result = scope_guard(executor_output=output, excluded_topics=[], vocabulary=VOCABULARY)

    assert (result.kept_output, result.blocked_claims, result.warnings) == (output, [], [])
