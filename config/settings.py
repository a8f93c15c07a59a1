"""Settings read from the environment with safe defaults.

Development defaults: SQLite file in the project, rules engine, DEBUG only when asked.
Outside development (DJANGO_DEBUG unset and not running tests) a real DJANGO_SECRET_KEY is required.
"""

import os
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from config.environment import environment_read

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


# Every DIAGNOSIS variable, typed and checked once (config/environment.py); a bad value stops here.
ENV = environment_read(environ=os.environ)

DEBUG = env_bool("DJANGO_DEBUG")
TESTING = "pytest" in sys.modules or (len(sys.argv) > 1 and sys.argv[1] == "test")
DEVELOPMENT_SECRET_KEY = "dev-only-insecure-key-change-me"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not (DEBUG or TESTING or ENV.dev):
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is required unless DJANGO_DEBUG or DIAGNOSIS_DEV is set."
        )
    SECRET_KEY = DEVELOPMENT_SECRET_KEY

ALLOWED_HOSTS = [
    h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h
]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "axes",
    "tools",
    "diagnosis",
    "caselib",
    "feedback",
    "aiops",
    "mcp_server",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    # Before anything reads the session cookie or routes the path: NUL bytes end here as 400 / 404.
    "diagnosis.input_rules.RejectNulMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes requires: it turns a locked-out login into its lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

# SQLite, the embedded default, is shared by the web server's threads and the worker processes.
SQLITE_OPTIONS = {
    # BEGIN IMMEDIATE takes the write lock when a transaction starts, so a writer waits its turn (up to
    # `timeout`) instead of failing with `database is locked` when it upgrades a read lock.
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    # WAL: readers never block the writer nor it them; NORMAL sync is durable in WAL except on power loss.
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}


def database_config(url: str | None = None) -> dict:
    """`DATABASE_URL` (or `url`) as Django's database settings, SQLite with `SQLITE_OPTIONS`."""
    default = f"sqlite:///{BASE_DIR / 'db.sqlite3'}"
    config = (
        dj_database_url.parse(url, conn_max_age=env_int("DJANGO_CONN_MAX_AGE", 0))
        if url
        else dj_database_url.config(default=default, conn_max_age=env_int("DJANGO_CONN_MAX_AGE", 0))
    )
    if config["ENGINE"] == "django.db.backends.sqlite3":
        config["OPTIONS"] = {**config.get("OPTIONS", {}), **SQLITE_OPTIONS}
    elif config["ENGINE"] == "django.db.backends.postgresql":
        # Our queries are short index lookups; once a table is large the planner's cost crosses the JIT
        # threshold and compiling costs more than the query (1.45 s of a 2.1 s deep admin page at 100,000
        # sessions). A `DATABASE_URL` that sets its own `options` keeps them.
        config.setdefault("OPTIONS", {}).setdefault("options", "-c jit=off")
    return config


DATABASES = {"default": database_config()}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Login throttling (django-axes) for the login page and the admin alike: after this many wrong passwords
# for one username from one address, that pair is locked out for the cool-off time, also with the
# right password. Behind a reverse proxy set AXES_IPWARE_PROXY_COUNT so the client's address is used.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Failures are recorded (AccessAttempt, visible in the admin); successful logins are not.
AXES_DISABLE_ACCESS_LOG = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# Its start-up banner ("AXES: BEGIN …") would open the output of every manage.py command.
AXES_VERBOSE = False

