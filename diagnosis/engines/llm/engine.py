"""The LLM engine: each stage is a non-streaming `chat.completions` call through
the official openai SDK against any OpenAI-compatible endpoint (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).

- The stage's rules are the `system` message (the same for every question: a stable prefix for a
  server's prompt cache), its input the `user` message; every request sends `temperature`, a
  per-stage token cap and `stop` sequences (unless the endpoint refused them once).
- How structured output is asked for is the profile of `DIAGNOSIS_LLM_STRUCTURED_OUTPUT`
  (`structured.py`), how tool calls travel that of `DIAGNOSIS_LLM_TOOL_CALLS` (`tool_calls.py`);
  nothing else here depends on either.
- The executor's tool turns carry tools and no `response_format`; the tool calls of one turn run
  concurrently (bounded), their results appended in call order. When the model stops calling
  tools, a reply that already is a valid `ExecutorOutput` is taken; otherwise the final output is
  asked for in its own turn (`tool_choice: "none"`, the structured-output mode's schema). The tool
  turns stop before the stage's prompt-token budget would be passed; tool outputs reach the model
  summarised by code (`context.py`), the evidence refs verbatim.
- The verifier is shown each claim with only its verified excerpts and code's findings about them,
  never the trace; a reply that copies its instructions, or leaves a claim out, is asked again once.
- An invalid reply is re-asked once with the validation error; a truncated one (`finish_reason:
  "length"`) is re-asked once without pasting it back. A second failure is `parse_failed` and a
  safe fallback that can never PASS on unverifiable content.
- Requests are trimmed to `DIAGNOSIS_LLM_CONTEXT_TOKENS` (`context.py`); stored replies are bounded
  (`replies.py`).
- Timeouts and 5xx are retried by the SDK (`max_retries`); each call's timeout is also bounded by
  what is left of the session's model-time budget, so a slow local server gives up before the
  worker's task timeout would kill it. What still fails raises `LLMUnavailableError`, and the
  session is answered by the rules engine instead.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time
from collections import Counter
from typing import Any, TypeVar

from django.conf import settings
from openai import APIError, BadRequestError, OpenAI, OpenAIError
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ConfigDict, ValidationError

from diagnosis import tracing
from diagnosis.engines.llm.cause import (
    CauseOutput,
    candidates_for_model,
    evidence_claims,
    executor_output_from,
    explains_candidates,
)
from diagnosis.engines.llm.context import (
    candidate_for_model,
    composer_material_for_model,
    estimated_tokens,
    prompt_budget,
    tool_message_for_model,
    without_bounded_outputs,
)
from diagnosis.engines.llm.errors import LLMUnavailableError
from diagnosis.engines.llm.prompts import RenderedPrompt, prompt_render, prompt_version
from diagnosis.engines.llm.replies import (
    REPLY_CHARS_LIMIT,
    ModelReply,
    bounded_replies,
    bounded_text,
    restated,
)
from diagnosis.engines.llm.structured import (
    StageSchema,
    for_model,
    json_text_of,
    structured_output_profile,
)
from diagnosis.engines.llm.tool_calls import ToolCall, tool_calling_profile
from diagnosis.engines.rules.executor import MOVED_SERIES
from diagnosis.engines.rules.planner import plan_by_rules
from diagnosis.engines.rules.verifier import verify_by_rules
from diagnosis.pipeline.asks.registry import KINDS
from diagnosis.pipeline.claims_under_check import CONSISTENT, agrees_with_code, code_findings_text
from diagnosis.pipeline.composer import answer_from_material
from diagnosis.pipeline.contracts import (
    ClaimCheck,
    ClaimUnderCheck,
    ClaimVerification,
    ComposerInput,
    ComposerOutput,
    ExecutorInput,
    ExecutorOutput,
    PlannerInput,
    PlannerOutput,
    PlanStep,
    VerifierInput,
    VerifierOutput,
)
from diagnosis.pipeline.interfaces import ParseStatus, StageCall, Toolbox, Usage, call_key
from tools.evidence.registry import ALERTS, KNOWLEDGE, LOGS

OutputT = TypeVar("OutputT", bound=BaseModel)


class ClaimJudgement(BaseModel):
    """The verifier model's judgement of one claim; its evidence refs are the claim's verified
    excerpts (code), so the model is not asked for them."""

    model_config = ConfigDict(extra="ignore")  # refs said anyway are not an error

    claim_id: str
    verification: ClaimVerification
    detail: str


class VerifierJudgement(BaseModel):
    """What the verifier model is asked for: a judgement per claim. Facts, verdict and score are
    computed by code from it, so the model is not asked to produce them."""

    model_config = ConfigDict(extra="ignore")  # a verdict, facts or rationale said anyway are not an error

    claim_checks: list[ClaimJudgement]


# Prompt budgets: a call and its one re-ask for the single-call stages; for the executor, two or three
# tool turns and the final one (a tool turn re-sends the whole conversation).
PLANNER = StageSchema("PlannerOutput", PlannerOutput, max_completion_tokens=512, prompt_tokens=1500)
EXECUTOR = StageSchema("ExecutorOutput", ExecutorOutput, max_completion_tokens=1536, prompt_tokens=8000)
VERIFIER = StageSchema("VerifierOutput", VerifierJudgement, max_completion_tokens=768, prompt_tokens=2000)
COMPOSER = StageSchema("ComposerOutput", ComposerOutput, max_completion_tokens=768, prompt_tokens=2000)
# The executor's cause path: one short reply over the numbered candidates, and its one re-ask.
CAUSE = StageSchema("CauseOutput", CauseOutput, max_completion_tokens=256, prompt_tokens=1200)
STAGE_SCHEMAS = {"planner": PLANNER, "executor": EXECUTOR, "verifier": VERIFIER, "composer": COMPOSER}
# A tool turn writes calls, not the answer: a small cap also stops a model that drifts into prose.
TOOL_TURN_TOKENS = 768
# An invalid reply is shown back to the model with its error only when it is this short.
REPAIR_ECHO_CHARS = 4000
# The executor's natural-language fallback keeps at most this much of the model's text.
FALLBACK_TEXT_CHARS = 2000

REPAIR_INSTRUCTION = (
    "上一条回复不是有效的 {schema} JSON：{error}\n"
    "请修正后重新回答：只输出一个符合 {schema} 模式的 JSON 对象，不要输出代码块或其他文字。"
)
TRUNCATED_INSTRUCTION = (
    "上一条回复超出长度上限被截断，未被采用。请更简短地重新回答：只输出一个符合 {schema} 模式的 JSON 对象，"
    "字段内容尽量精简，不要输出其他文字。"
)
LONG_REPLY_OMITTED = "（上一条回复过长，已省略）"
GATHER_INSTRUCTION = "请先按计划调用工具取证：这一条回复只写工具调用，不要输出最终结果。"
NOT_GATHERED_NOTICE = "还没有调用任何工具，没有可以引用的工具结果，这样的回复不能采用。"
FINAL_TURN_INSTRUCTION = "取证结束，不要再调用工具。请只基于以上工具结果，输出 ExecutorOutput JSON 对象。"
TOOLS_EXHAUSTED_INSTRUCTION = (
    "本轮工具调用次数已用完，不能再调用工具。请只基于已获得的工具结果，直接输出 ExecutorOutput JSON 对象。"
)
REPEATED_CALL_ERROR = (
    "与之前的一次调用工具和参数完全相同，未重复执行；请引用 invocation_id {invocation_id} 的结果"
)
ANSWERED_BY_CODE = "所问均已由代码按已做的调用写出结论（{count} 条），{why}：未请模型补充断言"
# Why the plan asks for nothing more: it holds no other search, or the question is narrow.
NOTHING_ELSE_PLANNED = "计划没有别的取证"
NARROW_NOT_WIDENED = "窄范围问题，不再按计划扩大取证"
PLANNED_BY_CODE = "所问均由代码的调查回答（根因候选）：计划由代码按所问生成，未请模型规划"
CAUSE_THOUGHT = "只请模型解释代码排出的 {count} 个根因候选（按序号引用，证据由代码附上）：{taken} 条解释"
CAUSE_FALLBACK = "解释输出无法解析：只陈述候选所据的证据"
VERIFIED_BY_CODE = "根因解释路径：断言由代码判定（解释最多是合理推断），未请模型校验"
COMPOSED_BY_CODE = "根因解释路径：模型的解释已作为推断写入材料，答案由代码按材料撰写，未请模型改写"
QUOTED_DETAIL = "断言即已核验的证据原文（代码引用），由代码判定为直接观察，未请模型校验"
BUDGET_SPENT = "会话的模型时间预算（{seconds:.0f} 秒）已用完"
FALLBACK_PLAN_STEPS = (
    PlanStep(tool=ALERTS.tool, purpose="确认相关告警是否处于 firing 状态"),
    PlanStep(tool=LOGS.tool, purpose="检索与问题相关的日志记录"),
    PlanStep(tool=KNOWLEDGE.tool, purpose="查找处理手册作为排查参考（非当前事实）"),
)
VERIFIER_FALLBACK_DETAIL = "校验模型的输出无法解析，按未获证据支持处理"
NO_EXCERPT_DETAIL = "没有通过引用核验的摘录，未请模型校验"
RESTATED_ERROR = (
    "{claim_id} 的 detail 照抄了说明中的文字（“{copied}”），请用自己的话写这条断言与它的摘录的关系"
)
COPIED_DETAIL = "模型的理由照抄了说明，判断与代码比对一致，理由由代码给出"
MISSING_CHECK_ERROR = "缺少 {claim_ids} 的判断，每条断言都要有一项"
ERROR_DETAIL_LIMIT = 800
# The shortest timeout worth starting a call with; below it the session's budget counts as spent.
MIN_CALL_TIMEOUT = 1.0
# Where a reply is over: a model writing tool results itself (prompted calls), or padding with blank
# lines up to its token cap (measured on a 1.5B model on llama.cpp's server). No stage output holds
# either: JSON strings escape their line breaks.
STOP_SEQUENCES = ("<tool_result>", "\n\n\n\n")
# Endpoints (base URLs) that answered a `stop` with 400: this process sends them none again.
_ENDPOINTS_REFUSING_STOP: set[str | None] = set()


class LLMEngine:
    name = "llm"

    def __init__(self) -> None:
        config = settings.DIAGNOSIS
        self.model = config["LLM_MODEL"]
        self.timeout = config["LLM_TIMEOUT"]
        self.max_retries = config["LLM_MAX_RETRIES"]
        self.temperature = config["LLM_TEMPERATURE"]
        self.context_tokens = config["LLM_CONTEXT_TOKENS"]
        self.token_cap_parameter = config["LLM_TOKEN_CAP_PARAMETER"]
        self.session_seconds = config["LLM_SESSION_SECONDS"]
        self.structured = structured_output_profile(config["LLM_STRUCTURED_OUTPUT"])
        self.tool_calling = tool_calling_profile(config["LLM_TOOL_CALLS"])
        # One engine per session (diagnosis.engines.engine_get): the budget covers all its stages.
        self.deadline = time.monotonic() + self.session_seconds
        # The last executor call took the cause path: the answer's prose is then code's.
        self.explained = False

    def plan(self, stage_input: PlannerInput) -> StageCall[PlannerOutput]:
        if _investigated_only(stage_input):
            # Code's investigation makes the calls and ranks the candidates; a model plan could only
            # add searches the cause path does not read, at the cost of a model call.
            return StageCall(
                output=_plan_by_code(stage_input),
                thought=PLANNED_BY_CODE,
                model_output={"replies": []},
                prompt_version=prompt_version("planner"),
            )
        exchange = self._exchange(
            "planner",
            PLANNER,
            {
                "query": stage_input.query,
                "round": stage_input.round,
                "retry_context": stage_input.retry_context,
            },
        )
        output, status = self._structured(exchange, PLANNER)
        if output is None:
            # Still a usable plan: the question's scope read by code, every evidence tool.
            output = _plan_by_code(stage_input, asks=False).model_copy(
                update={"steps": list(FALLBACK_PLAN_STEPS)}
            )
            thought = "规划输出无法解析，改用按问题生成的最小计划"
        else:
            scope = "窄范围" if output.narrow_scope else "常规"
            thought = f"{scope}问题；{output.goal}；工具：{'、'.join(step.tool for step in output.steps)}"
        return exchange.stage_call(output, status, thought)

    def execute(self, stage_input: ExecutorInput, toolbox: Toolbox) -> StageCall[ExecutorOutput]:
        self.explained = False
        if (why := _why_answered_by_code(stage_input)) is not None:
            # Nothing is left for the model to find: the asks' slots are the answer, judged as such,
            # with the evidence their candidates rest on quoted by code (as the rules engine does).
            return StageCall(
                output=_executor_output().model_copy(update={"claims": evidence_claims(stage_input)}),
                thought=ANSWERED_BY_CODE.format(
                    count=len(stage_input.conclusions) + bool(stage_input.candidates),
                    why=why,
                ),
                model_output={"replies": []},
                prompt_version=prompt_version("executor"),
            )
        if explains_candidates(stage_input):
            self.explained = True
            return self._explain(stage_input)
        tools = for_model(toolbox.tool_definitions())
        # The investigation's range results reach the model as its candidates, not one by one.
        prior_messages = [
            tool_message_for_model(r.model_message())
            for r in stage_input.prior_results
            if r.invocation_id not in stage_input.computed_from
        ]
        shown = {
            (message.get("invocation_id"), ref.get("raw_path"))
            for message in prior_messages
            for ref in message.get("evidence_refs") or []
        }
        exchange = self._exchange(
            "executor",
            EXECUTOR,
            {
                "query": stage_input.query,
                "round": stage_input.round,
                "plan": stage_input.plan.model_dump(),
                "retry_context": stage_input.retry_context,
                "prior_tool_messages": prior_messages,
                "conclusions": stage_input.conclusions,
                "open_asks": stage_input.open_asks,
                "candidates": [candidate_for_model(c, shown=shown) for c in stage_input.candidates],
                "max_tool_calls": toolbox.remaining_calls,
            },
            tools=tools,
        )
        # Each tool turn uses at least one call, so this also bounds a model that keeps calling
        # tools the toolbox refuses (e.g. with unparseable arguments).
        turns, max_turns = 0, toolbox.remaining_calls
        # Nothing to cite yet and a plan to follow: the first turn must call a tool (measured on a
        # 1.5B model: offered tools freely, it answered at once and cited made-up invocations).
        must_gather = bool(stage_input.plan.steps) and not stage_input.prior_results
        reminded = False
        call_format = self.tool_calling.call_format(_planned_tool(tools, stage_input.plan))
        if must_gather and call_format:
            # Calls written as text: nothing can force one (native turns send tool_choice
            # "required"), so the first turn asks for it, with the format.
            exchange.messages.append({"role": "user", "content": GATHER_INSTRUCTION + call_format})
        while turns < max_turns and toolbox.remaining_calls > 0:
            request = self.tool_calling.tool_turn_request(tools, required=must_gather and turns == 0)
            reply = self._complete(exchange, TOOL_TURN_TOKENS, request)
            calls = self.tool_calling.calls(reply) if reply is not None else []
            if not calls and must_gather and turns == 0 and not reminded:
                # An answer before any tool ran can cite only made-up invocations (measured: a 1.5B
                # model in prompted mode answered at once, citing invocation 1). Told so, once. The
                # draft is not kept: shown it again, the same model copied it into its final answer.
                reminded = True
                exchange.messages.append(
                    {"role": "user", "content": NOT_GATHERED_NOTICE + GATHER_INSTRUCTION + call_format}
                )
                continue
            if not calls:
                output, _ = _validated(EXECUTOR, reply)
                if output is not None:
                    # The model ended its tool use with a complete, valid answer: asking again
                    # would only cost another (on a local CPU server, long) model call.
                    return exchange.stage_call(
                        output, ParseStatus("valid", ""), _executor_thought(exchange, output)
                    )
                if reply is not None and reply.content and not reply.truncated:
                    # Its draft stays in the conversation; a truncated one is never pasted back.
                    exchange.messages.append({"role": "assistant", "content": _echo(reply.content)})
                break
            repeats_only = self._tool_turn(exchange, reply, calls, toolbox, turn=turns)
            turns += 1
            if repeats_only:
                # Only repeats (measured: a 1.5B model wrote one call 8 times): asking for more
                # turns would only repeat it again.
                break
            if (
                exchange.usage.prompt_tokens + estimated_tokens(exchange.messages, tools)
                > EXECUTOR.prompt_tokens
            ):
                # Another tool turn would pass the stage's budget: what was gathered is answered from.
                break
        exchange.messages.append(
            {
                "role": "user",
                "content": FINAL_TURN_INSTRUCTION
                if toolbox.remaining_calls > 0
                else TOOLS_EXHAUSTED_INSTRUCTION,
            }
        )
        output, status = self._structured(exchange, EXECUTOR, self.tool_calling.final_turn_request(tools))
        if output is None:
            # Natural-language fallback: no claims, so nothing here can ever PASS.
            raw_text = next(
                (reply["content"] for reply in reversed(exchange.replies) if reply["content"]), ""
            )
            output = _executor_output(user_facing_answer=bounded_text(raw_text, FALLBACK_TEXT_CHARS))
        return exchange.stage_call(output, status, _executor_thought(exchange, output))

    def _explain(self, stage_input: ExecutorInput) -> StageCall[ExecutorOutput]:
        """The cause path: the model explains code's candidates by number; code cites for it."""
        exchange = self._exchange(
            "executor",
            CAUSE,
            {"query": stage_input.query, "candidates": candidates_for_model(stage_input.candidates)},
            prompt="cause",
        )
        reply, status = self._structured(exchange, CAUSE)
        output, dropped = executor_output_from(reply, stage_input)
        if reply is None:
            thought = CAUSE_FALLBACK
        else:
            taken = sum(claim.claim_type == "root_cause" for claim in output.claims)
            thought = CAUSE_THOUGHT.format(count=len(stage_input.candidates), taken=taken)
        return exchange.stage_call(output, status, "；".join([thought, *dropped]))

    def verify(self, stage_input: VerifierInput) -> StageCall[VerifierOutput]:
        """One claim at a time in one request: each with only its verified excerpts and code's checks.
        A claim without a verified excerpt has nothing to be judged on: code marks it unsupported."""
        if self.explained:
            # The cause path's claims are code's quotes and the model's explanations of code's candidates:
            # an explanation is an inference by definition (§23), and code caps it there (grounding,
            # a cause stated as verified). The verifier prompt's example of `external_unknown` is a
            # stated cause, which would REJECT where the rules engine PASSes: it is not asked.
            output = verify_by_rules(stage_input)
            return StageCall(
                output=output,
                thought=f"{VERIFIED_BY_CODE}；{output.rationale}"[:200],
                model_output={"replies": []},
                prompt_version=prompt_version("verifier"),
            )
        quoted = {
            claim.claim_id: ClaimJudgement(
                claim_id=claim.claim_id, verification="direct_observation", detail=QUOTED_DETAIL
            )
            for claim in stage_input.claims
            if _quotes_its_excerpt(claim)
        }
        claims = [claim for claim in stage_input.claims if claim.excerpts and claim.claim_id not in quoted]
        if not claims:
            output = _verifier_output(
                stage_input.claims, quoted, detail=NO_EXCERPT_DETAIL, by_code=len(quoted)
            )
            return StageCall(
                output=output,
                thought=output.rationale[:200] if quoted else NO_EXCERPT_DETAIL,
                model_output={"replies": []},
                prompt_version=prompt_version("verifier"),
            )
        exchange = self._exchange("verifier", VERIFIER, {"claims": [dataclasses.asdict(c) for c in claims]})
        judged, status = self._judged(exchange, claims)
        output = _verifier_output(
            stage_input.claims, judged | quoted, detail=VERIFIER_FALLBACK_DETAIL, by_code=len(quoted)
        )
        return exchange.stage_call(output, status, output.rationale[:200])

    def _judged(
        self, exchange: _Exchange, claims: list[ClaimUnderCheck]
    ) -> tuple[dict[str, ClaimJudgement], ParseStatus]:
        """Each claim's judgement; a reply that restates the instructions instead of judging, or leaves
        a claim out, is re-asked once. What is still missing then falls back (code, per claim)."""
        request = self.structured.request(VERIFIER)
        rules = exchange.messages[0]["content"]
        judged: dict[str, ClaimJudgement] = {}
        errors = []
        for attempt in range(2):
            reply = self._complete(exchange, VERIFIER.max_completion_tokens, request)
            judgement, error = _validated(VERIFIER, reply)
            if judgement is not None:
                error = _judgements_taken(judgement, claims, judged, rules=rules)
            if not error:
                detail = f"首次回复无效：{errors[0]}" if errors else ""
                return judged, ParseStatus("repaired" if errors else "valid", detail)
            errors.append(error)
            if attempt == 0:
                self._re_ask(exchange, VERIFIER, reply, error)
            elif reply is not None and reply.truncated:
                exchange.truncated += 1
        return judged, ParseStatus(
            "parse_failed", f"两次回复均无效：{'；'.join(errors)}"[:ERROR_DETAIL_LIMIT]
        )

    def compose(self, stage_input: ComposerInput) -> StageCall[ComposerOutput]:
        if self.explained:
            # The model's explanation is in the material as an inference, the rest is code's quotes of
            # the evidence: a composer model could only restate them (measured on a 1.5B model: its
            # prompt's placeholder, after 41 s). Code writes the answer, as the rules engine does.
            return StageCall(
                output=ComposerOutput(answer=answer_from_material(stage_input)),
                thought=COMPOSED_BY_CODE,
                model_output={"replies": []},
                prompt_version=prompt_version("composer"),
            )
        exchange = self._exchange(
            "composer", COMPOSER, composer_material_for_model(dataclasses.asdict(stage_input))
        )
        output, status = self._structured(exchange, COMPOSER)
        if output is None:
            # Empty: the orchestrator then builds the answer from the material by code.
            return exchange.stage_call(
                ComposerOutput(answer=""), status, "撰写输出无法解析，交由代码生成答案"
            )
        return exchange.stage_call(output, status, "按允许材料撰写")

    def _exchange(
        self,
        stage: str,
        schema: StageSchema,
        variables: dict[str, Any],
        *,
        tools: list[dict] | None = None,
        prompt: str | None = None,
    ) -> _Exchange:
        """`prompt`: the prompt file, when not the stage's own (the executor's cause path)."""
        extra = self.tool_calling.instructions(tools) if tools else ""
        extra += self.structured.instructions(schema)
        name = prompt or stage
        prompt = prompt_render(name, **variables)
        budget = prompt_budget(self.context_tokens, max(schema.max_completion_tokens, TOOL_TURN_TOKENS))
        if estimated_tokens([{"content": prompt.text + extra}], tools) > budget:
            # Bounded copies go first (earlier rounds' tool outputs, trace summaries); refs stay.
            prompt = prompt_render(name, **without_bounded_outputs(variables))
        return _Exchange(stage, prompt, extra, tools)

    def _structured(
        self, exchange: _Exchange, schema: StageSchema, request: dict[str, Any] | None = None
    ) -> tuple[Any, ParseStatus]:
        """Ask for the stage output; re-ask once if the reply is invalid or truncated."""
        request = (request or {}) | self.structured.request(schema)
        reply = self._complete(exchange, schema.max_completion_tokens, request)
        output, error = _validated(schema, reply)
        if output is not None:
            return output, ParseStatus("valid", "")
        self._re_ask(exchange, schema, reply, error)
        second = self._complete(exchange, schema.max_completion_tokens, request)
        output, second_error = _validated(schema, second)
        if second is not None and second.truncated:
            exchange.truncated += 1
        if output is not None:
            return output, ParseStatus("repaired", f"首次回复无效：{error}")
        return None, ParseStatus(
            "parse_failed", f"两次回复均无效：{error}；{second_error}"[:ERROR_DETAIL_LIMIT]
        )

    @staticmethod
    def _re_ask(exchange: _Exchange, schema: StageSchema, reply: ModelReply | None, error: str) -> None:
        """The messages that ask once more: a truncated reply is not pasted back, an invalid one is,
        with what was wrong."""
        if reply is not None and reply.truncated:
            exchange.truncated += 1
            exchange.messages.append(
                {"role": "user", "content": TRUNCATED_INSTRUCTION.format(schema=schema.name)}
            )
            return
        echoed = _echo(reply.content) if reply is not None else ""
        exchange.messages += [
            {"role": "assistant", "content": echoed},
            {"role": "user", "content": REPAIR_INSTRUCTION.format(schema=schema.name, error=error)},
        ]

    def _complete(self, exchange: _Exchange, max_tokens: int, request: dict[str, Any]) -> ModelReply | None:
        exchange.fit(prompt_budget(self.context_tokens, max_tokens))
        remaining = self.deadline - time.monotonic()
        if remaining < MIN_CALL_TIMEOUT:
            raise LLMUnavailableError(
                stage=exchange.stage, detail=BUDGET_SPENT.format(seconds=self.session_seconds)
            )
        client = self._client(exchange.stage)
        endpoint = os.environ.get("OPENAI_BASE_URL")
        arguments = {
            "model": self.model,
            "messages": exchange.messages,
            "temperature": self.temperature,
            # The SDK's retries share what is left, so even the last retry ends within the budget.
            "timeout": min(self.timeout, remaining / (1 + self.max_retries)),
            self.token_cap_parameter: max_tokens,
            **request,
        }
        if endpoint not in _ENDPOINTS_REFUSING_STOP:
            arguments["stop"] = list(STOP_SEQUENCES)
        started = time.perf_counter()
        with tracing.chat_traced(
            model=self.model,
            stage=exchange.stage,
            base_url=str(client.base_url),
            messages=exchange.messages,
            temperature=self.temperature,
            max_tokens=max_tokens,
            structured="response_format" in request,
        ) as traced:
            try:
                response = self._create(client, arguments, endpoint)
            except APIError as exc:
                raise LLMUnavailableError(
                    stage=exchange.stage, detail=f"{type(exc).__name__}: {exc}"
                ) from exc
            finally:
                exchange.usage.wait_ms += (time.perf_counter() - started) * 1000
            reply = ModelReply.of(response)
            traced.answered(
                response,
                content=reply.content if reply else "",
                tool_calls=reply.tool_calls if reply else [],
            )
        usage = response.usage
        exchange.usage.add(
            Usage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                llm_calls=1,
            )
        )
        exchange.replies.append(reply.stored() if reply else {"content": "", "finish_reason": ""})
        return reply

    @staticmethod
    def _create(client: OpenAI, arguments: dict[str, Any], endpoint: str | None) -> ChatCompletion:
        """One completion; an endpoint that refuses `stop` (some models do) is asked again without it,
        and not sent it again."""
        try:
            return client.chat.completions.create(**arguments)
        except BadRequestError as exc:
            if "stop" not in arguments or "stop" not in str(exc.message).lower():
                raise
        _ENDPOINTS_REFUSING_STOP.add(endpoint)
        return client.chat.completions.create(**{k: v for k, v in arguments.items() if k != "stop"})

    def _tool_turn(
        self, exchange: _Exchange, reply: ModelReply, calls: list[ToolCall], toolbox: Toolbox, *, turn: int
    ) -> bool:
        """Run one turn's calls concurrently (bounded), append their results in call order.

        A call with the same tool and arguments as one already run in this stage is not run again:
        the model is pointed to that result. True when the turn held nothing but such repeats."""
        exchange.messages.append(self.tool_calling.assistant_message(reply, calls))
        # The calls as the model wrote them, on their reply: a replay (case export) repeats each turn.
        exchange.replies[-1]["tool_calls"] = [
            {"name": call.name, "arguments": call.arguments} for call in calls
        ]
        results: list[dict | None] = [None] * len(calls)
        runnable: list[tuple[int, dict]] = []
        first_in_turn: dict[str, int] = {}
        repeats: list[tuple[int, str]] = []
        for index, call in enumerate(calls):
            arguments, error = _arguments_of(call)
            key = call_key(call.name, arguments)
            if error:
                # Not run and not recorded: there are no arguments to record; the model is told why.
                results[index] = {"tool_name": call.name, "success": False, "error": error}
            elif key in exchange.invocation_of or key in first_in_turn:
                repeats.append((index, key))
            else:
                first_in_turn[key] = index
                runnable.append((index, arguments))
        # One turn, one call of the toolbox: it refuses what the round's budget does not allow (in call
        # order), runs the rest concurrently (bounded) and records them together.
        # The model's JSON boundary: each result becomes the message the model reads.
        ran = toolbox.call_many([(calls[index].name, args) for index, args in runnable])
        for (index, _args), result in zip(runnable, ran, strict=True):
            results[index] = result.model_message()
        for key, index in first_in_turn.items():
            if results[index].get("invocation_id") is not None:
                exchange.invocation_of[key] = results[index]["invocation_id"]
        for index, key in repeats:
            earlier = exchange.invocation_of.get(key)
            results[index] = (
                {
                    "tool_name": calls[index].name,
                    "success": False,
                    "error": REPEATED_CALL_ERROR.format(invocation_id=earlier),
                }
                if earlier is not None
                # Its first copy in this turn was not run either (the round's budget): the same refusal.
                else results[first_in_turn[key]]
            )
        for call, result in zip(calls, results, strict=True):
            exchange.tool_calls.append(
                {
                    "name": call.name,
                    "arguments": call.arguments,
                    "invocation_id": result.get("invocation_id"),
                    "turn": turn,
                }
                # The names code resolved to known ones, next to the invocation that ran with them.
                | ({"resolved_names": result["resolved_names"]} if result.get("resolved_names") else {})
            )
            exchange.add_tool_result(self.tool_calling.result_message, call, tool_message_for_model(result))
        return len(repeats) == len(calls)

    def _client(self, stage: str) -> OpenAI:
        try:
            return _openai_client(
                base_url=os.environ.get("OPENAI_BASE_URL"),
                api_key=os.environ.get("OPENAI_API_KEY"),
                max_retries=self.max_retries,
            )
        except OpenAIError as exc:
            raise LLMUnavailableError(stage=stage, detail=f"无法创建模型客户端：{exc}") from exc


