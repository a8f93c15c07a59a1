"""Settings read from the environment with safe defaults (contracts §2).

Development defaults: SQLite file in the project, rules engine, DEBUG only when asked.
Outside development (DJANGO_DEBUG unset and not running tests) a real DJANGO_SECRET_KEY is required.
"""

import json
import os
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def env_json_object(name: str) -> dict:
    """A JSON object of objects (`{"prometheus": {"Authorization": "Bearer …"}}`); bad JSON is an error."""
    text = os.environ.get(name, "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ImproperlyConfigured(
            f'{name} must be a JSON object like {{"prometheus": {{"Header": "value"}}}}'
        )
    return {source: {str(k): str(v) for k, v in headers.items()} for source, headers in value.items()}


DEBUG = env_bool("DJANGO_DEBUG")
TESTING = "pytest" in sys.modules or (len(sys.argv) > 1 and sys.argv[1] == "test")
DEVELOPMENT_SECRET_KEY = "dev-only-insecure-key-change-me"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not (DEBUG or TESTING or env_bool("DIAGNOSIS_DEV")):
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

# SQLite, the embedded default, is shared by the web server's threads and the worker processes (§15).
SQLITE_OPTIONS = {
    # BEGIN IMMEDIATE takes the write lock when a transaction starts, so a writer waits its turn (up to
    # `timeout`) instead of failing with `database is locked` when it upgrades a read lock.
    "transaction_mode": "IMMEDIATE",
    "timeout": env_int("DIAGNOSIS_SQLITE_TIMEOUT", 20),
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
AXES_FAILURE_LIMIT = env_int("DIAGNOSIS_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("DIAGNOSIS_LOGIN_COOLOFF_MINUTES", 15))
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
if not DEBUG and env_bool("DJANGO_SECURE", default=False):
    # Production behind TLS: `DJANGO_SECURE=1` turns on the HTTPS-only settings `check --deploy` asks for.
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

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
Q_TIMEOUT = env_int("DIAGNOSIS_Q_TIMEOUT", 600)
Q_CLUSTER = {
    "name": "diagnosis",
    # Its section in the admin.
    "label": "后台任务",
    "workers": env_int("DIAGNOSIS_Q_WORKERS", 2),
    "timeout": Q_TIMEOUT,
    "retry": env_int("DIAGNOSIS_Q_RETRY", Q_TIMEOUT + 60),
    "max_attempts": 1,
    "catch_up": False,
    "sync": env_bool("DIAGNOSIS_Q_SYNC"),
}
Q_BROKER = os.environ.get("DIAGNOSIS_Q_BROKER", "")
if Q_BROKER.startswith(("redis://", "rediss://", "unix://")):
    Q_CLUSTER["redis"] = Q_BROKER
elif Q_BROKER in ("", "orm"):
    Q_CLUSTER["orm"] = "default"
else:
    raise ImproperlyConfigured(f"DIAGNOSIS_Q_BROKER={Q_BROKER!r}: expected redis://… or orm")

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
        "django.request": {"filters": ["quiet_forbidden"]},
    },
}

