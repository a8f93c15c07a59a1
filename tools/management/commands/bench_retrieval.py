"""`manage.py bench_retrieval`: recall@3 and MRR per query group of the knowledge retrieval, beside
plain Okapi BM25 on the same corpus (`tools.retrieval_bench`)."""

from django.core.management.base import BaseCommand

from tools.retrieval_bench import CORPUS_DIR, RECALL_AT, bench_run, corpus_blocks


class Command(BaseCommand):
    help = "Benchmark runbook retrieval against plain BM25 on a fixed snapshot of public runbooks."

    def handle(self, *args, **options) -> None:
        blocks = corpus_blocks()
        documents = len({block.source_document for block in blocks})
        self.stdout.write(f"corpus {CORPUS_DIR.name}: {documents} runbooks, {len(blocks)} sections")
        self.stdout.write(
            f"{'group':<22} {'n':>3}  {f'recall@{RECALL_AT}':>9} {'BM25':>6}  {'MRR':>6} {'BM25':>6}"
        )
        for score in bench_run(blocks=blocks):
            self.stdout.write(
                f"{score.group:<22} {score.count:>3}  {score.recall:>9.2f} {score.plain_recall:>6.2f}"
                f"  {score.mrr:>6.2f} {score.plain_mrr:>6.2f}"
            )
