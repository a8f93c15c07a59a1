"""The DIAGNOSIS environment variables: one typed object, bad values named, every variable documented."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from config.environment import Environment, environment_read

PRODUCT_PACKAGES = ("config", "diagnosis", "tools", "aiops", "caselib", "feedback", "mcp_server")
VARIABLE = re.compile(r"DIAGNOSIS_[A-Z0-9_]*")
# One more for each source a team may point the product at (Tempo's was the 37th).
MOST_VARIABLES = 37


def _named_in_product_code() -> set[str]:
    base = Path(settings.BASE_DIR)
    return {
        name
        for package in PRODUCT_PACKAGES
        for path in (base / package).rglob("*.py")
        for name in VARIABLE.findall(path.read_text(encoding="utf-8"))
    }


def _documented_in_readme() -> set[str]:
    """The variables in the first column of the README's tables."""
    rows = (line for line in (Path(settings.BASE_DIR) / "README.md").read_text().splitlines())
    return {name for line in rows if line.startswith("| `") for name in VARIABLE.findall(line.split("|")[1])}


def test_unset_variables_give_the_documented_defaults():
    environment = environment_read(environ={})

    assert environment.engine == "rules"
    assert environment.source_timeout == 10.0
    assert environment.q_timeout == 600
    assert environment.service_labels == ["service", "app", "job"]
    assert environment.source_headers == {}
    assert environment.prometheus_url is None
    assert environment.dev is False
    assert (environment.llm_structured_output, environment.llm_tool_calls) == ("json_schema", "native")
    assert environment.llm_context_tokens == 32000
    assert (environment.llm_timeout, environment.llm_max_retries) == (60.0, 2)
    assert environment.llm_temperature == 0.0
    assert environment.low_confidence_threshold == 0.5
    assert (environment.max_rounds, environment.max_tool_calls) == (2, 8)
    assert (environment.logs_window_minutes, environment.aiops_max_alerts) == (60, 20)
    assert environment.flap_window_minutes == 30


def test_values_are_read_as_their_types():
    environment = environment_read(
        environ={
            "DIAGNOSIS_SOURCE_TIMEOUT": "2.5",
            "DIAGNOSIS_LLM_CONTEXT_TOKENS": " 8192 ",
            "DIAGNOSIS_MAX_ROUNDS": " 3 ",
            "DIAGNOSIS_SERVICE_LABELS": "app, service ,,",
            "DIAGNOSIS_SOURCE_HEADERS": '{"loki": {"X-Scope-OrgID": "payments"}}',
            "DIAGNOSIS_DEV": "yes",
            "DIAGNOSIS_LOKI_URL": "http://loki:3100",
            "DIAGNOSIS_Q_TIMEOUT": "1200",
        }
    )

    assert environment.source_timeout == 2.5
    assert environment.llm_context_tokens == 8192
    assert environment.max_rounds == 3
    assert environment.service_labels == ["app", "service"]
    assert environment.source_headers == {"loki": {"X-Scope-OrgID": "payments"}}
    assert environment.dev is True
    assert environment.loki_url == "http://loki:3100"
    assert environment.q_timeout == 1200


def test_an_empty_variable_counts_as_unset():
    environment = environment_read(environ={"DIAGNOSIS_SOURCE_TIMEOUT": "", "DIAGNOSIS_NOTIFY_URL": "  "})

    assert environment.source_timeout == 10.0
    assert environment.notify_url is None


