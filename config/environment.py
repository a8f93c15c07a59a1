"""The DIAGNOSIS environment variables as one typed object, read once when the settings load.

Each field reads the variable of its alias; its description says what a value must be, and a bad
value stops the start naming it: "DIAGNOSIS_SOURCE_TIMEOUT must be a number of seconds, got 'ten'".
An empty variable counts as unset. The README's configuration table documents every field.

Read here: where the sources and the model are, what the model server can do, credentials, the queue,
and the model, log-window and AI Ops knobs the spec (CONTRACTS.md) names as variables. Other tuning
defaults (rates, MCP bounds, output bytes) are constants in `config/settings.py`'s `DIAGNOSIS`, changed
there or with a settings override.
"""

import json
from collections.abc import Mapping
from typing import Annotated, Literal
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})
# Values never echoed in an error: they carry credentials. A chat bot's webhook address is one (the
# Feishu hook token, DingTalk's `access_token`, WeCom's `key`, Slack's whole URL).
SECRET_VARIABLES = frozenset(
    {
        "DIAGNOSIS_ALERTMANAGER_TOKEN",
        "DIAGNOSIS_NOTIFY_TOKEN",
        "DIAGNOSIS_SOURCE_HEADERS",
        "DIAGNOSIS_NOTIFY_FEISHU_URL",
        "DIAGNOSIS_NOTIFY_FEISHU_SECRET",
        "DIAGNOSIS_NOTIFY_DINGTALK_URL",
        "DIAGNOSIS_NOTIFY_DINGTALK_SECRET",
        "DIAGNOSIS_NOTIFY_WECOM_URL",
        "DIAGNOSIS_NOTIFY_SLACK_URL",
    }
)


def _switch(value: object) -> object:
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    return value


def _names(value: object) -> object:
    if isinstance(value, str):
        return [name.strip() for name in value.split(",") if name.strip()]
    return value


def _headers(value: object) -> object:
    """`{"prometheus": {"Authorization": "Bearer …"}}`: a JSON object of string maps, per source."""
    if not isinstance(value, str):
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        raise ValueError("not JSON") from None
    if not isinstance(parsed, dict) or not all(isinstance(v, dict) for v in parsed.values()):
        raise ValueError("not an object of objects")
    return {source: {str(k): str(v) for k, v in headers.items()} for source, headers in parsed.items()}


def _web_address(value: object) -> object:
    """An http(s) URL with a host: a notification to anything else fails at every try."""
    if isinstance(value, str):
        parts = urlsplit(value)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError("not an http(s) URL")
    return value


Switch = Annotated[bool, BeforeValidator(_switch)]
Names = Annotated[list[str], BeforeValidator(_names)]
Headers = Annotated[dict[str, dict[str, str]], BeforeValidator(_headers)]
WebAddress = Annotated[str, BeforeValidator(_web_address)]
WEB_ADDRESS = "an http(s) URL"


