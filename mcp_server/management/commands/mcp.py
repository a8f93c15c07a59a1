"""`manage.py mcp --user USERNAME` (or `--token TOKEN`): the MCP server on stdin/stdout, for an MCP
client that starts it as a subprocess (Claude Desktop, an editor). Every call is recorded under that
user and sees what that user may see. stdout carries the protocol only; logs go to stderr."""

import anyio
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from mcp_server.results import site_url_default
from mcp_server.server import Caller, stdio_serve

NO_CALLER = (
    "需要 --user USERNAME 或 --token TOKEN：MCP 调用以该用户的身份记录会话，并只能读取该用户可见的会话"
)


def _user(*, username: str | None, token: str | None) -> AbstractBaseUser:
    if token:
        # The API's own check of a token: unknown or its user inactive is refused alike.
        try:
            user, _token = TokenAuthentication().authenticate_credentials(token)
        except AuthenticationFailed as error:
            raise CommandError(f"--token：{error.detail}") from error
        return user
    if not username:
        raise CommandError(NO_CALLER)
    try:
        user = get_user_model()._default_manager.get_by_natural_key(username)
    except get_user_model().DoesNotExist as error:
        raise CommandError(f"--user {username}：没有这个用户") from error
    if not user.is_active:
        raise CommandError(f"--user {username}：该用户已停用")
    return user


class Command(BaseCommand):
    help = "在标准输入输出上运行 MCP 服务（供 MCP 客户端以子进程启动）；每次调用以 --user 或 --token 指定的用户身份记录。"

    def add_arguments(self, parser):
        caller = parser.add_mutually_exclusive_group()
        caller.add_argument("--user", help="以该用户名调用")
        caller.add_argument("--token", help="以该 API 令牌（manage.py drf_create_token 用户名）的用户调用")

    def handle(self, *args, user: str | None = None, token: str | None = None, **options):
        caller = Caller(user=_user(username=user, token=token), site_url=site_url_default())
        anyio.run(lambda: stdio_serve(caller=caller))
