import pytest

from caselib.knowledge import CaseLibraryKnowledge
from caselib.models import CaseLibrary
from tests.factories import CaseLibraryFactory
from tools.sources.demo import DemoWorldSource

pytestmark = pytest.mark.django_db


def test_past_cases_are_knowledge_blocks_with_their_root_cause_and_solution():
    case = CaseLibraryFactory(
        title="billing-api 队列积压", root_cause="消费者线程阻塞", solution="扩容消费者"
    )

    [block] = CaseLibraryKnowledge().knowledge_blocks()

    assert block.block_id == f"case:{case.case_id}"
    assert block.title == "历史案例：billing-api 队列积压"
    assert "根因：消费者线程阻塞" in block.content
    assert "处置：扩容消费者" in block.content


def test_the_demo_world_serves_past_cases_only_while_the_case_library_is_a_configured_source(settings):
    case = CaseLibraryFactory(title="billing-api 队列积压")

    def case_ids() -> list[str]:
        return [b.block_id for b in DemoWorldSource().knowledge_blocks() if b.block_id.startswith("case:")]

    assert case_ids() == [f"case:{case.case_id}"]
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"KNOWLEDGE_SOURCES": []}
    assert case_ids() == []


@pytest.mark.parametrize("status", [CaseLibrary.Status.CANDIDATE, CaseLibrary.Status.REJECTED])
def test_only_approved_cases_are_knowledge(status):
    approved = CaseLibraryFactory(title="billing-api 队列积压")
    CaseLibraryFactory(title="billing-api 队列积压（未审核）", status=status)

    assert [block.block_id for block in CaseLibraryKnowledge().knowledge_blocks()] == [
        f"case:{approved.case_id}"
    ]
