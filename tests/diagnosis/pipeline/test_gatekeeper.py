import pytest

from diagnosis.pipeline.contracts import Claim, EvidenceBinding, ExecutorOutput
from diagnosis.pipeline.gatekeeper import (
    LABEL_UNSUPPORTED,
    MATCH_THRESHOLD,
    RuleMessage,
    claim_denial,
    excerpt_match,
    gatekeep,
    with_binding_failures,
)
from tests.diagnosis.pipeline.asks.support import WORLD_IDS, WORLDS, Names, message
from tests.factories import (
    HIKARI_LOG_TEXT,
    MEMORY_ALERT_TEXT,
    DiagnosisSessionFactory,
    ToolInvocationFactory,
    recorded_invocation,
)
from tools.evidence.logs.record import LogLine
from tools.evidence.result import ToolResult

pytestmark = pytest.mark.django_db

CPU_ALERT_TEXT = (
    "HighCPUUsage firing service=payment-service: CPU使用率持续超过80%，当前 92%，"
    "pod pod-payment-service-7d8f9c6b5-x2k4m，namespace production duration=25m"
)
SLOW_ALERT_TEXT = (
    "SlowResponse firing service=user-service: P99响应时间持续超过3s，当前 4.2s，"
    "接口 /api/v1/users/profile、/api/v1/users/orders duration=10m"
)
POOL_STATS_TEXT = (
    "[2026-11-29 14:51:00][WARN][order-service] HikariCP pool stats: active=50/50, idle=0, waiting=32"
)
SLOW_LOG_TEXT = (
    "[2026-11-29 14:59:00][WARN][user-service] 慢请求: GET /api/v1/users/profile 响应耗时 4200ms "
    "(阈值 3000ms), 数据库查询耗时 4080ms, 缓存未命中"
)
OOM_LOG_TEXT = (
    "[2026-11-29 14:54:00][FATAL][order-service] java.lang.OutOfMemoryError: Java heap space "
    "at OrderService.processLargeOrder:156"
)
MEMORY_LOG_TEXT = (
    "[2026-11-29 14:59:00][WARN][order-service] 内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB, GC次数: 128"
)
NO_HIT_TEXT = "query_logs(query=连接池, service=inventory-service) 未检索到匹配证据"
RUNBOOK_TEXT = (
    "HikariCP 数据库连接池耗尽处置手册（hikaricp-connection-pool.md）: 应用日志出现 HikariPool-1 - "
    "Connection is not available, request timed out after 30000ms，表示请求在 30 秒内没有拿到数据库连接。"
)


def cite(invocation, *, raw_path="$.alerts[0]", excerpt=MEMORY_ALERT_TEXT, tool_name=None, invocation_id=-1):
    return EvidenceBinding(
        tool_name=tool_name or invocation.tool_name,
        source_invocation_id=invocation.pk if invocation_id == -1 else invocation_id,
        raw_path=raw_path,
        evidence_excerpt=excerpt,
    )


def claims(*bindings_per_claim):
    return ExecutorOutput(
        claims=[
            Claim(
                claim_id=f"claim-{i}",
                claim_type="observation",
                claim_text="order-service 当前存在 HighMemoryUsage 告警，内存使用率 91%",
                evidence_bindings=list(bindings),
            )
            for i, bindings in enumerate(bindings_per_claim, start=1)
        ],
        hypotheses=[],
        missing_info=[],
        recommended_actions=[],
        diagnosis_summary="",
        user_facing_answer="",
    )


def test_an_exact_citation_passes_with_the_matched_text(session, alert):
    result = gatekeep(executor_output=claims([cite(alert)]), invocations=[alert.tool_result()])

    assert (result.status, result.severity, result.failed_rules) == ("pass", "none", [])
    [checked] = result.checked_bindings
    assert (checked.status, checked.matched_text, checked.similarity) == ("pass", MEMORY_ALERT_TEXT, 1.0)


def test_a_fabricated_invocation_id_is_rejected(session, alert):
    result = gatekeep(
        executor_output=claims([cite(alert, invocation_id=alert.pk + 999)]), invocations=[alert.tool_result()]
    )

    assert (result.status, result.severity, result.failed_rules) == (
        "fail",
        "reject",
        ["evidence.invocation_ref"],
    )
    assert result.errors[0].claim_id == "claim-1"


