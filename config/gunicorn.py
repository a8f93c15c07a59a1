"""gunicorn's settings for `manage.py serve`. gunicorn's own `WEB_CONCURRENCY` (processes) and
`GUNICORN_CMD_ARGS` (any option, e.g. `--bind=0.0.0.0:8000 --threads=16 --timeout=120`) win over these,
and `serve`'s options over both."""

import os

wsgi_app = "config.wsgi:application"
workers = int(os.environ.get("WEB_CONCURRENCY", 2))
threads = 8
# A request is short: a session runs in the worker, the page only starts it and polls.
timeout = 60
accesslog = "-"
