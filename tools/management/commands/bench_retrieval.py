"""`manage.py bench_retrieval`: recall@3 and MRR per query group of the knowledge retrieval, beside
plain Okapi BM25 on the same corpus (`tools.retrieval_bench`), for the queries it was tuned on and for
the held-out ones."""

from django.core.management.base import BaseCommand

from tools.retrieval_bench import CORPUS_DIR, QUERY_SETS, RECALL_AT, bench_run, bench_set, corpus_blocks


class Command(BaseCommand):
    help = "Benchmark runbook retrieval against plain BM25 on a fixed snapshot of public runbooks."

    def handle(self, *args, **options) -> None:
        blocks = corpus_blocks()
        documents = len({block.source_document for block in blocks})
        self.stdout.write(f"corpus {CORPUS_DIR.name}: {documents} runbooks, {len(blocks)} sections")
        self.stdout.write(
            f"{'queries':<9} {'group':<22} {'n':>3}  {f'recall@{RECALL_AT}':>9} {'BM25':>6}  {'MRR':>6} {'BM25':>6}"
        )
        for name, path in QUERY_SETS:
            for score in bench_run(bench=bench_set(path), blocks=blocks):
                self.stdout.write(
                    f"{name:<9} {score.group:<22} {score.count:>3}  {score.recall:>9.2f}"
                    f" {score.plain_recall:>6.2f}  {score.mrr:>6.2f} {score.plain_mrr:>6.2f}"
                )