def test_an_invocation_of_another_session_is_rejected(session, alert):
    foreign = recorded_invocation(DiagnosisSessionFactory(), "query_alerts", "$.alerts[0]", MEMORY_ALERT_TEXT)

    result = gatekeep(executor_output=claims([cite(foreign)]), invocations=[alert.tool_result()])

    assert (result.severity, result.failed_rules) == ("reject", ["evidence.invocation_ref"])


def test_a_wrong_tool_name_is_rejected(session, alert):
    result = gatekeep(
        executor_output=claims([cite(alert, tool_name="query_logs")]), invocations=[alert.tool_result()]
    )

    assert (result.severity, result.failed_rules) == ("reject", ["evidence.tool_name"])


def test_a_citation_by_the_alerts_tools_former_name_cites_its_calls(session, alert):
    exact = gatekeep(
        executor_output=claims([cite(alert, tool_name="query_metrics")]), invocations=[alert.tool_result()]
    )
    backfilled = gatekeep(
        executor_output=claims([cite(alert, tool_name="query_metrics", invocation_id=None)]),
        invocations=[alert.tool_result()],
    )

    assert alert.tool_name == "query_alerts"
    assert (exact.status, exact.failed_rules) == ("pass", [])
    assert backfilled.failed_rules == ["evidence.invocation_auto_backfill"]
    assert backfilled.checked_bindings[0].source_invocation_id == alert.pk


def test_an_unknown_raw_path_is_rejected(session, alert):
    result = gatekeep(
        executor_output=claims([cite(alert, raw_path="$.alerts[99]")]), invocations=[alert.tool_result()]
    )

    assert (result.severity, result.failed_rules) == ("reject", ["evidence.raw_path"])


def test_an_excerpt_with_a_changed_number_is_rejected(session, alert):
    excerpt = "HighMemoryUsage firing service=order-service: 内存使用率持续超过85%，当前 97%"

    result = gatekeep(
        executor_output=claims([cite(alert, excerpt=excerpt)]), invocations=[alert.tool_result()]
    )

    assert (result.severity, result.failed_rules) == ("reject", ["evidence.excerpt_mismatch"])
    assert "97%" in result.errors[0].message
    assert result.checked_bindings[0].matched_text == MEMORY_ALERT_TEXT


def test_a_claim_without_bindings_is_low_confid(session, alert):
    result = gatekeep(executor_output=claims([]), invocations=[alert.tool_result()])

    assert (result.status, result.severity, result.failed_rules) == (
        "fail",
        "low_confid",
        ["evidence.empty_bindings"],
    )
    assert result.warnings[0].claim_id == "claim-1" and result.errors == []


def test_a_missing_raw_path_is_low_confid_and_never_filled_in(session, alert):
    result = gatekeep(executor_output=claims([cite(alert, raw_path=None)]), invocations=[alert.tool_result()])

    assert (result.severity, result.failed_rules) == ("low_confid", ["evidence.missing_raw_path"])
    [checked] = result.checked_bindings
    assert (checked.status, checked.raw_path, checked.matched_text) == ("fail", None, MEMORY_ALERT_TEXT)


def test_a_missing_raw_path_does_not_excuse_a_fabricated_excerpt(session, alert):
    binding = cite(alert, raw_path=None, excerpt="order-service 内存泄漏已确认，需要立即处理")

    result = gatekeep(executor_output=claims([binding]), invocations=[alert.tool_result()])

    assert (result.severity, result.failed_rules) == ("reject", ["evidence.excerpt_mismatch"])


def test_an_invocation_without_evidence_refs_is_low_confid(session):
    failed = ToolInvocationFactory(
        session=session, success=False, retrieval_details={"evidence_status": "failed", "evidence_refs": []}
    )

    result = gatekeep(executor_output=claims([cite(failed)]), invocations=[failed.tool_result()])

    assert (result.severity, result.failed_rules) == ("low_confid", ["evidence.no_refs"])


@pytest.mark.parametrize("excerpt", ["91%", "firing", "告警 firing"])
def test_a_too_short_or_generic_excerpt_is_low_confid(session, alert, excerpt):
    result = gatekeep(
        executor_output=claims([cite(alert, excerpt=excerpt)]), invocations=[alert.tool_result()]
    )

    assert (result.severity, result.failed_rules) == ("low_confid", ["evidence.excerpt_too_short"])


