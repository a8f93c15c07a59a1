"""The LLM engine (contracts §9): each stage is a non-streaming `chat.completions` call through the
official openai SDK against any OpenAI-compatible endpoint (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).

- Every call sends `response_format` = strict json_schema named after the stage schema (§5).
- The executor is a tool-calling loop bounded by the toolbox's remaining calls.
- An invalid reply is re-asked once with the validation error; a second failure is recorded as
  `parse_failed` and replaced by a safe fallback that can never PASS on unverifiable content.
- Timeouts and 5xx are retried by the SDK (`max_retries`); what still fails raises
  `LLMUnavailableError`, which ends the session FAILED with the cause.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time
from typing import Any, TypeVar

from django.conf import settings
from openai import APIError, OpenAI, OpenAIError
from openai.lib._pydantic import to_strict_json_schema
from openai.types.chat import ChatCompletionMessage
from pydantic import BaseModel, ValidationError

from diagnosis.engines.llm.prompts import RenderedPrompt, prompt_render
from diagnosis.engines.rules.planner import plan_by_rules
from diagnosis.pipeline.contracts import (
    ClaimCheck,
    ComposerInput,
    ComposerOutput,
    ExecutorInput,
    ExecutorOutput,
    FactCheck,
    PlannerInput,
    PlannerOutput,
    PlanStep,
    VerifierInput,
    VerifierOutput,
)
from diagnosis.pipeline.interfaces import ParseStatus, StageCall, Toolbox, Usage

OutputT = TypeVar("OutputT", bound=BaseModel)

REPAIR_INSTRUCTION = (
    "上一条回复不是有效的 {schema} JSON：{error}\n"
    "请修正后重新回答：只输出一个符合 {schema} 模式的 JSON 对象，不要输出代码块或其他文字。"
)
TOOLS_EXHAUSTED_INSTRUCTION = (
    "本轮工具调用次数已用完，不能再调用工具。请只基于已获得的工具消息，直接输出 ExecutorOutput JSON。"
)
FALLBACK_PLAN_STEPS = (
    PlanStep(tool="query_metrics", purpose="确认相关告警是否处于 firing 状态"),
    PlanStep(tool="query_logs", purpose="检索与问题相关的日志记录"),
    PlanStep(tool="lookup_knowledge", purpose="查找处理手册作为排查参考（非当前事实）"),
)
VERIFIER_FALLBACK_DETAIL = "校验模型的输出无法解析，按未获证据支持处理"
ERROR_DETAIL_LIMIT = 800


class LLMUnavailableError(RuntimeError):
    """The model endpoint failed even after the SDK's retries (or cannot be configured)."""