class _Exchange:
    """One stage's conversation with the model: what was sent, what came back, what it cost."""

    def __init__(
        self, stage: str, prompt: RenderedPrompt, instructions: str, tools: list[dict] | None
    ) -> None:
        self.stage = stage
        self.prompt_version = prompt.version
        self.tools = tools
        self.messages: list[dict] = [
            {"role": "system", "content": prompt.system + instructions},
            {"role": "user", "content": prompt.user},
        ]
        self.replies: list[dict] = []
        self.tool_calls: list[dict] = []
        # (tool, canonical arguments) of every call run in this stage → its invocation id.
        self.invocation_of: dict[str, int] = {}
        self.truncated = 0
        self.usage = Usage()
        # Tool results still carrying their bounded `output`, oldest first: what `fit` trims.
        self._trimmable: list[tuple[int, Any, ToolCall, dict]] = []

    def add_tool_result(self, render, call: ToolCall, result: dict) -> None:
        self.messages.append(render(call, result))
        if result.get("output") not in (None, "", {}, []):
            self._trimmable.append((len(self.messages) - 1, render, call, result))

    def fit(self, budget: int) -> None:
        """Drop the bounded outputs of the oldest tool results until the request fits `budget`."""
        while self._trimmable and estimated_tokens(self.messages, self.tools) > budget:
            index, render, call, result = self._trimmable.pop(0)
            self.messages[index] = render(call, without_bounded_outputs(result))

    def stage_call(self, output: Any, parse_status: ParseStatus, thought: str) -> StageCall:
        model_output: dict[str, Any] = {"replies": bounded_replies(self.replies)}
        if self.tool_calls:
            model_output["tool_calls"] = self.tool_calls
        if self.truncated:
            model_output["truncated_replies"] = self.truncated
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
def _openai_client(*, base_url: str | None, api_key: str | None, max_retries: int) -> OpenAI:
    # One client (and connection pool) per endpoint: building one costs tens of milliseconds.
    return OpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries)


