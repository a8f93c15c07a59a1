"""The load stack's settings (`DJANGO_SETTINGS_MODULE` of its subprocesses): production's, with fault
timings short enough to wait for (production: a 10 s beat, lost after 60 s), and the `DIAGNOSIS` keys a
test hands over as JSON in `TEST_DIAGNOSIS_OVERRIDES` (a short MCP wait)."""

import json
import os

from config.settings import *  # noqa: F403
from config.settings import DIAGNOSIS

HEARTBEAT_SECONDS, LOST_AFTER_SECONDS = 0.5, 2

DIAGNOSIS = (
    DIAGNOSIS
    | {"HEARTBEAT_SECONDS": HEARTBEAT_SECONDS, "WORKER_LOST_AFTER_SECONDS": LOST_AFTER_SECONDS}
    | json.loads(os.environ.get("TEST_DIAGNOSIS_OVERRIDES", "{}"))
)