class Environment(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    # Development: the built-in secret key (never in production).
    dev: Switch = Field(
        alias="DIAGNOSIS_DEV", default=False, description="1 or 0 (true/false, yes/no, on/off)"
    )
    # Engine and model.
    engine: Literal["rules", "llm"] = Field(
        alias="DIAGNOSIS_ENGINE", default="rules", description="rules or llm"
    )
    llm_model: str = Field(alias="DIAGNOSIS_LLM_MODEL", default="gpt-4o-mini", description="a model name")
    llm_timeout: float = Field(
        alias="DIAGNOSIS_LLM_TIMEOUT", default=60.0, gt=0, description="a number of seconds"
    )
    llm_max_retries: int = Field(
        alias="DIAGNOSIS_LLM_MAX_RETRIES", default=2, ge=0, description="a whole number, 0 or more"
    )
    # What the model server supports, which differs by server (OpenAI, DeepSeek, vLLM, llama.cpp) and
    # by model: no default fits all of them.
    llm_structured_output: str = Field(
        alias="DIAGNOSIS_LLM_STRUCTURED_OUTPUT",
        default="json_schema",
        description="json_schema, json_object or prompted",
    )
    llm_tool_calls: str = Field(
        alias="DIAGNOSIS_LLM_TOOL_CALLS", default="native", description="native or prompted"
    )
    llm_temperature: float = Field(
        alias="DIAGNOSIS_LLM_TEMPERATURE", default=0.0, ge=0, description="a number, 0 or more"
    )
    # The served model's context window (vLLM `--max-model-len`, llama.cpp `-c`), set by whoever runs it.
    llm_context_tokens: int = Field(
        alias="DIAGNOSIS_LLM_CONTEXT_TOKENS", default=32000, gt=0, description="a whole number of tokens"
    )
    low_confidence_threshold: float = Field(
        alias="DIAGNOSIS_LOW_CONFIDENCE_THRESHOLD",
        default=0.5,
        ge=0,
        le=1,
        description="a number from 0 to 1",
    )
    max_rounds: int = Field(
        alias="DIAGNOSIS_MAX_ROUNDS", default=2, ge=1, description="a whole number, 1 or more"
    )
    max_tool_calls: int = Field(
        alias="DIAGNOSIS_MAX_TOOL_CALLS", default=8, ge=1, description="a whole number, 1 or more"
    )
    # Sources.
    prometheus_url: str | None = Field(alias="DIAGNOSIS_PROMETHEUS_URL", default=None, description="a URL")
    alertmanager_url: str | None = Field(
        alias="DIAGNOSIS_ALERTMANAGER_URL", default=None, description="a URL"
    )
    loki_url: str | None = Field(alias="DIAGNOSIS_LOKI_URL", default=None, description="a URL")
    loki_tenant: str | None = Field(alias="DIAGNOSIS_LOKI_TENANT", default=None, description="a tenant name")
    tempo_url: str | None = Field(alias="DIAGNOSIS_TEMPO_URL", default=None, description="a URL")
    runbooks_dir: str | None = Field(alias="DIAGNOSIS_RUNBOOKS_DIR", default=None, description="a folder")
    source_headers: Headers = Field(
        alias="DIAGNOSIS_SOURCE_HEADERS",
        default_factory=dict,
        description='a JSON object like {"prometheus": {"Header": "value"}}',
    )
    service_labels: Names = Field(
        alias="DIAGNOSIS_SERVICE_LABELS",
        default_factory=lambda: ["service", "app", "job"],
        description="comma-separated label names",
    )
    logs_window_minutes: int = Field(
        alias="DIAGNOSIS_LOGS_WINDOW_MINUTES", default=60, gt=0, description="a whole number of minutes"
    )
    # A slow or distant Prometheus or Loki is a property of the deployment's network and data size.
    source_timeout: float = Field(
        alias="DIAGNOSIS_SOURCE_TIMEOUT", default=10.0, gt=0, description="a number of seconds"
    )
    vocabulary_file: str | None = Field(alias="DIAGNOSIS_VOCABULARY_FILE", default=None, description="a file")
    # Webhook and delivery.
    alertmanager_token: str | None = Field(
        alias="DIAGNOSIS_ALERTMANAGER_TOKEN", default=None, description="a token"
    )
    aiops_max_alerts: int = Field(
        alias="DIAGNOSIS_AIOPS_MAX_ALERTS", default=20, ge=1, description="a whole number, 1 or more"
    )
    flap_window_minutes: int = Field(
        alias="DIAGNOSIS_FLAP_WINDOW_MINUTES", default=30, ge=1, description="a whole number of minutes"
    )
    notify_url: WebAddress | None = Field(alias="DIAGNOSIS_NOTIFY_URL", default=None, description=WEB_ADDRESS)
    notify_token: str | None = Field(alias="DIAGNOSIS_NOTIFY_TOKEN", default=None, description="a token")
    # Chat channels: a bot's webhook and, where the service signs, the bot's signing secret.
    notify_feishu_url: WebAddress | None = Field(
        alias="DIAGNOSIS_NOTIFY_FEISHU_URL", default=None, description=WEB_ADDRESS
    )
    notify_feishu_secret: str | None = Field(
        alias="DIAGNOSIS_NOTIFY_FEISHU_SECRET", default=None, description="a signing secret"
    )
    notify_dingtalk_url: WebAddress | None = Field(
        alias="DIAGNOSIS_NOTIFY_DINGTALK_URL", default=None, description=WEB_ADDRESS
    )
    notify_dingtalk_secret: str | None = Field(
        alias="DIAGNOSIS_NOTIFY_DINGTALK_SECRET", default=None, description="a signing secret"
    )
    notify_wecom_url: WebAddress | None = Field(
        alias="DIAGNOSIS_NOTIFY_WECOM_URL", default=None, description=WEB_ADDRESS
    )
    notify_slack_url: WebAddress | None = Field(
        alias="DIAGNOSIS_NOTIFY_SLACK_URL", default=None, description=WEB_ADDRESS
    )
    oncall_group: str | None = Field(alias="DIAGNOSIS_ONCALL_GROUP", default=None, description="a group name")
    # Serving: the queue, and a session's task timeout, which follows how fast the model server answers
    # (a CPU server needs the default 600 s); everything timed after it is derived from it.
    q_broker: str = Field(
        alias="DIAGNOSIS_Q_BROKER",
        default="orm",
        pattern=r"^(orm|(redis|rediss|unix)://.+)$",
        description="redis://…, rediss://…, unix://… or orm",
    )
    q_timeout: int = Field(
        alias="DIAGNOSIS_Q_TIMEOUT", default=600, gt=60, description="a whole number of seconds, more than 60"
    )

    @classmethod
    def variables(cls) -> list[str]:
        """Every variable it reads, in order."""
        return [field.alias for field in cls.model_fields.values()]


def environment_read(*, environ: Mapping[str, str]) -> Environment:
    """The environment's DIAGNOSIS values, typed; ImproperlyConfigured names each bad one."""
    values = {
        name: environ[name].strip() for name in Environment.variables() if environ.get(name, "").strip()
    }
    try:
        return Environment.model_validate(values)
    except ValidationError as error:
        fields = {field.alias: field for field in Environment.model_fields.values()}
        problems = []
        for problem in error.errors():
            name = str(problem["loc"][0])
            message = f"{name} must be {fields[name].description}"
            if name not in SECRET_VARIABLES:
                message += f", got {values[name]!r}"
            problems.append(message)
        raise ImproperlyConfigured("; ".join(dict.fromkeys(problems))) from None
