"""`manage.py serve`: the web server for production (contracts §15): static files collected, then
gunicorn serving `config.wsgi` in this process's place (it gets the signals: SIGTERM stops gracefully,
SIGHUP reloads). Run the worker beside it with `manage.py qcluster`."""

import os
import sys

from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "生产方式启动 Web 服务：收集静态文件后以 gunicorn 运行（后台工作进程另用 manage.py qcluster）。"

    def add_arguments(self, parser):
        host = os.environ.get("DIAGNOSIS_HOST", "127.0.0.1")
        port = os.environ.get("DIAGNOSIS_PORT", "8000")
        parser.add_argument(
            "--bind", default=f"{host}:{port}", help="监听地址（默认 DIAGNOSIS_HOST:DIAGNOSIS_PORT）"
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=int(os.environ.get("DIAGNOSIS_WEB_WORKERS", 2)),
            help="gunicorn 进程数（DIAGNOSIS_WEB_WORKERS，默认 2）",
        )
        parser.add_argument(
            "--threads",
            type=int,
            default=int(os.environ.get("DIAGNOSIS_WEB_THREADS", 8)),
            help="每个进程的线程数（DIAGNOSIS_WEB_THREADS，默认 8）",
        )
        parser.add_argument(
            "--timeout",
            type=int,
            default=int(os.environ.get("DIAGNOSIS_WEB_TIMEOUT", 60)),
            help="请求超时秒数（DIAGNOSIS_WEB_TIMEOUT，默认 60）",
        )

    def handle(self, *args, bind: str, workers: int, threads: int, timeout: int, **options):
        call_command("collectstatic", interactive=False, verbosity=0)
        self.stdout.write(f"gunicorn 监听 {bind}（{workers} 进程 × {threads} 线程）", ending="\n")
        self.stdout.flush()
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            f"--bind={bind}",
            f"--workers={workers}",
            f"--threads={threads}",
            f"--timeout={timeout}",
            "--access-logfile=-",
        ]
        os.execv(sys.executable, command)
