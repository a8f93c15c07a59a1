"""Logging filters named in `LOGGING`."""

import logging
from http import HTTPStatus


class QuietForbidden(logging.Filter):
    """A 403 is an expected answer (a user without the permission), not an error: keep its one line
    ("Forbidden (Permission denied): /admin/…") and drop the PermissionDenied traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == HTTPStatus.FORBIDDEN:
            record.exc_info = None
            record.exc_text = None
        return True
