"""Fix recommendations in a composed answer: a remedy is never recommended, whatever the world."""

import pytest

from diagnosis.pipeline.fix_advice import fix_recommendations
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, Vocabulary, vocabulary_load

SHIPPED = vocabulary_load(DEFAULT_VOCABULARY_FILE)
# A world whose own file names no remedy still gets the shipped ones.
BARE_WORLD = Vocabulary()


@pytest.mark.parametrize("vocabulary", [SHIPPED, BARE_WORLD])
@pytest.mark.parametrize(
    "answer",
    [
        "队列积压 7420 条。建议立即重启 billing-worker。",
        "结论：内存偏高\n- 可以考虑扩容到 3 个副本",
        "请修改配置把超时调大到 60 秒",
        "You should restart the consumer.",
        "建议回滚到上一个版本；同时删除积压消息",
        "建议立即回退 checkout 的最新发布",
        "可以先把 payments 停掉",
        "建议 drain 节点 node-7 后再 cordon",
        "建议 rollout undo deployment/cart-api",
        "请 helm uninstall billing-db",
    ],
)
def test_a_remedy_is_reported(answer, vocabulary):
    assert fix_recommendations(answer=answer, facts=["队列积压 7420 条"], vocabulary=vocabulary)


def test_evidence_gathering_next_steps_pass():
    answer = "队列积压 7420 条。\n\n建议下一步：\n- 查看 billing-worker 最近 30 分钟的 GC 日志\n- 确认队列消费者实例数"

    assert fix_recommendations(answer=answer, facts=["队列积压 7420 条"], vocabulary=SHIPPED) == []


def test_restating_a_finding_about_a_restart_is_not_a_recommendation():
    facts = ["pod-ledger-1 在 14:02 重启 3 次"]

    assert (
        fix_recommendations(
            answer="已确认：pod-ledger-1 在 14:02 重启 3 次。", facts=facts, vocabulary=SHIPPED
        )
        == []
    )
    assert fix_recommendations(
        answer="pod-ledger-1 重启 3 次，建议再重启一次。", facts=facts, vocabulary=SHIPPED
    )
