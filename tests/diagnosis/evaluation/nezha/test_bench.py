"""How the benchmark reads a conclusion: the candidates' subjects in order, the data's services among
them as the ranking, and the others counted apart (a name the data do not have)."""

from diagnosis.evaluation.nezha.bench import candidate_subjects, candidates_named

SERVICES = ["ledger-store", "ledger-gateway", "pricing"]


def test_the_ranking_is_the_candidates_in_order_and_a_stranger_is_kept_apart():
    line = (
        "结论：根因候选：pricing（CPU 使用升高，10:02起，0.1 核 → 0.9 核）；其次：10.0.0.7（被调用延迟升高，"
        "10:03起，3 ms → 2.1 s）；ledger-store（延迟升高，10:04起，9 ms → 40 ms）"
    )

    assert candidate_subjects(line) == ["pricing", "10.0.0.7", "ledger-store"]
    assert candidates_named(line, SERVICES) == ["pricing", "ledger-store"]


def test_a_line_without_candidates_ranks_the_services_it_names_in_order():
    line = "结论：未找到根因证据：ledger-gateway 与 pricing 的信号都没有变化"

    assert candidate_subjects(line) == []
    assert candidates_named(line, SERVICES) == ["ledger-gateway", "pricing"]
