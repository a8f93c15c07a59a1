"""The settings of a `manage.py mcp` subprocess in tests (`DJANGO_SETTINGS_MODULE`): the product's, with
the `DIAGNOSIS` keys the test hands over as JSON in `TEST_DIAGNOSIS_OVERRIDES` (a world, a pinned
clock), as `override_settings` does in the test's own process."""

import json
import os

from config.settings import *  # noqa: F403
from config.settings import DIAGNOSIS

DIAGNOSIS = DIAGNOSIS | json.loads(os.environ.get("TEST_DIAGNOSIS_OVERRIDES", "{}"))
