"""Test support for the evidence tools: a pinned clock and sources plugged in by setting."""

from __future__ import annotations

from datetime import datetime, timedelta

from diagnosis.services.invocations import invocation_record
from tools.clock import local_text
from tools.evidence.knowledge.source import KnowledgeSource
from tools.evidence.logs.source import LogSource
from tools.evidence.registry import kind_name
from tools.evidence.source import Source
from tools.knowledge_block import KnowledgeBlock

DEMO_NOW = "2026-11-29T15:00:00+08:00"


def pin_demo_now(settings) -> None:
    settings.DIAGNOSIS = {**settings.DIAGNOSIS, "DEMO_NOW": DEMO_NOW}


def record(session, tool_name: str, round: int = 1, **arguments: object):
    """One real tool call, recorded through the service the pipeline uses."""
    return invocation_record(session=session, round=round, tool_name=tool_name, arguments=arguments)


def use_source(settings, source_class: type[Source], *kinds: type[Source]) -> None:
    """Serve the kinds from `source_class` (a test's own), whatever the environment configures."""
    path = f"{source_class.__module__}.{source_class.__qualname__}"
    classes = settings.DIAGNOSIS["SOURCE_CLASSES"] | {kind_name(kind): path for kind in kinds}
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"SOURCE_CLASSES": classes}


class BrokenLogs(LogSource):
    """A log store that is down."""

    def query_logs(self, **_: object) -> list[dict]:
        raise ConnectionError("日志服务连接超时")


class FiveHundredLogs(LogSource):
    """A noisy log store: 500 lines, every one a different message."""

    def query_logs(self, *, now: datetime, **_: object) -> list[dict]:
        return [
            {
                "timestamp": local_text(now - timedelta(seconds=index)),
                "level": "ERROR" if index % 10 == 0 else "WARN",
                "service": "order-service",
                "instance": "pod-order-service-5c7d8e9f1-m3n2p",
                "topic": "application-logs",
                "message": f"批处理任务 {chr(0x4E00 + index)}{chr(0x5E00 + index)} 执行异常，"
                "已进入重试队列，等待人工确认",
                "metrics": {},
            }
            for index in range(500)
        ]


class WikiKnowledge(KnowledgeSource):
    """A team's own knowledge base: one page, no case library."""

    def knowledge_blocks(self) -> list[KnowledgeBlock]:
        return [
            KnowledgeBlock(
                block_id="wiki:redis-failover",
                source_document="wiki/redis-failover",
                title="Redis 主从切换演练",
                content="切换期间客户端会短暂出现 RedisConnectionTimeout，应开启重试退避。",
                exact_terms=("RedisConnectionTimeout",),
                section="处置措施",
            )
        ]