class LLMEngine:
    name = "llm"

    def __init__(self) -> None:
        config = settings.DIAGNOSIS
        self.model = config["LLM_MODEL"]
        self.timeout = config["LLM_TIMEOUT"]
        self.max_retries = config["LLM_MAX_RETRIES"]

    def plan(self, stage_input: PlannerInput) -> StageCall[PlannerOutput]:
        exchange = _Exchange(
            "planner",
            prompt_render(
                "planner",
                query=stage_input.query,
                round=stage_input.round,
                retry_context=stage_input.retry_context,
            ),
        )
        output, status = self._structured(exchange, PlannerOutput)
        if output is None:
            # Still a usable plan: the question's scope read by code, every evidence tool.
            output = plan_by_rules(stage_input.query, focus=stage_input.focus).model_copy(
                update={"steps": list(FALLBACK_PLAN_STEPS)}
            )
            thought = "规划输出无法解析，改用按问题生成的最小计划"
        else:
            scope = "窄范围" if output.narrow_scope else "常规"
            thought = f"{scope}问题；{output.goal}；工具：{'、'.join(step.tool for step in output.steps)}"
        return exchange.stage_call(output, status, thought)

    def execute(self, stage_input: ExecutorInput, toolbox: Toolbox) -> StageCall[ExecutorOutput]:
        exchange = _Exchange(
            "executor",
            prompt_render(
                "executor",
                query=stage_input.query,
                round=stage_input.round,
                plan=stage_input.plan.model_dump(),
                retry_context=stage_input.retry_context,
                prior_tool_messages=stage_input.prior_tool_messages,
                max_tool_calls=toolbox.remaining_calls,
            ),
        )
        tools = toolbox.tool_definitions()
        # Each tool turn uses at least one call, so this also bounds a model that keeps calling
        # tools the toolbox refuses (e.g. with unparseable arguments).
        tool_turns_left = toolbox.remaining_calls
        while True:
            tools_open = tool_turns_left > 0 and toolbox.remaining_calls > 0
            message = self._complete(
                exchange, ExecutorOutput, tools=tools, tool_choice="auto" if tools_open else "none"
            )
            if not (tools_open and message is not None and message.tool_calls):
                break
            tool_turns_left -= 1
            self._tool_calls_run(exchange, message, toolbox)
            if tool_turns_left <= 0 or toolbox.remaining_calls <= 0:
                exchange.messages.append({"role": "user", "content": TOOLS_EXHAUSTED_INSTRUCTION})

        output, status = self._accepted(exchange, ExecutorOutput, message, tools=tools, tool_choice="none")
        if output is None:
            # Natural-language fallback (seed 002): no claims, so nothing here can ever PASS.
            raw_text = next((reply for reply in reversed(exchange.replies) if reply.strip()), "")
            output = ExecutorOutput(
                claims=[],
                hypotheses=[],
                missing_info=[],
                recommended_actions=[],
                diagnosis_summary="",
                user_facing_answer=raw_text,
            )
        thought = f"调用工具 {len(exchange.tool_calls)} 次，提出 {len(output.claims)} 条断言"
        if output.diagnosis_summary:
            thought += f"；{output.diagnosis_summary}"
        return exchange.stage_call(output, status, thought)

    def verify(self, stage_input: VerifierInput) -> StageCall[VerifierOutput]:
        exchange = _Exchange("verifier", prompt_render("verifier", **dataclasses.asdict(stage_input)))
        output, status = self._structured(exchange, VerifierOutput)
        if output is None:
            output = _verifier_fallback(stage_input)
        return exchange.stage_call(output, status, output.rationale[:200])

    def compose(self, stage_input: ComposerInput) -> StageCall[ComposerOutput]:
        exchange = _Exchange("composer", prompt_render("composer", **dataclasses.asdict(stage_input)))
        output, status = self._structured(exchange, ComposerOutput)
        if output is None:
            # Empty: the orchestrator then builds the answer from the material by code.
            return exchange.stage_call(
                ComposerOutput(answer=""), status, "撰写输出无法解析，交由代码生成答案"
            )
        return exchange.stage_call(output, status, "按允许材料撰写")

    def _structured(self, exchange: _Exchange, schema: type[OutputT]) -> tuple[OutputT | None, ParseStatus]:
        return self._accepted(exchange, schema, self._complete(exchange, schema))

    def _accepted(
        self,
        exchange: _Exchange,
        schema: type[OutputT],
        message: ChatCompletionMessage | None,
        **request: Any,
    ) -> tuple[OutputT | None, ParseStatus]:
        """Validate the reply against the stage schema; re-ask once with the error if it is invalid."""
        output, error = _validated(schema, message)
        if output is not None:
            return output, ParseStatus("valid", "")
        exchange.messages += [
            {"role": "assistant", "content": (message.content if message else None) or ""},
            {"role": "user", "content": REPAIR_INSTRUCTION.format(schema=schema.__name__, error=error)},
        ]
        output, second_error = _validated(schema, self._complete(exchange, schema, **request))
        if output is not None:
            return output, ParseStatus("repaired", f"首次回复无效：{error}")
        return None, ParseStatus(
            "parse_failed", f"两次回复均无效：{error}；{second_error}"[:ERROR_DETAIL_LIMIT]
        )

    def _complete(
        self,
        exchange: _Exchange,
        schema: type[BaseModel],
        *,
        tools: list[dict] | None = None,
        tool_choice: str | None = None,
    ) -> ChatCompletionMessage | None:
        extra: dict[str, Any] = {"tools": tools, "tool_choice": tool_choice} if tools else {}
        client = self._client()
        started = time.perf_counter()
        try:
            response = client.chat.completions.create(
                model=self.model,
                messages=exchange.messages,
                response_format=response_format_for(schema),
                **extra,
            )
        except APIError as exc:
            raise LLMUnavailableError(
                f"模型服务调用失败（{exchange.stage}）：{type(exc).__name__}: {exc}"
            ) from exc
        finally:
            exchange.usage.wait_ms += (time.perf_counter() - started) * 1000
        usage = response.usage
        exchange.usage.add(
            Usage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                llm_calls=1,
            )
        )
        message = response.choices[0].message if response.choices else None
        exchange.replies.append((message.content if message else None) or "")
        return message

    def _tool_calls_run(self, exchange: _Exchange, message: ChatCompletionMessage, toolbox: Toolbox) -> None:
        exchange.messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [
                    call.model_dump(include={"id", "type", "function"}) for call in message.tool_calls
                ],
            }
        )
        for call in message.tool_calls:
            name = call.function.name
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError as exc:
                arguments, error = None, f"参数不是合法的 JSON：{exc}"
            else:
                error = None if isinstance(arguments, dict) else "参数必须是 JSON 对象"
            if error:
                # Not run and not recorded: there are no arguments to record; the model is told why.
                result = {"tool_name": name, "success": False, "error": error}
            else:
                result = toolbox.call(name, arguments)
            exchange.tool_calls.append(
                {
                    "name": name,
                    "arguments": call.function.arguments,
                    "invocation_id": result.get("invocation_id"),
                }
            )
            exchange.messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result, ensure_ascii=False)}
            )

    def _client(self) -> OpenAI:
        try:
            return _openai_client(
                base_url=os.environ.get("OPENAI_BASE_URL"),
                api_key=os.environ.get("OPENAI_API_KEY"),
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
        except OpenAIError as exc:
            raise LLMUnavailableError(f"无法创建模型客户端：{exc}") from exc


class _Exchange:
    """One stage's conversation with the model: what was sent, what came back, what it cost."""

    def __init__(self, stage: str, prompt: RenderedPrompt) -> None:
        self.stage = stage
        self.prompt_version = prompt.version
        self.messages: list[dict] = [{"role": "user", "content": prompt.text}]
        self.replies: list[str] = []
        self.tool_calls: list[dict] = []
        self.usage = Usage()

    def stage_call(self, output: OutputT, parse_status: ParseStatus, thought: str) -> StageCall[OutputT]:
        model_output: dict[str, Any] = {"replies": self.replies}
        if self.tool_calls:
            model_output["tool_calls"] = self.tool_calls
        if parse_status.status == "parse_failed":
            thought = f"{thought}（{parse_status.detail}）"
        return StageCall(
            output=output,
            thought=thought,
            model_output=model_output,
            prompt_version=self.prompt_version,
            usage=self.usage,
            parse_status=parse_status,
        )


@functools.lru_cache(maxsize=4)
def _openai_client(*, base_url: str | None, api_key: str | None, timeout: float, max_retries: int) -> OpenAI:
    # One client (and connection pool) per endpoint: building one costs tens of milliseconds.
    return OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)


