"""`manage.py bench_retrieval` (issue 22): recall@3 and MRR per query group, beside plain BM25 on the
same snapshot of public runbooks; the retrieval is at least as good as plain BM25 in every group and
finds the runbook of a Chinese paraphrase in the first three at least 60% of the time."""

import pytest
from django.core.management import call_command

from tools.retrieval_bench import (
    BENCH_DIR,
    HELD_OUT_FILE,
    BenchQuery,
    BenchSet,
    bench_run,
    bench_set,
    recall_and_mrr,
)


def test_recall_counts_the_expected_document_in_the_first_three_and_mrr_its_rank():
    rankings = [(["a", "b", "c"], "a"), (["b", "c", "a"], "a"), (["b", "c", "d", "a"], "a"), ([], "a")]

    recall, mrr = recall_and_mrr(rankings)

    assert recall == 2 / 4
    assert mrr == pytest.approx((1 + 1 / 3 + 1 / 4 + 0) / 4)


def test_the_snapshot_keeps_its_licence_and_has_forty_queries_in_three_groups():
    bench = bench_set()

    assert (BENCH_DIR / "prometheus-operator-runbooks" / "LICENSE").read_text().startswith("Apache License")
    assert len(bench.queries) >= 40
    assert set(bench.groups) == {"alert_named", "english_paraphrase", "chinese_paraphrase"}
    assert {q.group for q in bench.queries} == set(bench.groups)


def test_a_query_file_naming_an_unlisted_group_is_refused(tmp_path):
    path = tmp_path / "queries.yaml"
    path.write_text("groups: {a: A}\nqueries:\n- {group: b, query: x, expected: y.md}\n")

    with pytest.raises(ValueError, match="groups it does not list: \\['b'\\]"):
        bench_set(path)


def test_the_retrieval_beats_plain_bm25_in_every_group_and_reads_chinese():
    scores = {score.group: score for score in bench_run()}

    for score in scores.values():
        assert score.recall >= score.plain_recall, score
        assert score.mrr >= score.plain_mrr, score
    assert scores["chinese_paraphrase"].recall >= 0.6


def test_on_queries_it_was_never_tuned_on_its_recall_is_not_below_plain_bm25_in_any_group():
    held_out = bench_set(HELD_OUT_FILE)
    tuned_on = {q.expected for q in bench_set().queries}

    assert len(held_out.queries) >= 60
    assert not {q.expected for q in held_out.queries} & tuned_on
    for score in bench_run(bench=held_out):
        assert score.recall >= score.plain_recall, score


def test_chinese_bigrams_count_only_in_a_corpus_that_has_chinese(tmp_path):
    from tools.retrieval import knowledge_rank
    from tools.retrieval_bench import corpus_blocks

    (tmp_path / "QuotaExceeded.md").write_text("# QuotaExceeded\n\n## Meaning\n\nThe quota is exceeded.\n")
    for name, meaning in (("LedgerDown", "The ledger is down."), ("JournalLag", "The journal lags behind.")):
        (tmp_path / f"{name}.md").write_text(f"# {name}\n\n## Meaning\n\n{meaning}\n")
    english = corpus_blocks(tmp_path)
    (tmp_path / "LedgerQuota.md").write_text("# 账本配额\n\n## 含义\n\n账本服务的配额用尽。\n")
    mixed = corpus_blocks(tmp_path)

    found = knowledge_rank(query="命名空间的资源配额超了", blocks=english, top_k=3)
    assert [hit.block.source_document for hit in found] == ["runbooks/QuotaExceeded.md"]
    assert not knowledge_rank(query="命名空间的资源配额超了", blocks=mixed, top_k=3)


def test_a_bench_of_another_corpus_runs_the_same_way(tmp_path):
    from tools.retrieval_bench import corpus_blocks

    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / "LedgerJournalFull.md").write_text(
        "# LedgerJournalFull\n\n## Meaning\n\nThe journal filesystem is almost full.\n"
    )
    (tmp_path / "GatewayTlsExpiry.md").write_text(
        "# GatewayTlsExpiry\n\n## Meaning\n\nThe certificate expires.\n"
    )
    bench = BenchSet(
        groups={"alert_named": "告警名", "chinese_paraphrase": "中文改写"},
        queries=[
            BenchQuery(
                group="alert_named", query="LedgerJournalFull", expected="ledger/LedgerJournalFull.md"
            ),
            BenchQuery(group="chinese_paraphrase", query="证书快过期了", expected="GatewayTlsExpiry.md"),
        ],
    )

    scores = bench_run(bench=bench, blocks=corpus_blocks(tmp_path))

    assert [(s.group, s.count, s.recall, s.plain_recall) for s in scores] == [
        ("alert_named", 1, 1.0, 1.0),
        ("chinese_paraphrase", 1, 1.0, 0.0),
    ]


@pytest.mark.django_db
def test_the_command_prints_each_group_beside_plain_bm25(capsys):
    call_command("bench_retrieval")

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "corpus prometheus-operator-runbooks: 108 runbooks, 441 sections"
    assert lines[1].split() == ["queries", "group", "n", "recall@3", "BM25", "MRR", "BM25"]
    assert [line.split()[:2] for line in lines[2:]] == [
        [name, group]
        for name in ("tuning", "held-out")
        for group in ("alert_named", "english_paraphrase", "chinese_paraphrase")
    ]