def _investigated_only(stage_input: PlannerInput) -> bool:
    """Every ask is one code's investigation answers (causes, changes), in a first round of a question
    that is not a narrow confirmation and excludes nothing (the model planner reads those too)."""
    return (
        bool(stage_input.asks)
        and all(KINDS[ask.kind].investigates for ask in stage_input.asks)
        and not stage_input.retry_context
        and not stage_input.narrow_scope
        and not stage_input.excluded_topics
    )


def _plan_by_code(stage_input: PlannerInput, *, asks: bool = True) -> PlannerOutput:
    return plan_by_rules(
        stage_input.query,
        focus=stage_input.focus,
        narrow=stage_input.narrow_scope,
        excluded=stage_input.excluded_topics,
        asks=stage_input.asks if asks else (),
    )


def _quotes_its_excerpt(claim: ClaimUnderCheck) -> bool:
    """An observation that quotes one of its verified excerpts word for word, as code states the
    evidence of its candidates: it says what the evidence says, so there is nothing for a model to judge."""
    return (
        claim.claim_type == "observation"
        and claim.polarity == CONSISTENT
        and not claim.facts_not_in_excerpts
        and any(claim.claim == MOVED_SERIES + excerpt.text for excerpt in claim.excerpts)
    )


def _why_answered_by_code(stage_input: ExecutorInput) -> str | None:
    """Why no model is asked (None when one is): every ask settled by the slots code read from the
    calls already made, and no planned tool those calls did not use unless the plan is narrow (the
    question asks that one thing: a search beyond its asks is beyond it; measured on a 1.5B planner,
    which plans `query_logs` for a metric's current value). A model call here could only restate the
    slots (measured on a 1.5B model: it copied them with their counts and units, which no excerpt
    holds) or lower the verdict."""
    if (
        not (stage_input.conclusions or stage_input.candidates)
        or stage_input.open_asks
        or stage_input.retry_context
    ):
        return None
    called = {result.tool_name for result in stage_input.prior_results}
    if all(step.tool in called for step in stage_input.plan.steps):
        return NOTHING_ELSE_PLANNED
    return NARROW_NOT_WIDENED if stage_input.plan.narrow_scope else None