def test_a_missing_invocation_id_is_backfilled_only_from_the_unique_candidate_with_a_warning(session, alert):
    result = gatekeep(
        executor_output=claims([cite(alert, invocation_id=None)]), invocations=[alert.tool_result()]
    )

    assert (result.severity, result.failed_rules) == ("low_confid", ["evidence.invocation_auto_backfill"])
    [checked] = result.checked_bindings
    assert (checked.source_invocation_id, checked.status) == (alert.pk, "fail")
    assert result.warnings[0].rule == "evidence.invocation_auto_backfill"


def test_auto_backfill_never_fills_the_raw_path(session, alert):
    result = gatekeep(
        executor_output=claims([cite(alert, invocation_id=None, raw_path=None)]),
        invocations=[alert.tool_result()],
    )

    assert result.failed_rules == ["evidence.invocation_auto_backfill", "evidence.missing_raw_path"]
    assert result.severity == "low_confid"
    assert result.checked_bindings[0].raw_path is None


def test_no_backfill_when_the_tool_has_several_candidates(session, alert):
    second = recorded_invocation(session, "query_alerts", "$.alerts[0]", CPU_ALERT_TEXT)

    result = gatekeep(
        executor_output=claims([cite(alert, invocation_id=None)]),
        invocations=[alert.tool_result(), second.tool_result()],
    )

    assert (result.severity, result.failed_rules) == ("low_confid", ["evidence.missing_invocation_id"])
    assert result.checked_bindings[0].source_invocation_id is None


def test_reject_dominates_low_confid(session, alert):
    output = claims([], [cite(alert, invocation_id=alert.pk + 999)])

    result = gatekeep(executor_output=output, invocations=[alert.tool_result()])

    assert result.severity == "reject"
    assert result.failed_rules == ["evidence.empty_bindings", "evidence.invocation_ref"]
    assert [m.rule for m in result.errors] == ["evidence.invocation_ref"]
    assert [m.rule for m in result.warnings] == ["evidence.empty_bindings"]


def test_a_no_hit_reference_is_citable(session):
    no_hit = recorded_invocation(session, "query_logs", "$.no_evidence", NO_HIT_TEXT)

    output = claims([cite(no_hit, raw_path="$.no_evidence", excerpt=NO_HIT_TEXT)])
    output.claims[0].claim_text = NO_HIT_TEXT
    result = gatekeep(executor_output=output, invocations=[no_hit.tool_result()])

    assert (result.status, result.checked_bindings[0].status) == ("pass", "pass")


def test_each_binding_is_checked_on_its_own(session, alert):
    log = recorded_invocation(session, "query_logs", "$.logs[0]", HIKARI_LOG_TEXT)
    output = claims(
        [cite(alert), cite(log, raw_path="$.logs[0]", excerpt="HikariPool-1 - Connection is not available")]
    )

    result = gatekeep(executor_output=output, invocations=[alert.tool_result(), log.tool_result()])

    assert [(b.claim_id, b.raw_path, b.status) for b in result.checked_bindings] == [
        ("claim-1", "$.alerts[0]", "pass"),
        ("claim-1", "$.logs[0]", "pass"),
    ]


# The tolerance table: real ref texts of the demo world (as the tools extract them) and excerpts a model
# might write. It calibrates MATCH_THRESHOLD and pins what is never tolerated.
HONEST, SHORT, CHANGED_FACT, MADE_UP, POLARITY = "honest", "too_short", "changed_fact", "made_up", "polarity"


def rows(case, ref_text, *excerpts_and_kinds):
    return [(excerpt, ref_text, case, kind) for excerpt, kind in excerpts_and_kinds]


