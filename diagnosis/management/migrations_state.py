"""Commands that write sessions stop with a clear message on a database that was never migrated."""

from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor


def require_migrated_database() -> None:
    """Raise `CommandError` naming the command to run when any migration is unapplied."""
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        raise CommandError(
            f"数据库尚未迁移（{len(pending)} 个迁移未应用）：先运行 `manage.py migrate`，再运行本命令。"
        )