def _executor_output(*, user_facing_answer: str = "") -> ExecutorOutput:
    """An output with no claims: the round then answers by the slots alone, and nothing can PASS
    that they do not fill."""
    return ExecutorOutput(
        claims=[],
        hypotheses=[],
        missing_info=[],
        recommended_actions=[],
        diagnosis_summary="",
        user_facing_answer=user_facing_answer,
    )


def _executor_thought(exchange: _Exchange, output: ExecutorOutput) -> str:
    thought = f"调用工具 {len(exchange.tool_calls)} 次，提出 {len(output.claims)} 条断言"
    return f"{thought}；{output.diagnosis_summary}" if output.diagnosis_summary else thought


def _planned_tool(tools: list[dict], plan: PlannerOutput) -> dict:
    """The definition of the plan's first tool (the first offered one if the plan names none)."""
    by_name = {tool["function"]["name"]: tool for tool in tools}
    return next((by_name[step.tool] for step in plan.steps if step.tool in by_name), tools[0])


def _echo(content: str) -> str:
    return content if len(content) <= REPAIR_ECHO_CHARS else LONG_REPLY_OMITTED


def _arguments_of(call: ToolCall) -> tuple[dict, str]:
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        return {}, f"参数不是合法的 JSON：{exc}"
    if not isinstance(arguments, dict):
        return {}, "参数必须是 JSON 对象"
    return arguments, ""


