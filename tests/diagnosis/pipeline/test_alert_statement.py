from diagnosis.pipeline.alert_statement import alert_observation
from tools.evidence.alerts.record import AlertRecord


def load(**fields) -> AlertRecord:
    return AlertRecord(alert_name="NodeLoadHigh", service="web-1:9100", state="firing", **fields)


def test_a_firing_alert_is_told_in_the_present_with_its_value():
    assert (
        alert_observation(load(value="7.2")) == "web-1:9100 当前存在 NodeLoadHigh 告警（firing），当前值 7.2"
    )


def test_a_resolved_alert_is_told_in_the_past_from_the_same_parts():
    record = load(value="7.2", description="负载过高")

    assert alert_observation(record, resolved=True) == (
        "web-1:9100 触发期间存在 NodeLoadHigh 告警（当时触发中）：负载过高，当时的值 7.2"
    )


def test_a_value_the_description_already_says_is_not_repeated_in_either_tense():
    record = load(value="7.2", description="负载 7.2")

    assert alert_observation(record) == "web-1:9100 当前存在 NodeLoadHigh 告警（firing）：负载 7.2"
    assert alert_observation(record, resolved=True) == (
        "web-1:9100 触发期间存在 NodeLoadHigh 告警（当时触发中）：负载 7.2"
    )
