"""A small server speaking Loki's HTTP API, for the tests and the benchmarks: Loki is not installable
here (neither in Debian nor on PyPI). It follows the documented request and response shapes
(https://grafana.com/docs/loki/latest/reference/loki-http-api/):

- `GET /loki/api/v1/query_range` (query, start and end in ns, limit, direction, step): a log query
  answers `{"resultType": "streams", "result": [{"stream": {...}, "values": [["<ns>", "<line>"]]}]}`
  (newest first with direction=backward), a metric query `{"resultType": "matrix", "result":
  [{"metric": {...}, "values": [[<s>, "<value>"]]}]}` evaluated at start, start + step, … end;
- `GET /loki/api/v1/query` (query, time in ns): a metric query answers `{"resultType": "vector",
  "result": [{"metric": {...}, "value": [<s>, "<value>"]}]}`; a log query there is a 400, as Loki says;
- `GET /loki/api/v1/labels`, `GET /loki/api/v1/label/<name>/values`;
- `GET /loki/api/v1/patterns` (query a stream selector, start, end, step): the patterns of the
  selected streams' lines, `{"status": "success", "data": [{"pattern": "<_> INFO …", "samples":
  [[<s>, <count>], …]}]}`, as Loki's pattern ingester mines them: Drain (the product's own miner,
  `tools.loglines.patterns_mined`; Loki's ingester ports Drain too) over each stream's lines in
  order, `<_>` for a varying token, a pattern's samples summed over the streams, a bucket a step with
  no line of it left out;
- `POST /loki/api/v1/push` (JSON `{"streams": [{"stream": {...}, "values": [["<ns>", "<line>"], ...]}]}`,
  204) as a log shipper sends lines;
- with a tenant set, requests without that `X-Scope-OrgID` get 401 `no org id`, as a multi-tenant Loki
  answers.

The LogQL it understands is `diagnosis.evaluation.logql`'s; anything else is a 400 naming what it
could not parse.
"""

from __future__ import annotations

import bisect
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from diagnosis.evaluation.logql import (
    NS,
    Evaluator,
    LogQLError,
    LogQuery,
    duration_seconds,
    longest_range,
    parse,
    sample_text,
    stream_matches,
)
from tools.loglines import patterns_mined

# Loki's default step for a range of a metric query: the range over 250 points, at least a second.
DEFAULT_POINTS = 250
MAX_POINTS = 11000
# How Loki's pattern ingester writes a pattern's varying token.
PATTERN_PARAMETER = "<_>"


Stream = tuple[dict[str, str], list[tuple[int, str]]]