def _validated(schema: StageSchema, reply: ModelReply | None) -> tuple[Any, str]:
    if reply is None:
        return None, "响应中没有 choices"
    if reply.truncated:
        return None, "回复被截断（finish_reason: length），不作为完整回复解析"
    if reply.tool_calls:
        return None, "此时不能再调用工具，应直接输出最终 JSON"
    if reply.refusal:
        return None, f"模型拒绝回答：{reply.refusal[:200]}"
    if not reply.content:
        return None, "回复内容为空"
    if len(reply.content) > REPLY_CHARS_LIMIT:
        return None, f"回复过长（{len(reply.content)} 字符），不是有效的阶段输出"
    try:
        return schema.model.model_validate_json(json_text_of(reply.content)), ""
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '$'}: {error['msg']}"
            for error in exc.errors()[:8]
        )
        return None, problems[:ERROR_DETAIL_LIMIT]


def _judgements_taken(
    judgement: VerifierJudgement,
    claims: list[ClaimUnderCheck],
    judged: dict[str, ClaimJudgement],
    *,
    rules: str,
) -> str:
    """Take the reply's judgements of claims not judged yet into `judged`; what was wrong, or ""."""
    by_id = {claim.claim_id: claim for claim in claims}
    problems, restating = [], set()
    for check in judgement.claim_checks:
        claim = by_id.get(check.claim_id)
        if claim is None or check.claim_id in judged:
            continue
        own = [claim.claim, *(excerpt.text for excerpt in claim.excerpts)]
        if copied := restated(check.detail, rules, own=own):
            # Measured on a 1.5B model: the right verdict with an example from the prompt as its reason.
            # A copied reason is no judgement of its own, so it stands only where code's findings agree.
            if agrees_with_code(claim, check.verification):
                judged[check.claim_id] = check.model_copy(
                    update={"detail": f"{COPIED_DETAIL}；{code_findings_text(claim)}"}
                )
                continue
            restating.add(check.claim_id)
            problems.append(RESTATED_ERROR.format(claim_id=check.claim_id, copied=copied))
            continue
        judged[check.claim_id] = check
    missing = [claim_id for claim_id in by_id if claim_id not in judged and claim_id not in restating]
    if missing:
        problems.append(MISSING_CHECK_ERROR.format(claim_ids="、".join(missing)))
    return "；".join(problems)


