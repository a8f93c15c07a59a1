"""The guards on the live stack (real Prometheus, the Loki API, the runbooks): the names they hold to
are the ones the sources report, `billing` (no suffix) as much as `ledger-service`."""

import pytest

from diagnosis.pipeline.composer import composer_guard
from diagnosis.pipeline.contracts import ComposerInput
from diagnosis.pipeline.facts import unsupported_facts
from diagnosis.selectors.world import world_current

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def material_about(text: str) -> ComposerInput:
    finding = {"claim_id": "claim-1", "claim_text": text, "evidence": []}
    return ComposerInput(
        query="", confirmed_findings=[finding], reasonable_inferences=[], gaps=[], allowed_actions=[]
    )


def test_the_live_sources_names_are_facts_whatever_their_shape(team_sources, stack):
    world = world_current()

    assert {
        "billing",
        "ledger-service",
        "KubePodCrashLooping",
    } <= world.inventory.services | world.inventory.alerts
    material = material_about("billing 当前存在 KubePodCrashLooping 告警")
    assert (
        composer_guard(
            answer="billing 当前存在 KubePodCrashLooping 告警。", material=material, names=world.fact_names
        )
        == []
    )
    assert "ledger-service" in composer_guard(
        answer="ledger-service 当前存在 KubePodCrashLooping 告警。", material=material, names=world.fact_names
    )
    swapped_back = material_about("ledger-service 当前存在 HighMemoryUsage 告警")
    assert "billing" in composer_guard(
        answer="billing 当前存在 HighMemoryUsage 告警。", material=swapped_back, names=world.fact_names
    )
    assert (
        unsupported_facts("Billing 的 HighMemoryUsage", ["billing HighMemoryUsage"], names=world.fact_names)
        == []
    )
