"""`manage.py quickstart`: the product on embedded defaults, in one command (issue 4 item 2).

Prepares the database, static files, a demo engineer and a staff reviewer, then runs the
django-q2 worker and the web server as child processes until Ctrl-C (or SIGTERM) stops both.
"""

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from diagnosis.services.accounts import DemoAccount, engineer_account_ensure, reviewer_account_ensure
from diagnosis.services.sessions_maintenance import stale_sessions_fail, stale_sessions_schedule_ensure
from tools.sources import DEMO, DEMO_LABEL
from tools.sources_report import sources_in_use

# How long a child may take to finish its current work after SIGTERM before it is killed.
STOP_GRACE_SECONDS = 15
POLL_SECONDS = 0.5


def _demo_account(
    *, ensure: Callable[..., DemoAccount], username: str, password: str | None, password_option: str
) -> str:
    """Create or update the account; its login line (a given password is never printed: the
    terminal's scroll-back and CI logs are not the place for it)."""
    try:
        account = ensure(username=username, password=password or None)
    except ValidationError as error:
        raise CommandError(f"{password_option} 不符合密码要求：{'；'.join(error.messages)}") from error
    username = account.user.get_username()
    if account.password is None:
        return f"{username}（已存在，密码未改动；加 {password_option} 重新运行即重置为该密码）"
    if account.generated:
        return f"{username} / {account.password}（随机生成，只显示这一次）"
    return f"{username}（密码取自 {password_option}）"


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = "一条命令启动产品：迁移数据库、准备演示账号，并启动后台工作进程和 Web 服务。"

    def add_arguments(self, parser):
        parser.add_argument(
            "--setup-only",
            action="store_true",
            help="只准备数据库、静态文件、账号和定时任务并打印登录信息，不启动服务。",
        )
        parser.add_argument("--bind", default="127.0.0.1:8000", help="Web 服务监听地址 HOST:PORT")
        parser.add_argument("--engineer", default="engineer", help="工程师账号名")
        parser.add_argument("--reviewer", default="reviewer", help="审核员账号名")
        unchanged = "不给则新账号随机生成，已有账号不改"
        parser.add_argument("--engineer-password", help=f"工程师账号密码（{unchanged}）")
        parser.add_argument("--reviewer-password", help=f"审核员账号密码（{unchanged}）")

    def handle(
        self,
        *args,
        bind: str = "127.0.0.1:8000",
        engineer: str = "engineer",
        engineer_password: str | None = None,
        reviewer: str = "reviewer",
        reviewer_password: str | None = None,
        setup_only: bool = False,
        **options,
    ):
        self.setup(
            url=f"http://{bind}/",
            engineer=(engineer, engineer_password),
            reviewer=(reviewer, reviewer_password),
        )
        if not setup_only:
            self.serve(address=bind)

    def setup(self, *, url: str, engineer: tuple[str, str | None], reviewer: tuple[str, str | None]) -> None:
        """Database, static files, the two accounts (name, password or None) and the reaper."""
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        engineer_line = _demo_account(
            ensure=engineer_account_ensure,
            username=engineer[0],
            password=engineer[1],
            password_option="--engineer-password",
        )
        reviewer_line = _demo_account(
            ensure=reviewer_account_ensure,
            username=reviewer[0],
            password=reviewer[1],
            password_option="--reviewer-password",
        )
        stale_sessions_schedule_ensure()
        reaped = stale_sessions_fail(older_than_seconds=settings.DIAGNOSIS["STALE_AFTER_SECONDS"])

        self.stdout.write(self.style.SUCCESS("诊断助手已就绪"))
        self.stdout.write(f"  对话页面:   {url}")
        self.stdout.write(f"  审核后台:   {url}admin/")
        self.stdout.write(f"  工程师账号: {engineer_line}")
        self.stdout.write(f"  审核员账号: {reviewer_line}（staff，reviewers 组）")
        self.stdout.write(f"  诊断引擎:   {settings.DIAGNOSIS['ENGINE']}")
        self.stdout.write("  证据来源:   （manage.py sources 检查是否可达）")
        for tool, source, location in sources_in_use():
            label = DEMO_LABEL if source == DEMO else source or "未配置"
            self.stdout.write(f"    {tool:<18} {label} {location}")
        if reaped:
            self.stdout.write(self.style.WARNING(f"  已将 {reaped} 个长时间未结束的会话标记为失败"))

    def serve(self, *, address: str) -> None:
        manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
        runserver = [*manage, "runserver", address]
        if not settings.DEBUG:
            runserver.append("--noreload")
        commands = {"后台工作进程 (qcluster)": [*manage, "qcluster"], "Web 服务 (runserver)": runserver}
        # Both set explicitly: a job started in the background by a shell inherits SIGINT ignored, and
        # Python then leaves it ignored.
        signal.signal(signal.SIGINT, _raise_keyboard_interrupt)
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        # Own process groups: this command alone decides when and how the children stop.
        children = {
            name: subprocess.Popen(command, start_new_session=True) for name, command in commands.items()
        }
        self.stdout.write("按 Ctrl-C 停止。")
        try:
            while True:
                exited = {
                    name: child.returncode for name, child in children.items() if child.poll() is not None
                }
                if exited:
                    raise CommandError(
                        "；".join(f"{name} 意外退出（退出码 {code}）" for name, code in exited.items())
                    )
                time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            self.stdout.write("正在停止…")
        finally:
            self._stop(list(children.values()))

    def _stop(self, children: list[subprocess.Popen]) -> None:
        for child in children:
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for child in children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
            # Whatever is left in the child's group (worker processes, the reloader's server) goes too.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