TOLERANCE_TABLE = [
    # verbatim, reformatted, full-width, truncated (with or without "..."), a word left out, a typo
    *rows(
        HONEST,
        MEMORY_ALERT_TEXT,
        (MEMORY_ALERT_TEXT, "exact"),
        (
            "  HighMemoryUsage   firing service = order-service ：内存使用率持续超过 85% ，当前 91% ",
            "substring",
        ),
        ("ＨｉｇｈＭｅｍｏｒｙＵｓａｇｅ firing service=order-service：当前 ９１％", "fuzzy"),
        ("HighMemoryUsage firing service=order-service: 内存使用率持续超过85%...", "substring"),
        ("HighMemoryUsage firing ... 当前 91%，JVM堆内存 3.8GB/4GB", "substring"),
        ("…当前 91%，JVM堆内存 3.8GB/4", "substring"),
        ("1%，JVM堆内存 3.8GB/4GB，pod pod-order-service", "substring"),
        ("HighMemoryUsage firing service=order-service: 内存使用率超过85%，当前 91%", "fuzzy"),
        ("HighMemoryUsage firing service=order-service 内存使用率持续超过85% 当前91.0%", "fuzzy"),
        ("HighMemoryUsage firing service=order-service: 内存使用率持续超过85%，当前为 91%", "fuzzy"),
    ),
    *rows(
        HONEST,
        CPU_ALERT_TEXT,
        ("HighCPUUsage firing service=payment-service: CPU使用率持续超过80%，当前 92%", "substring"),
        ("HighCPUUsage firing service=payment-service: CPU使用率高于80%，当前 92%", "fuzzy"),
    ),
    *rows(
        HONEST, SLOW_ALERT_TEXT, ("P99响应时间持续超过3s，当前 4.2s，接口 /api/v1/users/profile", "substring")
    ),
    *rows(
        HONEST,
        HIKARI_LOG_TEXT,
        ("HikariPool-1 - Connection is not available, request timed out after 30000ms", "substring"),
        ("[ERROR][order-service] HikariPool-1 - Connection is not available, request timed out", "substring"),
        ("HikariPool-1 Connection is not avaliable, request timed out after 30000 ms", "fuzzy"),
    ),
    *rows(HONEST, POOL_STATS_TEXT, ("HikariCP pool stats: active=50/50, idle=0, waiting=32", "substring")),
    *rows(
        HONEST,
        SLOW_LOG_TEXT,
        ("慢请求: GET /api/v1/users/profile 响应耗时 4200ms (阈值 3000ms)", "substring"),
    ),
    *rows(
        HONEST,
        OOM_LOG_TEXT,
        ("java.lang.OutOfMemoryError: Java heap space", "substring"),
        ("java.lang.OutOfMemoryError: Java heap spaec", "fuzzy"),
    ),
    *rows(HONEST, MEMORY_LOG_TEXT, ("内存使用率过高: 91%, JVM堆内存: 3.8GB/4GB", "fuzzy")),
    *rows(
        HONEST,
        NO_HIT_TEXT,
        (NO_HIT_TEXT, "exact"),
        ("query_logs(query=连接池, service=inventory-service)", "substring"),
    ),
    *rows(HONEST, RUNBOOK_TEXT, ("请求在 30 秒内没有拿到数据库连接", "substring")),
    # too short or generic to compare stably
    *rows(
        SHORT, MEMORY_ALERT_TEXT, ("91%", "too_short"), ("firing", "too_short"), ("告警 firing", "too_short")
    ),
    *rows(SHORT, NO_HIT_TEXT, ("未检索到匹配证据", "too_short")),
    *rows(SHORT, HIKARI_LOG_TEXT, ("[ERROR]", "too_short")),
    *rows(SHORT, MEMORY_LOG_TEXT, ("内存过高", "too_short")),
    # a changed number, unit, service, alert name, endpoint or error code: never tolerated
    *rows(
        CHANGED_FACT,
        MEMORY_ALERT_TEXT,
        ("HighMemoryUsage firing service=order-service: 内存使用率持续超过85%，当前 97%", "mismatch"),
        ("当前 97%", "mismatch"),
        ("内存使用率持续超过85%，当前 91%，JVM堆内存 3.9GB/4GB", "mismatch"),
        ("HighMemoryUsage firing service=order-service: 当前 91% duration=25m", "mismatch"),
        ("HighMemoryUsage firing service=payment-service: 内存使用率持续超过85%，当前 91%", "mismatch"),
        ("HighCPUUsage firing service=order-service: 内存使用率持续超过85%，当前 91%", "mismatch"),
    ),
    *rows(
        CHANGED_FACT,
        SLOW_ALERT_TEXT,
        ("P99响应时间持续超过3s，当前 4.2s，接口 /api/v1/users/settings", "mismatch"),
        ("P99响应时间持续超过3s，当前 4.2ms", "mismatch"),
    ),
    *rows(
        CHANGED_FACT,
        HIKARI_LOG_TEXT,
        ("HikariPool-2 - Connection is not available, request timed out after 30000ms", "mismatch"),
        ("HikariPool-1 - Connection is not available, request timed out after 3000ms", "mismatch"),
        ("ERR_TIMEOUT: request timed out after 30000ms", "mismatch"),
    ),
    *rows(
        CHANGED_FACT, POOL_STATS_TEXT, ("HikariCP pool stats: active=50/50, idle=0, waiting=23", "mismatch")
    ),
    *rows(
        CHANGED_FACT,
        OOM_LOG_TEXT,
        ("java.lang.StackOverflowError: Java heap space", "mismatch"),
        ("java.lang.OutOfMemoryError: Java heap space at OrderService.processLargeOrder:165", "mismatch"),
    ),
    *rows(CHANGED_FACT, SLOW_LOG_TEXT, ("HTTP 503 GET /api/v1/users/profile 响应耗时 4200ms", "mismatch")),
    *rows(
        CHANGED_FACT,
        NO_HIT_TEXT,
        ("query_logs(query=连接池, service=order-service) 未检索到匹配证据", "mismatch"),
    ),
    # made up, padded or reworded text around the same facts
    *rows(
        MADE_UP,
        MEMORY_ALERT_TEXT,
        ("内存泄漏已确认，需要立即重启 order-service", "mismatch"),
        ("HighMemoryUsage firing service=order-service: 内存使用率持续超过85%，内存泄漏已确认", "mismatch"),
    ),
    *rows(
        MADE_UP,
        CPU_ALERT_TEXT,
        (
            "HighCPUUsage firing service=payment-service: CPU使用率持续超过80%，当前 92%，已确认根因",
            "mismatch",
        ),
        ("HighCPUUsage firing, service=payment-service, CPU usage 92%", "mismatch"),
        ("CPU使用率正常，没有异常", "mismatch"),
    ),
    *rows(
        MADE_UP,
        HIKARI_LOG_TEXT,
        ("order-service 数据库连接池已经耗尽，所有请求都在排队等待", "mismatch"),
        ("日志显示：HikariPool-1 - Connection is not available, request timed out after 30000ms", "mismatch"),
        ("Connection pool exhausted, all requests are waiting for a free connection", "mismatch"),
    ),
    *rows(MADE_UP, POOL_STATS_TEXT, ("HikariCP pool is healthy, plenty of idle connections", "mismatch")),
    *rows(MADE_UP, SLOW_LOG_TEXT, ("慢请求: GET 响应正常，缓存全部命中", "mismatch")),
    *rows(MADE_UP, NO_HIT_TEXT, ("已确认 inventory-service 不存在连接池问题", "mismatch")),
    *rows(MADE_UP, RUNBOOK_TEXT, ("应用日志显示连接池已耗尽，需要扩容", "mismatch")),
    # Polarity: similar enough to pass as fuzzy, but a negation dropped, added or cut off is a mismatch.
    *rows(
        POLARITY,
        HIKARI_LOG_TEXT,
        ("HikariPool-1 - Connection is available, request timed out after 30000ms", "mismatch"),
        ("available, request timed out after 30000ms", "mismatch"),
        ("HikariPool-1 - Connection is not available, request timed out after 30000ms", "substring"),
    ),
    *rows(POLARITY, "检查结果：未发现内存泄漏，堆内存回收正常", ("发现内存泄漏，堆内存回收正常", "mismatch")),
    *rows(
        POLARITY,
        "检查结果：未发现内存泄漏，堆内存回收正常",
        ("检查结果：发现内存泄漏，堆内存回收正常", "mismatch"),
    ),
    *rows(POLARITY, "检查结果：未发现内存泄漏，堆内存回收正常", ("检查结果：未发现内存泄漏", "substring")),
    *rows(
        POLARITY,
        "磁盘使用率持续超过 85%，挂载点 /data",
        ("磁盘使用率没有持续超过 85%，挂载点 /data", "mismatch"),
    ),
    *rows(
        POLARITY,
        "The retry queue is never drained by the worker",
        ("The retry queue is drained by the worker", "mismatch"),
    ),
    *rows(
        POLARITY,
        "Pod restarted without a readiness probe failure",
        ("Pod restarted with a readiness probe failure", "mismatch"),
    ),
    *rows(POLARITY, "健康检查非正常退出，容器被重启", ("健康检查正常退出，容器被重启", "mismatch")),
    *rows(
        POLARITY,
        "配置项 cache.ttl 是否生效：否，仍为默认值",
        ("配置项 cache.ttl 是否生效：仍为默认值", "mismatch"),
    ),
]


