import pytest

from diagnosis.pipeline.facts import NO_NAMES, FactNames, fact_tokens, unsupported_facts
from tests.factories import HIKARI_LOG_TEXT, MEMORY_ALERT_TEXT


def values(text):
    return [(token.kind, token.value) for token in fact_tokens(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("当前 91%", [("number", "91%")]),
        ("内存使用率过高: 91.0%", [("number", "91%")]),
        ("JVM堆内存 3.8GB/4GB", [("ratio", "3.8gb/4gb")]),
        ("active=50/50, idle=0, waiting=32", [("ratio", "50/50"), ("number", "0"), ("number", "32")]),
        ("响应耗时 4200ms", [("number", "4200ms")]),
        ("P99 当前 4.2s", [("code", "p99"), ("number", "4200ms")]),
        ("exit code 137", [("number", "137")]),
        ("积压 15823 条消息", [("number", "15823")]),
        ("扫描行数 1,245,678", [("number", "1245678")]),
        ("duration=15m", [("number", "900000ms")]),
        ("order-service 与 user-service", [("name", "order-service"), ("name", "user-service")]),
        (
            "mysql-primary-01 上 redis-cluster-01:6379",
            [("name", "mysql-primary-01"), ("name", "redis-cluster-01"), ("number", "6379")],
        ),
        ("node-worker-02 内核 OOM", [("name", "node-worker-02")]),
        (
            "HighMemoryUsage、HighCPUUsage 与 SlowResponse",
            [("code", "highmemoryusage"), ("code", "highcpuusage"), ("code", "slowresponse")],
        ),
        ("接口 /api/v1/users/profile", [("endpoint", "/api/v1/users/profile")]),
        ("java.lang.OutOfMemoryError", [("code", "outofmemoryerror")]),
        (
            "QueryTimeoutException、ERR_TIMEOUT、OOMKilled",
            [("code", "querytimeoutexception"), ("name", "err_timeout"), ("code", "oomkilled")],
        ),
        ("HTTP 500", [("number", "500")]),
        ("HikariPool-1 - Connection is not available", [("name", "hikaripool-1")]),
        ("[2026-11-29 14:52:00]", [("date", "2026-11-29"), ("time", "14:52:00")]),
    ],
)
def test_fact_tokens_are_extracted_in_canonical_form(text, expected):
    assert values(text) == expected


def test_vocabulary_is_not_a_fact():
    text = "JVM 的 CPU 与 GC 日志显示连接池正常，Connection 超时"

    assert fact_tokens(text) == []


def test_identifier_shaped_words_are_facts_whatever_they_end_with():
    assert values("read-only 的 cart-api 与 node_load1、http_requests_total") == [
        ("name", "read-only"),
        ("name", "cart-api"),
        ("name", "node_load1"),
        ("name", "http_requests_total"),
    ]


PLAIN_NAMES = FactNames.of(
    ["checkout", "payments", "cart-api", "Watchdog"], aliases=[("结账服务", "checkout")]
)


def test_every_name_the_sources_know_is_a_fact_of_any_shape():
    text = "checkout 与 Payments、cart_api、结账服务，还有 Watchdog"

    assert [(t.kind, t.value) for t in fact_tokens(text, PLAIN_NAMES)] == [
        ("name", "checkout"),
        ("name", "payments"),
        ("name", "cart-api"),
        ("name", "checkout"),
        ("name", "watchdog"),
    ]
    assert fact_tokens("checkout 与 payments", NO_NAMES) == []


@pytest.mark.parametrize(
    ("claim", "missing"),
    [
        ("checkout 的错误率 0.3279", []),
        ("payments 的错误率 0.3279", ["payments"]),
        ("CheckOut 的错误率 0.3279", []),
        ("checkout 的错误率 0.33", ["0.33"]),
        ("checkout 与 payments 的错误率 0.3279", ["payments"]),
        ("checkout-7f9c 的错误率 0.3279", ["checkout-7f9c"]),
    ],
)
def test_a_swapped_or_added_plain_name_is_unsupported(claim, missing):
    evidence = 'checkout error ratio {service="checkout"} = 0.3279'

    assert unsupported_facts(claim, [evidence], names=PLAIN_NAMES) == missing


def test_a_known_name_inside_a_pod_name_is_supported():
    assert unsupported_facts("checkout 重启", ["pod checkout-7f9c restarted"], names=PLAIN_NAMES) == []


def test_markdown_list_numbers_are_not_facts():
    assert values("1. 当前 91%\n2) 持续告警") == [("number", "91%")]


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("内存使用率 91.0%", "当前 91%"),
        ("P99 为 4.2 秒", "P99 当前 4.2s"),
        ("P99 为 4200 毫秒", "P99 当前 4.2s"),
        ("持续 15 分钟", "duration=15m"),
        ("ＪＶＭ 堆内存 ３.８GB/４GB", "JVM堆内存 3.8GB/4GB"),
        ("堆内存已用 3.8GB，上限 4GB", "JVM堆内存 3.8GB/4GB"),
        ("连接池 active 50/50", "active=50/50"),
        ("hikaricp 连接池", "HikariCP pool stats"),
        ("HikariPool 报错", HIKARI_LOG_TEXT),
        ("order-service 的 pod", "pod pod-order-service-5c7d8e9f1-m3n2p"),
        ("14:52 出现错误", HIKARI_LOG_TEXT),
        ("当前 91", "当前 91%"),
    ],
)
def test_equal_facts_in_other_forms_are_supported(claim, evidence):
    assert unsupported_facts(claim, [evidence]) == []


@pytest.mark.parametrize(
    ("claim", "missing"),
    [
        ("order-service 内存使用率 97%", ["97%"]),
        ("JVM 堆内存 3.9GB/4GB", ["3.9GB/4GB"]),
        ("payment-service 存在 HighMemoryUsage 告警", ["payment-service"]),
        ("order-service 存在 HighCPUUsage 告警", ["HighCPUUsage"]),
        ("持续 25m", ["25m"]),
        ("当前 91ms", ["91ms"]),
        ("接口 /api/v1/users/settings 报 ERR_TIMEOUT", ["/api/v1/users/settings", "ERR_TIMEOUT"]),
    ],
)
def test_changed_facts_are_reported_as_written(claim, missing):
    assert unsupported_facts(claim, [MEMORY_ALERT_TEXT]) == missing


def test_a_token_cut_by_truncation_is_tolerated_only_when_asked_and_only_if_literally_present():
    excerpt = "1%，JVM堆内存 3.8GB/4"

    assert unsupported_facts(excerpt, [MEMORY_ALERT_TEXT], truncation_tolerant=True) == []
    assert unsupported_facts(excerpt, [MEMORY_ALERT_TEXT]) == ["1%", "3.8GB/4"]
    assert unsupported_facts("…当前 97%", [MEMORY_ALERT_TEXT], truncation_tolerant=True) == ["97%"]