class LokiServer:
    """Streams `[(labels, [(ns, line)])]` served on a free loopback port while entered."""

    def __init__(self, streams: list[Stream], *, tenant: str | None = None) -> None:
        # In time order: the evaluator finds a range's lines by bisection.
        self.streams = [(labels, sorted(lines)) for labels, lines in streams]
        self.evaluator = Evaluator(self.streams)
        self.tenant = tenant
        self.push_lock = threading.Lock()
        # Per stream (by position): its lines' patterns, mined once, again when lines were pushed.
        self.mined: dict[int, tuple[int, list[str]]] = {}
        # Mined now, as Loki's pattern ingester mines lines as they arrive: a patterns query reads them.
        for index in range(len(self.streams)):
            self._mined(index)
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_):
                pass

            def do_GET(self):
                url = urlsplit(self.path)
                params = {key: values[-1] for key, values in parse_qs(url.query).items()}
                server.requests.append({"path": url.path, "params": params, "headers": dict(self.headers)})
                if server.tenant and self.headers.get("X-Scope-OrgID") != server.tenant:
                    return self._send(401, "no org id\n", "text/plain")
                try:
                    status, body = server.answer(url.path, params)
                except LogQLError as exc:
                    return self._send(400, f"{exc}\n", "text/plain")
                self._send(status, json.dumps(body), "application/json")

            def do_POST(self):
                url = urlsplit(self.path)
                if server.tenant and self.headers.get("X-Scope-OrgID") != server.tenant:
                    return self._send(401, "no org id\n", "text/plain")
                if url.path != "/loki/api/v1/push":
                    return self._send(404, "404 page not found\n", "text/plain")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    streams = json.loads(body)["streams"]
                    for entry in streams:
                        server.push(entry["stream"], [(int(ns), line) for ns, line in entry["values"]])
                except (ValueError, KeyError, TypeError) as exc:
                    return self._send(400, f"loghttp.PushRequest: {exc}\n", "text/plain")
                self.send_response(204)
                self.end_headers()

            def _send(self, status, text, content_type):
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> LokiServer:
        self.thread.start()
        return self

    def __exit__(self, *_) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def push(self, labels: dict, values: list[tuple[int, str]]) -> None:
        """Append lines to the stream with these labels (a new stream for new labels)."""
        with self.push_lock:
            lines = next((lines for known, lines in self.streams if known == labels), None)
            if lines is None:
                lines = []
                self.streams.append((dict(labels), lines))
            lines.extend(values)
            lines.sort()

    def answer(self, path: str, params: dict) -> tuple[int, dict]:
        if path == "/loki/api/v1/labels":
            names = sorted({name for labels, _ in self.streams for name in labels})
            return 200, {"status": "success", "data": names}
        if match := re.fullmatch(r"/loki/api/v1/label/([^/]+)/values", path):
            values = sorted({labels[match[1]] for labels, _ in self.streams if match[1] in labels})
            return 200, {"status": "success", "data": values}
        if path == "/loki/api/v1/query_range":
            return 200, self.query_range(params)
        if path == "/loki/api/v1/query":
            return 200, self.query(params)
        if path == "/loki/api/v1/patterns":
            return 200, self.patterns(params)
        return 404, {"status": "error", "error": "404 page not found"}

    def query(self, params: dict) -> dict:
        expression = parse(params.get("query", ""))
        if isinstance(expression, LogQuery):
            raise LogQLError(
                "log queries are not supported as an instant query type, please change your query to a range query type"
            )
        at = _nanoseconds(params.get("time"), default=time.time_ns())
        vector = self.evaluator.vector(expression, at)
        result = [
            {"metric": dict(labels), "value": [at / NS, sample_text(value)]}
            for labels, value in vector.items()
        ]
        return _success("vector", sorted(result, key=_ordering(expression)))

    def query_range(self, params: dict) -> dict:
        expression = parse(params.get("query", ""))
        end = _nanoseconds(params.get("end"), default=time.time_ns())
        start = _nanoseconds(params.get("start"), default=end - 3600 * NS)
        if isinstance(expression, LogQuery):
            return self._streams(expression, start, end, params)
        step = _step_ns(params.get("step"), start, end)
        if (end - start) // step > MAX_POINTS:
            raise LogQLError(
                "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"
            )
        series: dict = {}
        evaluator = self.evaluator.over(start - int(longest_range(expression) * NS), end)
        for at in range(start, end + 1, step):
            for labels, value in evaluator.vector(expression, at).items():
                series.setdefault(labels, []).append([at / NS, sample_text(value)])
        result = [{"metric": dict(labels), "values": values} for labels, values in sorted(series.items())]
        return _success("matrix", result)

    def patterns(self, params: dict) -> dict:
        expression = parse(params.get("query", ""))
        if not isinstance(expression, LogQuery) or expression.stages:
            raise LogQLError("only a stream selector is accepted for patterns")
        end = _nanoseconds(params.get("end"), default=time.time_ns())
        start = _nanoseconds(params.get("start"), default=end - 3600 * NS)
        step = _step_ns(params.get("step") or "10s", start, end)
        samples: dict[str, dict[int, int]] = {}
        with self.push_lock:
            for index, (labels, lines) in enumerate(self.streams):
                if not stream_matches(labels, expression.matchers):
                    continue
                mined = self._mined(index)
                # A stream's lines are in time order: only the window's are read, not the whole day's.
                first = bisect.bisect_left(lines, start, key=lambda item: item[0])
                last = bisect.bisect_right(lines, end, key=lambda item: item[0])
                for position in range(first, last):
                    bucket = (lines[position][0] - start) // step * step + start
                    counts = samples.setdefault(mined[position], {})
                    counts[bucket] = counts.get(bucket, 0) + 1
        data = [
            {"pattern": pattern, "samples": [[at // NS, count] for at, count in sorted(counts.items())]}
            for pattern, counts in sorted(samples.items(), key=lambda item: -sum(item[1].values()))
        ]
        return {"status": "success", "data": data}

    def _mined(self, index: int) -> list[str]:
        """The pattern of each line of the stream at `index`, in its order."""
        _, lines = self.streams[index]
        known = self.mined.get(index)
        if known is None or known[0] != len(lines):
            of_line = [""] * len(lines)
            for pattern in patterns_mined([line for _, line in lines]):
                for member in pattern.members:
                    of_line[member] = pattern.template.replace("<*>", PATTERN_PARAMETER)
            known = (len(lines), of_line)
            self.mined[index] = known
        return known[1]

    def _streams(self, query: LogQuery, start: int, end: int, params: dict) -> dict:
        limit = int(params.get("limit", 100))
        backward = params.get("direction", "backward") == "backward"
        # Loki returns entries with start <= ns < end.
        found = self.evaluator.entries(query, start - 1, end - 1)
        found.sort(key=lambda entry: entry.ns, reverse=backward)
        result: dict[str, dict] = {}
        for entry in found[:limit]:
            labels = {name: value for name, value in entry.labels.items() if value != ""}
            key = json.dumps(labels, sort_keys=True)
            result.setdefault(key, {"stream": labels, "values": []})["values"].append(
                [str(entry.ns), entry.line]
            )
        return _success("streams", list(result.values()))


def _success(result_type: str, result: list) -> dict:
    return {"status": "success", "data": {"resultType": result_type, "result": result}}


def _ordering(expression):
    """topk and bottomk answer their samples ordered by value; other vectors by their labels."""
    operator = getattr(expression, "operator", "")
    if operator in ("topk", "bottomk"):
        sign = -1 if operator == "topk" else 1
        return lambda item: (sign * float(item["value"][1]), sorted(item["metric"].items()))
    return lambda item: sorted(item["metric"].items())


def _nanoseconds(raw: str | None, *, default: int) -> int:
    """A time parameter as Loki takes it: nanoseconds, or (with a point or few digits) seconds."""
    if not raw:
        return default
    if re.fullmatch(r"[0-9]+", raw) and len(raw) > 12:
        return int(raw)
    try:
        return int(float(raw) * NS)
    except ValueError:
        raise LogQLError(f"cannot parse {raw!r} to a valid timestamp") from None


def _step_ns(raw: str | None, start: int, end: int) -> int:
    if not raw:
        return max(NS, (end - start) // DEFAULT_POINTS // NS * NS)
    seconds = float(raw) if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", raw) else duration_seconds(raw)
    if seconds <= 0:
        raise LogQLError(
            "zero or negative query resolution step widths are not accepted. Try a positive integer"
        )
    return int(seconds * NS)