@functools.cache
def response_format_for(schema: type[BaseModel]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": strict_json_schema(schema), "strict": True},
    }


def strict_json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The schema in OpenAI strict form: every property required, no extra properties, and only
    keywords strict mode accepts (no `default`; a single-value `const` becomes an `enum`)."""
    return _strict_keywords(to_strict_json_schema(schema))


def _strict_keywords(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict_keywords(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if key == "default":
            continue
        if key == "const":
            cleaned["enum"] = [value]
        elif key in ("properties", "$defs"):
            # Keys here are property / definition names, not keywords.
            cleaned[key] = {name: _strict_keywords(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _strict_keywords(value)
    return cleaned


def _validated(schema: type[OutputT], message: ChatCompletionMessage | None) -> tuple[OutputT | None, str]:
    if message is None:
        return None, "响应中没有 choices"
    if message.tool_calls:
        return None, "此时不能再调用工具，应直接输出最终 JSON"
    if message.refusal:
        return None, f"模型拒绝回答：{message.refusal}"
    if not (message.content or "").strip():
        return None, "回复内容为空"
    try:
        return schema.model_validate_json(message.content), ""
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '$'}: {error['msg']}"
            for error in exc.errors()[:8]
        )
        return None, problems[:ERROR_DETAIL_LIMIT]


def _verifier_fallback(stage_input: VerifierInput) -> VerifierOutput:
    """Every claim unsupported: an unreadable verifier can only lower the verdict, never raise it."""
    claims = stage_input.executor_structured_output.get("claims", [])
    return VerifierOutput(
        claim_checks=[
            ClaimCheck(
                claim_id=claim["claim_id"],
                verification="unsupported",
                detail=VERIFIER_FALLBACK_DETAIL,
                evidence_refs=[],
            )
            for claim in claims
        ],
        facts_checked=[
            FactCheck(
                fact=claim["claim_text"],
                is_critical=True,
                verification="no_evidence",
                detail=VERIFIER_FALLBACK_DETAIL,
                evidence_refs=[],
            )
            for claim in claims
        ],
        rationale=VERIFIER_FALLBACK_DETAIL,
    )
