"""`make test-llm-real`'s real-stack part: the integration stack (real Prometheus, Alertmanager,
node_exporter and the test Loki server over the second world's lines) started as `make record-world`
starts it, then the integration tests' questions asked of it by `manage.py llm_real`: the llm engine
on a real local model beside the rules engine, question by question (slots filled, verdicts, tokens,
wall time, calls with an unresolved name).

    python -m tests.integration.llm_real_stack --server PATH --model PATH [other llm_real options]
"""

import os
import sys

import django

# The questions the integration tests ask of this stack (test_answers_live, test_diagnose_live,
# test_series_live), and the recorded world's logs and cause questions about it.
QUESTIONS = (
    "只确认 ledger-service 是否存在 HighMemoryUsage 告警",
    "billing 的 node_memory_MemTotal_bytes 当前是多少？",
    "PostgresReplicationLag 的阈值是多少？",
    "KubePodCrashLooping 的阈值是多少？",
    "node 主机当前 1 分钟负载",
    "node_memory_MemAvailable_bytes 当前值",
    "node_filesystem_avail_bytes 在 / 当前是多少",
    "过去 5 分钟 ledger-service 的 node_memory_MemTotal_bytes 趋势",
    "过去 10 分钟 node 的负载趋势",
    "DbConnectionsSaturated 是不是在反复触发？",
    "Any scrape targets down?",
    "上周 billing 出过什么问题？",
    "PostgresReplicationLag 的 runbook 第一步要检查什么？",
    "billing 最近的错误日志有哪些？",
    "ledger-service 的内存情况怎么样",
    "billing 为什么一直重启？",
    "哪个最需要先处理？",
    "帮我重启 billing",
)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DIAGNOSIS_DEV", "1")
    django.setup()
    from django.core.management import call_command

    from tests.integration.stack import team_sources_running

    with team_sources_running() as sources:
        questions = [f"--question={question}" for question in QUESTIONS]
        call_command("llm_real", *sources, *questions, *sys.argv[1:])


if __name__ == "__main__":
    main()
