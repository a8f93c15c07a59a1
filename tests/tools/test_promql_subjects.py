"""A subject put on the label that carries it in each metric's series: vocabulary
templates and metrics the question names, never a matcher the series lack."""

import promql_parser
import pytest

from tools.promql import series_query, subject_query

# Two worlds' label layouts: a service label on the app's metrics, `job` on node_exporter's.
WORLDS = {
    "demo": {
        ("jvm_memory_used_bytes", "order-service"): "service",
        ("node_load1", "order-service"): "job",
        ("node_filesystem_avail_bytes", "order-service"): "job",
        ("node_filesystem_size_bytes", "order-service"): "job",
    },
    "plain": {
        ("process_cpu_seconds_total", "ledger"): "app",
        ("node_load1", "ledger"): "instance",
        ("node_filesystem_avail_bytes", "ledger"): "instance",
        ("node_filesystem_size_bytes", "ledger"): "instance",
    },
}
SUBJECTS = {"demo": "order-service", "plain": "ledger"}
per_world = pytest.mark.parametrize("world", sorted(WORLDS))


def carrier_of(world: str):
    return lambda metric, subject: WORLDS[world].get((metric, subject))


@per_world
def test_the_matcher_goes_on_the_label_that_carries_the_subject_in_that_series(world):
    subject = SUBJECTS[world]
    label = WORLDS[world][("node_load1", subject)]

    query = subject_query('node_load1{service="{service}"}', subject=subject, carrier=carrier_of(world))

    assert query == f'node_load1{{{label}="{subject}"}}'


@per_world
def test_each_selector_of_a_template_gets_its_own_metrics_label_and_other_matchers_stay(world):
    subject = SUBJECTS[world]
    label = WORLDS[world][("node_filesystem_avail_bytes", subject)]
    template = (
        'max by (service) (1 - node_filesystem_avail_bytes{service="{service}",fstype!~"tmpfs"}'
        ' / node_filesystem_size_bytes{service="{service}"})'
    )

    query = subject_query(template, subject=subject, carrier=carrier_of(world))

    assert query == (
        f'max by ({label}) (1 - node_filesystem_avail_bytes{{{label}="{subject}",fstype!~"tmpfs"}}'
        f' / node_filesystem_size_bytes{{{label}="{subject}"}})'
    )
    promql_parser.parse(query)


@per_world
def test_a_template_whose_metric_has_no_label_carrying_the_subject_is_left_out(world):
    template = 'sum by (service) (rate(jvm_gc_pause_seconds_sum{service="{service}"}[5m]))'

    assert subject_query(template, subject=SUBJECTS[world], carrier=carrier_of(world)) is None


def test_without_a_source_that_can_tell_its_labels_the_template_is_taken_as_written():
    query = subject_query('up{service="{service}"}', subject='we"ird', carrier=None)

    assert query == 'up{service="we\\"ird"}'
    promql_parser.parse(query)


@per_world
def test_a_named_metric_is_queried_as_is_or_on_the_asked_subjects_label(world):
    subject = SUBJECTS[world]
    label = WORLDS[world][("node_load1", subject)]

    assert series_query("node_load1", subject=subject, carrier=carrier_of(world)) == (
        f'node_load1{{{label}="{subject}"}}'
    )
    assert series_query("node_load1", subject="", carrier=carrier_of(world)) == "node_load1"
    assert series_query("unknown_metric_total", subject=subject, carrier=carrier_of(world)) == (
        "unknown_metric_total"
    )


@per_world
def test_label_values_the_question_writes_become_matchers_on_the_labels_that_carry_them(world):
    subject = SUBJECTS[world]
    carried = {**WORLDS[world], ("node_filesystem_avail_bytes", "/"): "mountpoint"}

    def carrier(metric, value):
        return carried.get((metric, value))

    query = series_query(
        "node_filesystem_avail_bytes", subject=subject, carrier=carrier, values=("/", "eth9")
    )

    label = WORLDS[world][("node_filesystem_avail_bytes", subject)]
    assert query == f'node_filesystem_avail_bytes{{{label}="{subject}",mountpoint="/"}}'
    assert series_query("node_filesystem_avail_bytes", subject="", carrier=carrier, values=("/",)) == (
        'node_filesystem_avail_bytes{mountpoint="/"}'
    )
