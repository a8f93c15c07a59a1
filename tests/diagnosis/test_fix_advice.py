"""Fix recommendations in a composed answer: only the allowed evidence-gathering actions pass."""

import pytest

from diagnosis.pipeline.fix_advice import fix_recommendations

ALLOWED = ["查看 billing-worker 最近 30 分钟的 GC 日志", "确认队列消费者实例数"]


@pytest.mark.parametrize(
    "answer",
    [
        "队列积压 7420 条。建议立即重启 billing-worker。",
        "结论：内存偏高\n- 可以考虑扩容到 3 个副本",
        "请修改配置把超时调大到 60 秒",
        "You should restart the consumer.",
        "建议回滚到上一个版本；同时删除积压消息",
    ],
)
def test_a_remedy_not_among_the_allowed_actions_is_reported(answer):
    assert fix_recommendations(answer=answer, allowed_actions=ALLOWED, facts=["队列积压 7420 条"])


def test_allowed_evidence_gathering_actions_pass():
    answer = "队列积压 7420 条。\n\n建议下一步：\n- 查看 billing-worker 最近 30 分钟的 GC 日志\n- 确认队列消费者实例数"

    assert fix_recommendations(answer=answer, allowed_actions=ALLOWED, facts=["队列积压 7420 条"]) == []


def test_a_remedy_the_allowed_actions_name_passes():
    allowed = ["查看最近一次重启前后的日志"]

    assert (
        fix_recommendations(answer="建议查看最近一次重启前后的日志", allowed_actions=allowed, facts=[]) == []
    )


def test_restating_a_finding_about_a_restart_is_not_a_recommendation():
    facts = ["pod-ledger-1 在 14:02 重启 3 次"]

    assert (
        fix_recommendations(
            answer="已确认：pod-ledger-1 在 14:02 重启 3 次。", allowed_actions=[], facts=facts
        )
        == []
    )
    assert fix_recommendations(
        answer="pod-ledger-1 重启 3 次，建议再重启一次。", allowed_actions=[], facts=facts
    )