# The diagnosis pipeline (contracts §2).
DIAGNOSIS = {
    "ENGINE": os.environ.get("DIAGNOSIS_ENGINE", "rules"),
    "LLM_MODEL": os.environ.get("DIAGNOSIS_LLM_MODEL", "gpt-4o-mini"),
    # Per call: long enough for a small model on a local CPU server to read a 4k-token prompt and
    # write its reply; one retry (a timed-out request keeps the server busy, a second would queue).
    "LLM_TIMEOUT": env_float("DIAGNOSIS_LLM_TIMEOUT", 180.0),
    "LLM_MAX_RETRIES": env_int("DIAGNOSIS_LLM_MAX_RETRIES", 1),
    # All model calls of one session: ends it FAILED with the cause before the worker's task timeout.
    "LLM_SESSION_SECONDS": env_float("DIAGNOSIS_LLM_SESSION_SECONDS", Q_CLUSTER["timeout"] - 60),
    "LLM_STRUCTURED_OUTPUT": os.environ.get("DIAGNOSIS_LLM_STRUCTURED_OUTPUT", "json_schema"),
    "LLM_TOOL_CALLS": os.environ.get("DIAGNOSIS_LLM_TOOL_CALLS", "native"),
    "LLM_TEMPERATURE": env_float("DIAGNOSIS_LLM_TEMPERATURE", 0.0),
    "LLM_CONTEXT_TOKENS": env_int("DIAGNOSIS_LLM_CONTEXT_TOKENS", 32000),
    # `max_completion_tokens` (OpenAI, current servers) or `max_tokens` (older vLLM / Ollama setups).
    "LLM_TOKEN_CAP_PARAMETER": os.environ.get("DIAGNOSIS_LLM_TOKEN_CAP_PARAMETER", "max_completion_tokens"),
    # Tool calls of one executor turn run at once (bounded): the sources are waited on in parallel.
    "TOOL_CONCURRENCY": env_int("DIAGNOSIS_TOOL_CONCURRENCY", 4),
    "LOW_CONFIDENCE_THRESHOLD": env_float("DIAGNOSIS_LOW_CONFIDENCE_THRESHOLD", 0.5),
    "MAX_ROUNDS": env_int("DIAGNOSIS_MAX_ROUNDS", 2),
    "MAX_TOOL_CALLS": env_int("DIAGNOSIS_MAX_TOOL_CALLS", 8),
    "ALERTMANAGER_TOKEN": os.environ.get("DIAGNOSIS_ALERTMANAGER_TOKEN") or None,
    # Sessions one user may start per period (N/s|min|hour|day), over the web form, the API and AI Ops
    # alike; an AI Ops analysis counts as many as the alert sessions it may start.
    "CHAT_RATE": os.environ.get("DIAGNOSIS_CHAT_THROTTLE", "30/min"),
    # Alerts of one AIOps analysis diagnosed at the same time (threads). SQLite always runs them one
    # by one: its single writer would only make the threads wait for each other's locks.
    "AIOPS_CONCURRENCY": env_int("DIAGNOSIS_AIOPS_CONCURRENCY", 3),
    # Alerts one analysis diagnoses (contracts §13); the rest are listed in its report as not analysed.
    "AIOPS_MAX_ALERTS": env_int("DIAGNOSIS_AIOPS_MAX_ALERTS", 20),
    # Label names that name an alert's service, in order of preference (contracts §11).
    "SERVICE_LABELS": [
        name.strip()
        for name in os.environ.get("DIAGNOSIS_SERVICE_LABELS", "service,app,job").split(",")
        if name.strip()
    ],
    # Flapping (contracts §18): this many episodes of one alert within the window are one group with
    # one report; its "still flapping" notice is sent at most every REPEAT minutes, and it has settled
    # when no episode started for SETTLE minutes after the last one resolved.
    "FLAP_WINDOW_MINUTES": env_int("DIAGNOSIS_FLAP_WINDOW_MINUTES", 30),
    "FLAP_EPISODES": env_int("DIAGNOSIS_FLAP_EPISODES", 3),
    "FLAP_REPEAT_MINUTES": env_float("DIAGNOSIS_FLAP_REPEAT_MINUTES", 60.0),
    "FLAP_SETTLE_MINUTES": env_float("DIAGNOSIS_FLAP_SETTLE_MINUTES", 10.0),
    # Webhook bounds: notifications per token and period (N/s|min|hour|day); the largest body accepted.
    "ALERTMANAGER_RATE": os.environ.get("DIAGNOSIS_ALERTMANAGER_RATE", "120/min"),
    "ALERTMANAGER_MAX_BYTES": env_int("DIAGNOSIS_ALERTMANAGER_MAX_BYTES", 1024 * 1024),
    # Where finished reports and resolved episodes are POSTed (contracts §13); unset = nowhere.
    "NOTIFY_URL": os.environ.get("DIAGNOSIS_NOTIFY_URL") or None,
    "NOTIFY_TOKEN": os.environ.get("DIAGNOSIS_NOTIFY_TOKEN") or None,
    "NOTIFY_TIMEOUT": env_float("DIAGNOSIS_NOTIFY_TIMEOUT", 10.0),
    # Seconds before each retry of a failed delivery; after the last one the delivery is given up.
    "NOTIFY_RETRY_DELAYS": [
        int(delay) for delay in os.environ.get("DIAGNOSIS_NOTIFY_RETRY_DELAYS", "20,60,300,1800").split(",")
    ],
    # The site's address as receivers reach it, for the links in notifications ("" = relative links).
    "PUBLIC_URL": os.environ.get("DIAGNOSIS_PUBLIC_URL", "").rstrip("/"),
    # Members of this group see the reports of Alertmanager's notifications (staff see them anyway).
    "ONCALL_GROUP": os.environ.get("DIAGNOSIS_ONCALL_GROUP") or None,
    # Sessions RUNNING longer than this are considered orphaned by a dead worker and end FAILED.
    "STALE_AFTER_SECONDS": env_int("DIAGNOSIS_STALE_AFTER_SECONDS", 900),
    # A running session's worker touches it this often; silent for the second time, its worker is gone
    # (killed, out of memory, host lost) and the reaper (every minute) ends it FAILED.
    "HEARTBEAT_SECONDS": env_float("DIAGNOSIS_HEARTBEAT_SECONDS", 10.0),
    "WORKER_LOST_AFTER_SECONDS": env_int("DIAGNOSIS_WORKER_LOST_AFTER_SECONDS", 60),
    # A backend class named for a tool (dotted path) replaces its configured source: for evaluation
    # fixtures and a team's own Python backend. Unset = the source chosen below, else the demo world.
    "TOOL_BACKENDS": {
        tool: os.environ[variable]
        for tool, variable in (
            ("query_metrics", "DIAGNOSIS_METRICS_BACKEND"),
            ("query_logs", "DIAGNOSIS_LOGS_BACKEND"),
            ("lookup_knowledge", "DIAGNOSIS_KNOWLEDGE_BACKEND"),
        )
        if os.environ.get(variable)
    },
    # Knowledge other apps keep, added to the demo world's runbooks (dotted class paths, comma-separated).
    "KNOWLEDGE_SOURCES": [
        path.strip()
        for path in os.environ.get(
            "DIAGNOSIS_KNOWLEDGE_SOURCES", "caselib.knowledge.CaseLibraryKnowledge"
        ).split(",")
        if path.strip()
    ],
    # Evidence sources (contracts §11); unset = the demo world answers that tool.
    "PROMETHEUS_URL": os.environ.get("DIAGNOSIS_PROMETHEUS_URL") or None,
    "ALERTMANAGER_URL": os.environ.get("DIAGNOSIS_ALERTMANAGER_URL") or None,
    "LOKI_URL": os.environ.get("DIAGNOSIS_LOKI_URL") or None,
    "LOKI_TENANT": os.environ.get("DIAGNOSIS_LOKI_TENANT") or None,
    "RUNBOOKS_DIR": os.environ.get("DIAGNOSIS_RUNBOOKS_DIR") or None,
    "SOURCE_HEADERS": env_json_object("DIAGNOSIS_SOURCE_HEADERS"),
    "LOGS_WINDOW_MINUTES": env_int("DIAGNOSIS_LOGS_WINDOW_MINUTES", 60),
    "SOURCE_TIMEOUT": env_float("DIAGNOSIS_SOURCE_TIMEOUT", 10.0),
    # Pins "now" for the demo world (ISO 8601); unset = the real clock.
    "DEMO_NOW": os.environ.get("DIAGNOSIS_DEMO_NOW") or None,
    # The world vocabulary (contracts §12); unset = the demo world's (tools/data/demo_world/vocabulary.json).
    "VOCABULARY_FILE": os.environ.get("DIAGNOSIS_VOCABULARY_FILE") or None,
}
