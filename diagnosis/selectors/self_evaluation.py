"""Reading the `self_evaluation` container, one slot per writer."""

from copy import deepcopy

from diagnosis.models import DiagnosisSession

RULE_EVALUATION = "rule_evaluation"
VERIFIER_EVALUATION = "verifier_evaluation"
AIOPS_RULE_EVALUATION = "aiops_rule_evaluation"
# A verify session's outcome: each claim's status with its evidence, and the set's verdict.
CLAIMS_VERIFICATION = "claims_verification"
SLOTS = (RULE_EVALUATION, VERIFIER_EVALUATION, AIOPS_RULE_EVALUATION, CLAIMS_VERIFICATION)

# Before the container had slots, the rule score and the verifier result were written flat at the
# root. A root `evidence_score` marks the first, a root `verdict` / `groundedness_score` the second.
LEGACY_RULE_KEYS = ("evidence_score", "source", "factors")
LEGACY_VERIFIER_KEYS = (
    "verdict",
    "groundedness_score",
    "critical_fact_count",
    "claim_checks",
    "facts_checked",
    "rationale",
    "round",
    "traceability_version",
    "executor_output_parse_status",
    "executor_structured_output",
    "gatekeeper_result",
    "composer_output",
    "tool_trace_summary",
    "retry_context",
)


def _legacy_moved(container: dict, *, slot: str, markers: tuple[str, ...], keys: tuple[str, ...]) -> None:
    if not any(marker in container for marker in markers):
        return
    legacy = {key: container.pop(key) for key in keys if key in container}
    current = container.get(slot)
    # A slot written after the legacy data is newer: its keys win.
    container[slot] = {**legacy, **current} if isinstance(current, dict) else legacy


def self_evaluation_wrapped(*, raw) -> dict:
    """A copy of a stored container with legacy root-level data moved into its slots."""
    container = deepcopy(raw) if isinstance(raw, dict) else {}
    _legacy_moved(container, slot=RULE_EVALUATION, markers=("evidence_score",), keys=LEGACY_RULE_KEYS)
    _legacy_moved(
        container,
        slot=VERIFIER_EVALUATION,
        markers=("verdict", "groundedness_score"),
        keys=LEGACY_VERIFIER_KEYS,
    )
    return container


def self_evaluation_of(*, session: DiagnosisSession) -> dict:
    return self_evaluation_wrapped(raw=session.self_evaluation)
