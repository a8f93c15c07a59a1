"""What the browser tests read off the engineer's pages."""

# What the engineer's pages never show (issue 25): verdict and output-type codes, raw paths, similarity.
DEVELOPER_TOKENS = ("PASS", "NORMAL", "LOW_CONFID", "REJECT", "$.", "相似度", "query_alerts", "query_logs")


def developer_tokens_in(text: str) -> list[str]:
    return [token for token in DEVELOPER_TOKENS if token in text]