@pytest.mark.parametrize(("excerpt", "ref_text", "case", "kind"), TOLERANCE_TABLE)
def test_excerpt_tolerance_table(excerpt, ref_text, case, kind):
    assert excerpt_match(excerpt, ref_text).kind == kind


def test_a_negation_the_ref_does_not_have_is_never_tolerated():
    match = excerpt_match(
        "HighMemoryUsage firing service=order-service: 内存使用率未超过85%", MEMORY_ALERT_TEXT
    )

    assert (match.kind, match.similarity >= MATCH_THRESHOLD) == ("mismatch", True)


def test_the_threshold_separates_honest_from_made_up_excerpts():
    honest = [excerpt_match(e, r).similarity for e, r, case, _ in TOLERANCE_TABLE if case == HONEST]
    made_up = [excerpt_match(e, r).similarity for e, r, case, _ in TOLERANCE_TABLE if case == MADE_UP]

    assert max(made_up) < MATCH_THRESHOLD <= min(honest)


def test_a_binding_guards_failure_fails_that_citation_and_rejects(session, alert):
    passed = gatekeep(executor_output=claims([cite(alert)], [cite(alert)]), invocations=[alert.tool_result()])
    failure = RuleMessage(rule=LABEL_UNSUPPORTED, message="该行没有该属性", claim_id="claim-2")

    result = with_binding_failures(passed, [(("claim-2", alert.pk, "$.alerts[0]"), failure)])

    assert (result.status, result.severity, result.failed_rules) == ("fail", "reject", [LABEL_UNSUPPORTED])
    assert [(b.claim_id, b.status, b.rule) for b in result.checked_bindings] == [
        ("claim-1", "pass", None),
        ("claim-2", "fail", LABEL_UNSUPPORTED),
    ]
    assert result.errors == [failure]
    assert with_binding_failures(passed, []) == passed


