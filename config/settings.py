"""Settings read from the environment with safe defaults (contracts §2).

Development defaults: SQLite file in the project, rules engine, DEBUG only when asked.
Outside development (DJANGO_DEBUG unset and not running tests) a real DJANGO_SECRET_KEY is required.
"""

import os
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


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
    "tools",
    "diagnosis",
    "caselib",
    "feedback",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=env_int("DJANGO_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Background worker and web server share the file: wait for locks instead of failing at once.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "zh-hans"
LANGUAGES = [("zh-hans", "简体中文"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = os.environ.get("DJANGO_TIME_ZONE", "Asia/Shanghai")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Tests serve static files straight from the apps, without a collectstatic step.
WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = TESTING
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chat"
LOGOUT_REDIRECT_URL = "login"

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
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
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
Q_CLUSTER = {
    "name": "diagnosis",
    "orm": "default",
    "workers": env_int("DIAGNOSIS_Q_WORKERS", 2),
    "timeout": env_int("DIAGNOSIS_Q_TIMEOUT", 600),
    "retry": env_int("DIAGNOSIS_Q_TIMEOUT", 600) + 60,
    "max_attempts": 1,
    "catch_up": False,
    "sync": env_bool("DIAGNOSIS_Q_SYNC"),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    # The openai SDK's HTTP client logs every request at INFO (it ships as `httpx2` in openai 3.x).
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
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
    # Tool calls of one assistant turn run at the same time, at most this many.
    "LLM_TOOL_CONCURRENCY": env_int("DIAGNOSIS_LLM_TOOL_CONCURRENCY", 4),
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
    # Sessions RUNNING longer than this are considered orphaned by a dead worker and end FAILED.
    "STALE_AFTER_SECONDS": env_int("DIAGNOSIS_STALE_AFTER_SECONDS", 900),
    # Tool backends by tool name: dotted path of the backend class.
    "TOOL_BACKENDS": {
        "query_metrics": os.environ.get("DIAGNOSIS_METRICS_BACKEND", "tools.backends.demo.DemoWorldBackend"),
        "query_logs": os.environ.get("DIAGNOSIS_LOGS_BACKEND", "tools.backends.demo.DemoWorldBackend"),
        "lookup_knowledge": os.environ.get(
            "DIAGNOSIS_KNOWLEDGE_BACKEND", "tools.backends.demo.DemoWorldBackend"
        ),
    },
    # Pins "now" for the demo world (ISO 8601); unset = the real clock.
    "DEMO_NOW": os.environ.get("DIAGNOSIS_DEMO_NOW") or None,
}