LANGUAGE_CODE = "zh-hans"
LANGUAGES = [("zh-hans", "简体中文"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
# Every time the pages show is in this zone, and the reviewers' desk names it (README: DJANGO_TIME_ZONE).
TIME_ZONE = os.environ.get("DJANGO_TIME_ZONE", "Asia/Shanghai")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT") or BASE_DIR / "staticfiles")
# Tests serve static files straight from the apps, without a collectstatic step.
WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = TESTING
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chat"
LOGOUT_REDIRECT_URL = "login"

# Content-Security-Policy (django-csp): scripts and styles only from our own static files (htmx is
# vendored, the pages have no inline script or style), no plugins, no framing, forms post to us only.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        # `data:` for the empty favicon and the admin's and Swagger UI's inline SVG icons.
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# The site's address for links in notifications: behind TLS, the first named host; else relative links.
PUBLIC_URL = ""
if not DEBUG and env_bool("DJANGO_SECURE", default=False):
    # Production behind TLS: `DJANGO_SECURE=1` turns on the HTTPS-only settings `check --deploy` asks for.
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    PUBLIC_URL = next((f"https://{h}" for h in ALLOWED_HOSTS if not h.startswith((".", "*"))), "")

REST_FRAMEWORK = {
    # Token first: an anonymous call gets 401 with `WWW-Authenticate: Token` (DRF takes the header from
    # the first class; session authentication has none, which made it a bare 403).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # The browsable API only while debugging: in production every endpoint answers JSON.
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        *(["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    ],
    # JSON bounded in size, depth and content (NUL), the same rule as the web forms (issue 14).
    "DEFAULT_PARSER_CLASSES": [
        "diagnosis.input_rules.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 20,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Verified AIOps Diagnosis API",
    "DESCRIPTION": "Chat, trace and feedback for the verified diagnosis assistant.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Sessions and steps both have a `status` (and requests reuse `feedback`): name each choice set once.
    "ENUM_NAME_OVERRIDES": {
        "SessionStatusEnum": "diagnosis.models.DiagnosisSession.Status",
        "StepStatusEnum": "diagnosis.models.AgentStep.Status",
        "FeedbackEnum": "diagnosis.models.DiagnosisSession.Feedback",
        "AlertStatusEnum": [("firing", "firing"), ("resolved", "resolved")],
    },
}

# django-q2 on the ORM broker: the database is the queue, no extra service.
# `DIAGNOSIS_Q_BROKER=redis://host:6379/0` puts the queue on Redis instead, for workers on several hosts.
# A task runs at most `timeout` s (its session then ends FAILED); the ORM broker delivers a task again
# when no worker acknowledged it `retry` s after it was taken (its worker died), which must be later.
Q_TIMEOUT = ENV.q_timeout
# A running session's heartbeat (the worker-lost bound below is six of them).
HEARTBEAT_SECONDS = 10.0
Q_CLUSTER = {
    "name": "diagnosis",
    # Its section in the admin.
    "label": "后台任务",
    # Worker processes of one cluster; more capacity is more clusters (`qcluster`) or hosts.
    "workers": 2,
    "timeout": Q_TIMEOUT,
    "retry": Q_TIMEOUT + 60,
    "max_attempts": 1,
    "catch_up": False,
}
Q_BROKER = ENV.q_broker
if Q_BROKER == "orm":
    Q_CLUSTER["orm"] = "default"
else:
    Q_CLUSTER["redis"] = Q_BROKER

# The webhook's per-token rate counts in this cache: with the queue on Redis (`DIAGNOSIS_Q_BROKER=redis://…`)
# it is that Redis, shared by every web process; otherwise each process counts on its own (one process:
# `make run`, the tests). Failed token attempts, a bound against guessing, count in the database always.
CACHE_URL = Q_BROKER if "redis" in Q_CLUSTER else ""
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": "diagnosis",
        }
    }

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # A refused request (403) is logged as one line, not with the PermissionDenied traceback.
    "filters": {"quiet_forbidden": {"()": "config.log_filters.QuietForbidden"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    # The openai SDK's HTTP client logs every request at INFO (it ships as `httpx2` in openai 3.x).
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
        # The MCP SDK logs each HTTP request's session manager starting and stopping at INFO.
        "mcp": {"level": "WARNING"},
        "django.request": {"filters": ["quiet_forbidden"]},
    },
}

# The diagnosis pipeline's settings. `ENV.…` are the operator's variables (the README's table); the
# literals are tuning defaults no deployment has needed to change, each with why it is what it is:
# change one here, or with a settings override (tests, the evaluation's per-case settings).
DIAGNOSIS = {
    "ENGINE": ENV.engine,
    "LLM_MODEL": ENV.llm_model,
    # Per call: long enough for a small model on a local CPU server to read a 4k-token prompt and
    # write its reply; one retry (a timed-out request keeps the server busy, a second would queue).
    "LLM_TIMEOUT": ENV.llm_timeout,
    "LLM_MAX_RETRIES": ENV.llm_max_retries,
    # All model calls of one session: ends it FAILED with the cause before the worker's task timeout.
    "LLM_SESSION_SECONDS": Q_TIMEOUT - 60,
    "LLM_STRUCTURED_OUTPUT": ENV.llm_structured_output,
    "LLM_TOOL_CALLS": ENV.llm_tool_calls,
    "LLM_TEMPERATURE": ENV.llm_temperature,
    "LLM_CONTEXT_TOKENS": ENV.llm_context_tokens,
    # `max_completion_tokens` (OpenAI, current servers) or `max_tokens` (older vLLM / Ollama setups).
    "LLM_TOKEN_CAP_PARAMETER": "max_completion_tokens",
    # Tool calls of one executor turn run at once (bounded): the sources are waited on in parallel.
    "TOOL_CONCURRENCY": 4,
    "LOW_CONFIDENCE_THRESHOLD": ENV.low_confidence_threshold,
    "MAX_ROUNDS": ENV.max_rounds,
    "MAX_TOOL_CALLS": ENV.max_tool_calls,
    "ALERTMANAGER_TOKEN": ENV.alertmanager_token,
    # Sessions one user may start per period (N/s|min|hour|day), over the web form, the API and AI Ops
    # alike; an AI Ops analysis counts as many as the alert sessions it may start.
    "CHAT_RATE": "30/min",
    # An MCP `diagnose` over HTTP queues its session for the worker and holds its web thread only this
    # long waiting for the answer; past it the call answers with the session's link and state.
    "MCP_WAIT_SECONDS": 30.0,
    # An MCP call (diagnose or an evidence tool) is refused while this many of its user's sessions are
    # queued or running: one user's calls hold at most this many web threads.
    "MCP_MAX_IN_FLIGHT": 3,
    # Alerts of one AIOps analysis diagnosed at the same time (threads). SQLite always runs them one
    # by one: its single writer would only make the threads wait for each other's locks.
    "AIOPS_CONCURRENCY": 3,
    # Alerts one analysis diagnoses; the rest are listed in its report as not analysed.
    "AIOPS_MAX_ALERTS": ENV.aiops_max_alerts,
    # Label names that name an alert's service, in order of preference.
    "SERVICE_LABELS": ENV.service_labels,
    # Flapping: this many episodes of one alert within the window are one group with
    # one report; its "still flapping" notice is sent at most every REPEAT minutes, and it has settled
    # when no episode started for SETTLE minutes after the last one resolved.
    "FLAP_WINDOW_MINUTES": ENV.flap_window_minutes,
    "FLAP_EPISODES": 3,
    "FLAP_REPEAT_MINUTES": 60.0,
    "FLAP_SETTLE_MINUTES": 10.0,
    # Webhook bounds: notifications per token and period (N/s|min|hour|day); the largest body accepted.
    # Alertmanager groups alerts into few notifications: more than this from one token is a fault.
    "ALERTMANAGER_RATE": "120/min",
    # Wrong or missing-scheme tokens one client address may send per period before every request from
    # it is refused with 429 (a right token too: guessing must not learn from the answer).
    "ALERTMANAGER_FAILED_TOKEN_RATE": "10/min",
    "ALERTMANAGER_MAX_BYTES": 1024 * 1024,
    # What one tool call stores and returns, whatever its source answered (tools.bounds): the first
    # series / log lines / other records, each series' latest points, the whole within the bytes of
    # its stored JSON; a cut output says `truncated` and its totals.
    "OUTPUT_MAX_SERIES": 500,
    "OUTPUT_MAX_POINTS": 240,
    "OUTPUT_MAX_LINES": 100,
    "OUTPUT_MAX_RECORDS": 500,
    "OUTPUT_MAX_BYTES": 512 * 1024,
    # Reads of a session's trace (the API and MCP `session_trace`) per user and period, and the tool
    # invocations one page of it holds.
    "TRACE_RATE": "120/min",
    "TRACE_PAGE_SIZE": 10,
    # Where finished reports and resolved episodes are POSTed; unset = nowhere.
    "NOTIFY_URL": ENV.notify_url,
    "NOTIFY_TOKEN": ENV.notify_token,
    # The team's chat bots (aiops.channels), each told the same notices in its own message format.
    "NOTIFY_FEISHU_URL": ENV.notify_feishu_url,
    "NOTIFY_FEISHU_SECRET": ENV.notify_feishu_secret,
    "NOTIFY_DINGTALK_URL": ENV.notify_dingtalk_url,
    "NOTIFY_DINGTALK_SECRET": ENV.notify_dingtalk_secret,
    "NOTIFY_WECOM_URL": ENV.notify_wecom_url,
    "NOTIFY_SLACK_URL": ENV.notify_slack_url,
    # A delivery is a request to a source like any other: the same time bound.
    "NOTIFY_TIMEOUT": ENV.source_timeout,
    # Seconds before each retry of a failed delivery; after the last one the delivery is given up.
    "NOTIFY_RETRY_DELAYS": [20, 60, 300, 1800],
    # The site's address as receivers reach it, for the links in notifications ("" = relative links).
    "PUBLIC_URL": PUBLIC_URL,
    # Members of this group see the reports of Alertmanager's notifications (staff see them anyway).
    "ONCALL_GROUP": ENV.oncall_group,
    # Sessions RUNNING longer than this are considered orphaned by a dead worker and end FAILED: the
    # task timeout and its redelivery have passed by then.
    "STALE_AFTER_SECONDS": Q_TIMEOUT + 300,
    # A running session's worker touches it this often; silent for six beats, its worker is gone
    # (killed, out of memory, host lost) and the reaper (every minute) ends it FAILED.
    "HEARTBEAT_SECONDS": HEARTBEAT_SECONDS,
    "WORKER_LOST_AFTER_SECONDS": 6 * HEARTBEAT_SECONDS,
    # A source class named for a kind of evidence (`alerts`, `series`, `targets`, `logs`, `knowledge`;
    # dotted path) replaces the environment's choice: evaluation fixtures, a team's own Python source
    # (settings overrides). Empty = the sources below.
    "SOURCE_CLASSES": {},
    # Knowledge other apps keep, added to the demo world's runbooks (dotted class paths).
    "KNOWLEDGE_SOURCES": ["caselib.knowledge.CaseLibraryKnowledge"],
    # Evidence sources; with none set the demo world answers (alerts, logs, runbooks); with any set, a
    # kind none serves has no source (`tools.sources`).
    "PROMETHEUS_URL": ENV.prometheus_url,
    "ALERTMANAGER_URL": ENV.alertmanager_url,
    "LOKI_URL": ENV.loki_url,
    "LOKI_TENANT": ENV.loki_tenant,
    "TEMPO_URL": ENV.tempo_url,
    "RUNBOOKS_DIR": ENV.runbooks_dir,
    "SOURCE_HEADERS": ENV.source_headers,
    "LOGS_WINDOW_MINUTES": ENV.logs_window_minutes,
    "SOURCE_TIMEOUT": ENV.source_timeout,
    # Pins "now" for the demo world (ISO 8601, a settings override in tests and the eval); None = the
    # real clock.
    "DEMO_NOW": None,
    # The world vocabulary; unset = the demo world's (tools/data/demo_world/vocabulary.json).
    "VOCABULARY_FILE": ENV.vocabulary_file,
}