def test_other_variables_are_not_read():
    # DIAGNOSIS_CHAT_RATE was a variable once; its value is a constant of the settings now.
    environment = environment_read(
        environ={"DIAGNOSIS_SQLITE_TIMEOUT": "ten", "DIAGNOSIS_CHAT_RATE": "often", "PATH": "/bin"}
    )

    assert environment == environment_read(environ={})


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "DIAGNOSIS_SOURCE_TIMEOUT",
            "ten",
            "DIAGNOSIS_SOURCE_TIMEOUT must be a number of seconds, got 'ten'",
        ),
        ("DIAGNOSIS_SOURCE_TIMEOUT", "-1", "DIAGNOSIS_SOURCE_TIMEOUT must be a number of seconds, got '-1'"),
        (
            "DIAGNOSIS_LLM_CONTEXT_TOKENS",
            "0",
            "DIAGNOSIS_LLM_CONTEXT_TOKENS must be a whole number of tokens",
        ),
        (
            "DIAGNOSIS_LLM_CONTEXT_TOKENS",
            "8k",
            "DIAGNOSIS_LLM_CONTEXT_TOKENS must be a whole number of tokens",
        ),
        ("DIAGNOSIS_MAX_ROUNDS", "0", "DIAGNOSIS_MAX_ROUNDS must be a whole number, 1 or more, got '0'"),
        ("DIAGNOSIS_MAX_TOOL_CALLS", "2.5", "DIAGNOSIS_MAX_TOOL_CALLS must be a whole number, 1 or more"),
        ("DIAGNOSIS_ENGINE", "gpt", "DIAGNOSIS_ENGINE must be rules or llm, got 'gpt'"),
        ("DIAGNOSIS_LOW_CONFIDENCE_THRESHOLD", "1.5", "must be a number from 0 to 1, got '1.5'"),
        ("DIAGNOSIS_DEV", "maybe", "DIAGNOSIS_DEV must be 1 or 0 (true/false, yes/no, on/off), got 'maybe'"),
        (
            "DIAGNOSIS_Q_BROKER",
            "amqp://mq",
            "DIAGNOSIS_Q_BROKER must be redis://…, rediss://…, unix://… or orm",
        ),
        ("DIAGNOSIS_Q_TIMEOUT", "30", "DIAGNOSIS_Q_TIMEOUT must be a whole number of seconds, more than 60"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable_what_it_must_be_and_the_value(variable, value, message):
    with pytest.raises(ImproperlyConfigured) as refused:
        environment_read(environ={variable: value})

    assert message in str(refused.value)


def test_every_bad_value_is_named_at_once():
    with pytest.raises(ImproperlyConfigured) as refused:
        environment_read(environ={"DIAGNOSIS_LLM_TIMEOUT": "slow", "DIAGNOSIS_LOGS_WINDOW_MINUTES": "1h"})

    assert str(refused.value) == (
        "DIAGNOSIS_LLM_TIMEOUT must be a number of seconds, got 'slow'; "
        "DIAGNOSIS_LOGS_WINDOW_MINUTES must be a whole number of minutes, got '1h'"
    )


@pytest.mark.parametrize(
    "headers", ['{"prometheus": "Bearer s3cret-token"}', "Authorization: Bearer s3cret-token", "[1, 2]"]
)
def test_bad_source_headers_are_refused_without_echoing_the_credentials(headers):
    with pytest.raises(ImproperlyConfigured) as refused:
        environment_read(environ={"DIAGNOSIS_SOURCE_HEADERS": headers})

    assert str(refused.value) == (
        'DIAGNOSIS_SOURCE_HEADERS must be a JSON object like {"prometheus": {"Header": "value"}}'
    )
    assert "s3cret" not in str(refused.value)


def test_chat_channels_are_read_as_addresses_and_secrets():
    environment = environment_read(
        environ={
            "DIAGNOSIS_NOTIFY_FEISHU_URL": "https://open.feishu.cn/open-apis/bot/v2/hook/hook-token",
            "DIAGNOSIS_NOTIFY_FEISHU_SECRET": "signing-secret",
            "DIAGNOSIS_NOTIFY_DINGTALK_URL": "https://oapi.dingtalk.com/robot/send?access_token=token",
            "DIAGNOSIS_NOTIFY_DINGTALK_SECRET": "SECsigning",
            "DIAGNOSIS_NOTIFY_WECOM_URL": "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=robot-key",
            "DIAGNOSIS_NOTIFY_SLACK_URL": "https://hooks.slack.com/services/T0/B0/token",
        }
    )

    assert environment.notify_feishu_url.endswith("/hook/hook-token")
    assert (environment.notify_feishu_secret, environment.notify_dingtalk_secret) == (
        "signing-secret",
        "SECsigning",
    )
    assert environment.notify_wecom_url.endswith("key=robot-key")
    assert environment.notify_slack_url == "https://hooks.slack.com/services/T0/B0/token"


@pytest.mark.parametrize(
    "variable",
    [
        "DIAGNOSIS_NOTIFY_FEISHU_URL",
        "DIAGNOSIS_NOTIFY_DINGTALK_URL",
        "DIAGNOSIS_NOTIFY_WECOM_URL",
        "DIAGNOSIS_NOTIFY_SLACK_URL",
    ],
)
def test_a_chat_bot_address_that_is_no_web_address_is_refused_without_echoing_it(variable):
    with pytest.raises(ImproperlyConfigured) as refused:
        environment_read(environ={variable: "hooks.example/services/s3cret-token"})

    assert str(refused.value) == f"{variable} must be an http(s) URL"


def test_the_generic_webhook_address_must_be_a_web_address_too():
    with pytest.raises(ImproperlyConfigured) as refused:
        environment_read(environ={"DIAGNOSIS_NOTIFY_URL": "ftp://receiver.example/hooks"})

    assert (
        str(refused.value)
        == "DIAGNOSIS_NOTIFY_URL must be an http(s) URL, got 'ftp://receiver.example/hooks'"
    )


def test_every_variable_product_code_names_is_documented_in_the_readme():
    undocumented = _named_in_product_code() - _documented_in_readme()

    assert not undocumented, f"README's configuration tables lack {sorted(undocumented)}"


def test_the_readme_documents_only_variables_the_environment_reads():
    assert _documented_in_readme() == set(Environment.variables())


def test_the_configuration_fits_on_a_page():
    assert len(Environment.variables()) <= MOST_VARIABLES
    assert _named_in_product_code() == set(Environment.variables())