def _verifier_output(
    claims: list[ClaimUnderCheck], judged: dict[str, ClaimJudgement], *, detail: str, by_code: int = 0
) -> VerifierOutput:
    """A check per claim: the model's judgement where there is one, else unsupported with `detail`
    (an unreadable verifier can only lower the verdict, never raise it). Refs: the verified excerpts.
    `by_code`: how many of `judged` are code's (quoted evidence), not the model's."""
    checks = [
        ClaimCheck(
            claim_id=claim.claim_id,
            verification=judged[claim.claim_id].verification if claim.claim_id in judged else "unsupported",
            detail=judged[claim.claim_id].detail
            if claim.claim_id in judged
            else (detail if claim.excerpts else NO_EXCERPT_DETAIL),
            evidence_refs=[excerpt.source for excerpt in claim.excerpts],
        )
        for claim in claims
    ]
    counts = Counter(check.verification for check in checks)
    summary = "，".join(f"{kind} {count} 条" for kind, count in counts.items())
    return VerifierOutput(
        claim_checks=checks,
        facts_checked=[],
        rationale=f"逐条校验 {len(checks)} 条断言（模型判断 {len(judged) - by_code} 条"
        + (f"，代码引用的证据原文 {by_code} 条由代码判定" if by_code else "")
        + f"）：{summary}"
        if checks
        else "没有断言",
    )
