"""`manage.py serve`: the web server for production: static files collected, then
gunicorn serving `config.wsgi` in this process's place (it gets the signals: SIGTERM stops gracefully,
SIGHUP reloads). Run the worker beside it with `manage.py qcluster`."""

import os
import sys

from django.core.management import call_command
from django.core.management.base import BaseCommand

CONFIG_MODULE = "config.gunicorn"


class Command(BaseCommand):
    help = "生产方式启动 Web 服务：收集静态文件后以 gunicorn 运行（后台工作进程另用 manage.py qcluster）。"

    def add_arguments(self, parser):
        # Unset, gunicorn's own defaults apply: `PORT` / 127.0.0.1:8000, `WEB_CONCURRENCY`, `GUNICORN_CMD_ARGS`.
        parser.add_argument("--bind", help="监听地址 HOST:PORT（默认 127.0.0.1:8000）")
        parser.add_argument("--workers", type=int, help="gunicorn 进程数（默认 WEB_CONCURRENCY 或 2）")
        parser.add_argument("--threads", type=int, help="每个进程的线程数（默认 8）")

    def handle(self, *args, bind: str | None, workers: int | None, threads: int | None, **options):
        call_command("collectstatic", interactive=False, verbosity=0)
        given = {"bind": bind, "workers": workers, "threads": threads}
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            f"--config=python:{CONFIG_MODULE}",
            *(f"--{name}={value}" for name, value in given.items() if value is not None),
        ]
        os.execv(sys.executable, command)