@pytest.mark.parametrize(
    ("claim", "denies"),
    [
        ("order-service 没有 HighMemoryUsage 告警", True),
        ("checkout 没有 OOMKilled 相关的错误日志", True),
        ("order-service 不存在 HighMemoryUsage 告警", True),
        # 没有 in another clause, or not saying what is absent, denies nothing.
        ("内存告警没有恢复，HighMemoryUsage 仍在触发", False),
        ("请求在 30 秒内没有拿到数据库连接", False),
        ("order-service 的 HighMemoryUsage 告警正在触发", False),
    ],
)
def test_a_claim_saying_an_alert_or_line_is_absent_denies_a_record_that_states_it(claim, denies):
    assert bool(claim_denial(claim, ref_text=MEMORY_ALERT_TEXT, raw_path="$.alerts[0]")) is denies


@pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)
@pytest.mark.parametrize("newest", [0, 1, 2])
def test_a_negation_inside_a_quoted_line_is_the_lines_whichever_line_is_newest(names, newest):
    lines = [
        f'open() "/srv/{names.service}/favicon.ico" failed (2: No such file or directory)',
        f"upstream timed out (110: Connection timed out) while reading response header from {names.other}",
        f"connect() failed (111: Connection refused) while connecting to upstream {names.other}",
    ]
    lines = [lines[newest], *(line for i, line in enumerate(lines) if i != newest)]
    result = nginx_lines(names, lines)
    bindings = [EvidenceBinding.of_ref(result, ref) for ref in result.refs]

    quoting = gatekeep(executor_output=said(f"{names.service} 的错误日志记录：{lines[0]}", bindings), invocations=[result])
    denying = gatekeep(executor_output=said(f"未发现 {names.service} 的错误日志", bindings), invocations=[result])

    assert quoting.failed_rules == []
    assert denying.failed_rules == ["evidence.polarity_mismatch"]


def nginx_lines(names: Names, lines: list[str]) -> ToolResult:
    records = [
        {"timestamp": f"2026-11-29 14:5{9 - i}:00", "service": names.service, "level": "error", "message": line}
        for i, line in enumerate(lines)
    ]
    texts = [LogLine.model_validate(record).ref_text() for record in records]
    return message(7, "query_logs", "logs", records, texts, arguments={"query": "error"}, source="loki")


def said(text: str, bindings: list[EvidenceBinding]) -> ExecutorOutput:
    claim = Claim(claim_id="claim-1", claim_type="observation", claim_text=text, evidence_bindings=bindings)
    return ExecutorOutput(
        claims=[claim],
        hypotheses=[],
        missing_info=[],
        recommended_actions=[],
        diagnosis_summary="",
        user_facing_answer="",
    )
