"""The one error the LLM engine raises: the endpoint failed even after the SDK's retries.

Its message is what users see: stable, in Chinese, with an error id, and without the server's
text (which may carry paths or stack traces). That text is `staff_detail`: logged with the id and
recorded on the failed step for staff (admin, trace).
"""

from __future__ import annotations

import logging
import secrets

from diagnosis.pipeline.interfaces import EngineUnavailableError

logger = logging.getLogger(__name__)

STAGE_LABELS = {"planner": "规划", "executor": "取证", "verifier": "校验", "composer": "撰写"}
USER_MESSAGE = "模型服务暂时不可用（{stage}阶段，错误编号 {error_id}）"


class LLMUnavailableError(EngineUnavailableError):
    def __init__(self, *, stage: str, detail: str) -> None:
        self.stage = stage
        self.error_id = f"LLM-{secrets.token_hex(4)}"
        self.staff_detail = detail
        logger.warning("model endpoint failed in %s [%s]: %s", stage, self.error_id, detail)
        super().__init__(USER_MESSAGE.format(stage=STAGE_LABELS.get(stage, stage), error_id=self.error_id))
