"""The Nezha benchmark loaded into a real Prometheus (Debian's promtool and prometheus) and a fixed
subset of its faults asked of the product (`manage.py bench_rca`)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import httpx2
import pytest
from django.core.management import call_command

from diagnosis.evaluation.nezha.bench import day_served
from diagnosis.evaluation.nezha.data import day_read
from tests.integration.stack import missing_binaries

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

REPOSITORY = Path(__file__).resolve().parents[2]
# Where the data lie beside the project (never copied into it); NEZHA_DIR points elsewhere.
NEZHA = Path(os.environ.get("NEZHA_DIR") or REPOSITORY.parent / "shared" / "data" / "nezha")
if not (NEZHA / "rca_data").is_dir():
    NEZHA = Path("/work/shared/data/nezha")


@pytest.fixture(scope="module")
def nezha() -> Path:
    if missing_binaries():
        pytest.fail(f"Debian packages missing: {', '.join(missing_binaries())}")
    if not (NEZHA / "rca_data").is_dir():
        pytest.skip(f"the Nezha data are not at {NEZHA} (set NEZHA_DIR)")
    return NEZHA / "rca_data"


def test_a_day_is_served_with_kubernetes_names_units_and_metadata(nezha):
    day = day_read(nezha / "2022-08-22")
    pod = next(p for p in day.pods if p.service == "cartservice")
    with day_served(day, namespace="hipster") as (url, shift):

        def query(promql: str, at) -> list[dict]:
            answer = httpx2.get(
                f"{url}/api/v1/query", params={"query": promql, "time": (at + shift).timestamp()}
            )
            return answer.json()["data"]["result"]

        metadata = httpx2.get(f"{url}/api/v1/metadata").json()["data"]
        services = httpx2.get(f"{url}/api/v1/label/service/values").json()["data"]
        (at, millicores), (_, mebibytes) = (
            pod.columns["CpuUsage(m)"][100],
            pod.columns["MemoryUsage(Mi)"][100],
        )
        [cpu] = query(f'rate(container_cpu_usage_seconds_total{{pod="{pod.pod}"}}[90s])', at)
        [memory] = query(f'container_memory_working_set_bytes{{pod="{pod.pod}"}}', at)
        edges = query("traces_service_graph_request_total", at)

    assert metadata["container_cpu_usage_seconds_total"][0]["type"] == "counter"
    assert metadata["http_server_request_duration_seconds"][0]["type"] == "summary"
    assert sorted(services) == day.services
    assert cpu["metric"] == {
        "namespace": "hipster",
        "pod": pod.pod,
        "service": "cartservice",
        "container": "cartservice",
    }
    assert float(cpu["value"][1]) == pytest.approx(millicores / 1000, rel=1e-4)
    assert float(memory["value"][1]) == pytest.approx(mebibytes * 1024 * 1024)
    assert {(e["metric"]["client"], e["metric"]["server"]) for e in edges} == set(day.edges)


def test_the_command_asks_each_chosen_fault_and_the_product_names_the_injected_service_first(
    nezha, capsys, monkeypatch
):
    """Two faults of one day: a CPU contention (the pod's own CPU) and a network delay (seen only from
    its callers, on the service-graph edges): the first candidate is the injected pod's service, its
    numbers re-computed by the gatekeeper (else the line would not be a candidate line)."""
    # The test database stands in for the command's throwaway one.
    monkeypatch.setattr(
        "diagnosis.management.commands.bench_rca.throwaway_database", lambda **_: contextlib.nullcontext()
    )
    call_command(
        "bench_rca", "--nezha", str(nezha.parent), "--cases", "2022-08-22T044416", "2022-08-22T042703"
    )
    out = capsys.readouterr().out

    case_lines = [line for line in out.splitlines() if "product=" in line]
    assert len(case_lines) == 2
    assert all(line.startswith("✓ ") for line in case_lines), out
    assert "OnlineBoutique                       2     2/2 100.0%" in out
    assert "92.86%" in out
    queries = [int(line.rsplit("q ", 1)[0].rsplit(" ", 1)[1]) for line in case_lines]
    assert max(queries) <= 60
