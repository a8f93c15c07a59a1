"""The fixed text the product writes whatever the evidence: read from the product's own templates."""

from diagnosis.evaluation.templates import fixed_text_holding, fixed_texts
from diagnosis.pipeline.answer import DEGRADED_HEADER, DEGRADED_NEXT_STEPS, DISCLAIMER
from diagnosis.pipeline.focus import NOTHING_UNDERSTOOD
from diagnosis.pipeline.slot import CONCLUSION


def test_the_disclaimer_the_degraded_template_and_the_line_prefixes_are_fixed_text():
    texts = fixed_texts()

    assert {DISCLAIMER, DEGRADED_HEADER, *DEGRADED_NEXT_STEPS, CONCLUSION, NOTHING_UNDERSTOOD} <= set(texts)
    # Rendered by the product's own code, cut where evidence would go.
    assert {"未能回答：", "当前缺口：", "已确认信息：", "证据缺口：", "已确认的发现"} <= set(texts)


def test_no_fixed_text_holds_evidence_or_a_placeholder():
    texts = fixed_texts()

    assert all("\u0000" not in text and text.strip() == text and text for text in texts)
    assert not any(text.startswith(("- ", "**")) for text in texts)


def test_an_item_inside_a_fixed_text_is_found_whatever_its_case_and_spacing():
    assert fixed_text_holding(" 当前缺口 ") == "当前缺口："
    assert fixed_text_holding("结论") is not None
    assert fixed_text_holding("不能执行") is not None


def test_values_names_and_conclusions_from_evidence_are_not_fixed_text():
    # Demo-world and second-world values, a cited record, a conclusion naming its subject.
    for item in ("91%", "HighMemoryUsage", "checkout-6f7d9-abcde", "42s", "query_alerts #1 $.alerts[0]"):
        assert fixed_text_holding(item) is None, item
    # Spanning the place where the asked word goes: written only for that word.
    assert fixed_text_holding("不能执行「扩容」") is None
