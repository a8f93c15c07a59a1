import pytest

from tests.tools.support import pin_demo_now
from tools import clock
from tools.evidence.result import ToolResult
from tools.evidence.tool import ToolContext, get_tool


@pytest.fixture(autouse=True)
def demo_now(settings):
    pin_demo_now(settings)


@pytest.fixture
def run_tool():
    """Run a tool as the recorder would, without recording: `run_tool("query_logs", query=...)`."""

    def run(tool_name: str, *, seen_block_ids: frozenset[str] = frozenset(), **arguments) -> ToolResult:
        tool = get_tool(tool_name)
        context = ToolContext(now=clock.now(), seen_block_ids=set(seen_block_ids))
        return tool.bounded_run(tool.arguments_model.model_validate(arguments), context)

    return run
