"""Every DEMO_WORLD.md fact, served as written (now pinned at 2026-11-29 15:00 Asia/Shanghai)."""

import pytest

from tools.evidence.logs.record import LogLine
from tools.sources import demo
from tools.sources.demo import log_record

pytestmark = pytest.mark.django_db


def messages(logs: list[LogLine]) -> list[str]:
    return [log.message for log in logs]


def test_three_firing_alerts_in_order_with_their_facts(run_tool):
    alerts = run_tool("query_alerts").records

    assert [(a.alert_name, a.service, a.state) for a in alerts] == [
        ("HighCPUUsage", "payment-service", "firing"),
        ("HighMemoryUsage", "order-service", "firing"),
        ("SlowResponse", "user-service", "firing"),
    ]
    assert [(a.active_at, a.duration) for a in alerts] == [
        ("2026-11-29 14:35:00", "25m"),
        ("2026-11-29 14:45:00", "15m"),
        ("2026-11-29 14:50:00", "10m"),
    ]
    cpu, memory, slow = alerts
    assert cpu.description == (
        "CPU使用率持续超过80%，当前 92%，pod pod-payment-service-7d8f9c6b5-x2k4m，namespace production"
    )
    assert cpu.labels == {"pod": "pod-payment-service-7d8f9c6b5-x2k4m", "namespace": "production"}
    assert memory.description == (
        "内存使用率持续超过85%，当前 91%，JVM堆内存 3.8GB/4GB，pod pod-order-service-5c7d8e9f1-m3n2p"
    )
    assert (
        slow.description
        == "P99响应时间持续超过3s，当前 4.2s，接口 /api/v1/users/profile、/api/v1/users/orders"
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"service": "order-service"}, ["HighMemoryUsage"]),
        ({"service": "PAYMENT-SERVICE"}, ["HighCPUUsage"]),
        ({"alert_name": "SlowResponse"}, ["SlowResponse"]),
        ({"service": "user-service", "alert_name": "HighMemoryUsage"}, []),
        ({"alert_name": "HighDiskUsage"}, []),
    ],
)
def test_alert_filters_narrow_the_list(run_tool, arguments, expected):
    output = run_tool("query_alerts", **arguments)

    assert [a.alert_name for a in output.records] == expected
    assert output.success is True
    assert output.total == len(expected)


@pytest.mark.parametrize("service", ["inventory-service", "gateway-service"])
def test_healthy_services_have_no_alerts_and_no_warning_logs(run_tool, service):
    assert run_tool("query_alerts", service=service).records == []
    logs = run_tool("query_logs", query=service, limit=100).records

    assert logs, "the service exists in the demo world"
    assert {log.level for log in logs} == {"INFO"}
    assert all(log.message.startswith("健康检查通过: status=UP") for log in logs)


def test_payment_service_cpu_trend_newest_first_every_two_minutes(run_tool):
    output = run_tool("query_logs", query="CPU使用率", service="payment-service", topic="system-metrics")
    samples = [log for log in output.records if log.message.startswith("CPU使用率过高")]

    assert [log.message for log in samples] == [
        "CPU使用率过高: 92.0%",
        "CPU使用率过高: 90.5%",
        "CPU使用率过高: 89.0%",
        "CPU使用率过高: 87.5%",
        "CPU使用率过高: 86.0%",
    ]
    assert [log.timestamp[11:] for log in samples] == [
        "14:59:00",
        "14:57:00",
        "14:55:00",
        "14:53:00",
        "14:51:00",
    ]
    assert {log.instance for log in samples} == {"pod-payment-service-7d8f9c6b5-x2k4m"}
    assert "进程: java (PID: 1), 线程数: 245, load average: 3.82 / 3.65, CPU核数: 4" in messages(
        output.records
    )


def test_order_service_memory_trend_newest_first_every_three_minutes(run_tool):
    output = run_tool("query_logs", query="内存使用率", service="order-service", topic="system-metrics")
    samples = [log for log in output.records if log.message.startswith("内存使用率过高")]

    assert [log.message for log in samples] == [
        "内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB, GC次数: 128",
        "内存使用率过高: 89.8%, JVM堆内存: 3.7GB/4GB, GC次数: 123",
        "内存使用率过高: 88.6%, JVM堆内存: 3.6GB/4GB, GC次数: 118",
        "内存使用率过高: 87.4%, JVM堆内存: 3.5GB/4GB, GC次数: 113",
        "内存使用率过高: 86.2%, JVM堆内存: 3.4GB/4GB, GC次数: 108",
    ]
    assert [log.timestamp[11:] for log in samples] == [
        "14:59:00",
        "14:56:00",
        "14:53:00",
        "14:50:00",
        "14:47:00",
    ]


def test_full_gc_warning_eight_minutes_ago(run_tool):
    logs = run_tool("query_logs", query="Full GC", service="order-service").records
    full_gc = [log for log in logs if log.message.startswith("频繁 Full GC 警告")]

    assert len(full_gc) == 1
    assert full_gc[0].timestamp == "2026-11-29 14:52:00"
    assert (
        full_gc[0].message
        == "频繁 Full GC 警告: 过去10分钟内发生 15 次 Full GC, 平均耗时 850ms, 老年代使用率 89%"
    )


def test_log_collector_disk_usage_rises_on_node_worker_01(run_tool):
    logs = run_tool("query_logs", query="磁盘使用率", topic="system-metrics").records

    assert [log.message for log in reversed(logs)] == [
        "磁盘使用率过高: /data 85%",
        "磁盘使用率过高: /data 87%",
        "磁盘使用率过高: /data 89%",
    ]
    assert {(log.service, log.instance) for log in logs} == {("log-collector", "node-worker-01")}


