"""Tool arguments grounded in the inventory: a made-up spelling of a known name is resolved, a name
nothing matches never reaches a source and comes back with the nearest known names."""

import re

import pytest

from diagnosis.pipeline.argument_grounding import LISTED_NAMES, NamesGrounded, arguments_grounded
from diagnosis.pipeline.focus import Inventory
from tests.diagnosis.pipeline.asks.support import DEMO, PLAIN, VOCABULARY, WORLD_IDS, WORLDS, Names, world
from tools.evidence.result import ToolResult


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


class ListToolbox:
    """A toolbox that answers every call with its arguments, and remembers what it was asked."""

    remaining_calls = 8
    parallel_safe = True

    def __init__(self, definitions: list[dict] | None = None) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.definitions = definitions or []

    def call(self, tool_name: str, arguments: dict) -> ToolResult:
        return self.call_many([(tool_name, arguments)])[0]

    def call_many(self, calls) -> list[ToolResult]:
        self.calls += calls
        return [
            ToolResult(invocation_id=len(self.calls) + i, tool_name=tool, success=True, arguments=args)
            for i, (tool, args) in enumerate(calls)
        ]

    def tool_definitions(self) -> list[dict]:
        return self.definitions


@pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)
@pytest.mark.parametrize(
    "shape", [camel, str.upper, lambda n: n.replace("-", "_"), lambda n: n.replace("-", " ")]
)
def test_a_service_in_another_shape_is_resolved_to_the_known_name(names: Names, shape):
    service = names.third  # cart-api in the plain world, user-service in the demo world
    written = shape(service)

    grounding = arguments_grounded({"service": written}, inventory=world(names).inventory)

    assert grounding.arguments == {"service": service}
    assert grounding.resolved == {"service": {"asked": written, "known": service}}
    assert grounding.unknown is None


@pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)
def test_an_alert_in_another_shape_is_resolved_and_a_known_name_is_left_alone(names: Names):
    inventory = world(names).inventory
    snake = "_".join(part.lower() for part in re.findall(r"[A-Z][a-z]*", names.other_alert))

    grounding = arguments_grounded({"alert_name": snake, "service": names.other}, inventory=inventory)

    assert grounding.arguments == {"alert_name": names.other_alert, "service": names.other}
    assert list(grounding.resolved) == ["alert_name"]


def test_a_chinese_alias_is_resolved_to_its_service():
    inventory = world(DEMO).inventory
    alias = VOCABULARY.service_aliases[DEMO.service][0]

    assert arguments_grounded({"service": alias}, inventory=inventory).arguments == {"service": DEMO.service}


@pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)
def test_a_name_nothing_matches_is_refused_with_the_nearest_known_names(names: Names):
    toolbox = ListToolbox()
    grounded = NamesGrounded(toolbox, inventory=world(names).inventory, asked=[])
    made_up = names.other_alert[:-3].lower() + "-num"

    refused, ran = grounded.call_many(
        [("query_alerts", {"alert_name": made_up}), ("query_alerts", {"service": names.service})]
    )

    assert toolbox.calls == [("query_alerts", {"service": names.service})]
    assert refused.success is False and "invocation_id" not in refused.model_message()
    assert refused.nearest_names[0] == names.other_alert
    assert f"最接近的已知名称：{names.other_alert}" in refused.error
    assert ran.invocation_id == 1 and not ran.resolved_names


@pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)
def test_a_name_the_question_asked_about_is_searched_as_written(names: Names):
    toolbox = ListToolbox()
    grounded = NamesGrounded(toolbox, inventory=world(names).inventory, asked=["ghost-service"])

    grounded.call("query_logs", {"query": "error", "service": "ghost-service"})

    assert toolbox.calls == [("query_logs", {"query": "error", "service": "ghost-service"})]


def test_an_inventory_without_names_of_a_kind_grounds_nothing():
    inventory = Inventory.build(
        services=[],
        alerts=[],
        vocabulary=VOCABULARY.model_copy(update={"service_aliases": {}, "alert_topics": {}}),
    )

    assert arguments_grounded({"service": "AnyThing"}, inventory=inventory).arguments == {
        "service": "AnyThing"
    }


@pytest.mark.parametrize("names", [PLAIN, DEMO], ids=WORLD_IDS)
def test_the_tool_descriptions_offer_the_known_names_bounded(names: Names):
    many = [f"svc-{i:02d}" for i in range(LISTED_NAMES + 5)]
    inventory = Inventory.build(services=[*names.services, *many], alerts=names.alerts, vocabulary=VOCABULARY)
    definition = {
        "type": "function",
        "function": {
            "name": "query_alerts",
            "parameters": {
                "properties": {"service": {"description": "服务名"}, "alert_name": {"description": "告警名"}}
            },
        },
    }
    toolbox = ListToolbox([definition])

    offered = NamesGrounded(toolbox, inventory=inventory, asked=[]).tool_definitions()[0]

    properties = offered["function"]["parameters"]["properties"]
    assert properties["service"]["description"].startswith("服务名（已知：")
    assert properties["service"]["description"].endswith("等）")
    assert properties["service"]["description"].count("、") == LISTED_NAMES - 1
    assert names.other_alert in properties["alert_name"]["description"]
    assert definition["function"]["parameters"]["properties"]["service"] == {"description": "服务名"}