def test_user_service_slow_requests_newest_first_with_database_time_and_cache_miss(run_tool):
    logs = run_tool("query_logs", query="慢请求", service="user-service", topic="application-logs").records
    slow = [log for log in logs if log.message.startswith("慢请求")]

    assert [(log.level, log.metrics["endpoint"], log.metrics["duration_ms"]) for log in slow] == [
        ("WARN", "/api/v1/users/profile", 4200),
        ("WARN", "/api/v1/users/orders", 4050),
        ("WARN", "/api/v1/users/profile", 3900),
        ("WARN", "/api/v1/users/orders", 3750),
        ("WARN", "/api/v1/users/profile", 3600),
    ]
    for log in slow:
        assert f"响应耗时 {log.metrics['duration_ms']}ms" in log.message
        assert log.metrics["db_time_ms"] >= 0.95 * log.metrics["duration_ms"]
        assert "缓存未命中" in log.message


def test_order_service_connection_pool_lines_verbatim(run_tool):
    logs = run_tool("query_logs", query="HikariCP", service="order-service").records

    assert [(log.level, log.service, log.message) for log in logs] == [
        (
            "ERROR",
            "order-service",
            "HikariPool-1 - Connection is not available, request timed out after 30000ms",
        ),
        ("WARN", "order-service", "HikariCP pool stats: active=50/50, idle=0, waiting=32"),
    ]


def test_order_service_out_of_memory_error(run_tool):
    logs = run_tool("query_logs", query="OutOfMemoryError", topic="application-logs").records

    assert [(log.level, log.service, log.message) for log in logs] == [
        (
            "FATAL",
            "order-service",
            "java.lang.OutOfMemoryError: Java heap space at OrderService.processLargeOrder:156",
        ),
    ]


def test_user_service_http_500_on_profile_with_query_timeouts(run_tool):
    logs = run_tool("query_logs", query="HTTP 500", service="user-service").records
    errors = [log for log in logs if log.message.startswith("HTTP 500")]

    assert [log.metrics["duration_ms"] for log in errors] == [5200, 5500, 5800]
    for log in errors:
        assert log.level == "ERROR"
        assert "/api/v1/users/profile" in log.message
        assert "QueryTimeoutException" in log.message


def test_payment_service_redis_timeout_and_rabbitmq_backlog(run_tool):
    redis = run_tool("query_logs", query="Redis", service="payment-service").records
    backlog = run_tool("query_logs", query="RabbitMQ", service="payment-service").records

    assert messages(redis) == ["Redis 连接超时: redis-cluster-01:6379, 超时 3000ms, 已重试 3 次"]
    assert messages(backlog) == [
        "RabbitMQ 消息积压: 队列 order-process-queue 积压 15823 条消息, 消费者数量: 3"
    ]


def test_database_slow_queries_on_mysql_primary(run_tool):
    logs = run_tool("query_logs", query="慢查询", topic="database-slow-query").records

    assert {log.service for log in logs} == {"mysql-primary-01"}
    assert messages(logs) == [
        "慢查询: SELECT * FROM orders WHERE user_id = ? ORDER BY created_at DESC, 耗时 3.2s, "
        "扫描行数 1,245,678, 使用索引 idx_user_id",
        "慢查询: SELECT * FROM users u JOIN user_profiles p ON u.id = p.user_id, 耗时 2.8s, 全表扫描",
        "慢查询: UPDATE orders SET status = ? WHERE id = ?, 耗时 4.5s, 锁等待 2.1s",
    ]


def test_system_events_oomkilled_restart_and_kernel_oom_kill(run_tool):
    logs = run_tool("query_logs", query="OOM", topic="system-events").records

    assert [(log.service, log.instance, log.message) for log in logs] == [
        (
            "order-service",
            "pod-order-service-5c7d8e9f1-m3n2p",
            "容器重启: pod-order-service-5c7d8e9f1-m3n2p, 原因 OOMKilled, exit code 137, 重启次数 3",
        ),
        (
            "kernel",
            "node-worker-02",
            "内核 OOM Killer: Out of memory: Killed process (java), 内存占用 3.9GB, 内存限制 4GB",
        ),
    ]


def test_times_follow_the_clock(run_tool, settings):
    settings.DIAGNOSIS = {**settings.DIAGNOSIS, "DEMO_NOW": "2027-01-01T00:00:00+08:00"}

    alert = run_tool("query_alerts", alert_name="HighMemoryUsage").records[0]

    assert alert.active_at == "2026-12-31 23:45:00"


def test_log_topics_are_read_with_the_vocabulary_in_use(run_tool, settings):
    """A world read first (here the second world) must not leave its reading of the lines behind."""
    demo._logs.cache_clear()  # the lines are read once per process: start as a fresh process does
    shop_vocabulary = settings.BASE_DIR / "diagnosis/evaluation/worlds/shop/vocabulary.json"
    demo_diagnosis = settings.DIAGNOSIS
    settings.DIAGNOSIS = {**demo_diagnosis, "VOCABULARY_FILE": str(shop_vocabulary)}
    run_tool("query_logs", query="slow", service="user-service")
    settings.DIAGNOSIS = demo_diagnosis

    logs = run_tool("query_logs", query="slow", service="user-service").records

    assert len([log for log in logs if log.message.startswith("慢请求")]) == 5


def test_a_log_records_topics_are_its_whole_words_with_camel_case_parts():
    record = log_record(
        {
            "level": "WARN",
            "service": "payments",
            "instance": "cp-1.slowvm1.cloudlab.us",
            "topic": "application-logs",
            "message": "ReadTimeout at 00:00:04.500, retrying",
        }
    )

    assert "timeout" in record.groups
    # `slow` is inside the hostname, `500` inside the time: neither is a word of the line.
    assert not {"slow", "error"} & record.groups
