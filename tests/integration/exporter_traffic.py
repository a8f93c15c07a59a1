"""Bounded traffic for the exporter stack: what a small shop's users and code do to nginx, PostgreSQL
and Redis, so the exporters and the log files have something to say.

`burst` runs once after start-up (a fixed number of each thing, listed in `BURST`): requests that
answer 200, 502 (the refused upstream) and 404 on three paths; commits, rollbacks, failing statements
of four SQLSTATE classes, deadlocks, slow statements (`pg_sleep`), connections past
`max_connections` and to a missing database; Redis writes past `maxmemory` (evictions) and reads that
hit and miss. `Trickle` then keeps a little of each going (rates stay above zero) once a second until
it is stopped or `max_seconds` pass.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field

import httpx2
import psycopg
import redis

# (method, path, count, status nginx answers): the paths are the ones `exporter_stack`'s nginx serves.
REQUESTS = (
    ("GET", "/", 40, 200),
    ("GET", "/api/catalog/items", 30, 200),
    ("GET", "/api/payments/charge", 12, 502),
    ("POST", "/api/payments/refund", 6, 502),
    ("GET", "/static/app.js", 9, 404),
    ("GET", "/wp-login.php", 5, 404),
    ("GET", "/api/v1/orders", 3, 404),
)
COMMITS = 30
ROLLBACKS = 10
# Failing statements, each its own (aborted) transaction: (SQLSTATE, statement, times).
FAILING = (
    ("23505", "INSERT INTO accounts (id, balance) VALUES (1, 0)", 4),
    ("22012", "SELECT 1 / (balance - balance) FROM accounts WHERE id = 1", 2),
    ("42P01", "SELECT * FROM order_items", 1),
    ("42601", "SELEC id FROM orders", 1),
)
DEADLOCKS = 3
# Seconds each slow statement sleeps; all above `log_min_duration_statement`, the last the slowest.
SLOW_SECONDS = (0.4, 0.7, 1.1, 1.9)
# Connections held open (idle) for the stack's life: about half of `max_connections` in use.
HELD_CONNECTIONS = 9
# Connection attempts past the limit ("sorry, too many clients already") and to a missing database.
REFUSED_CONNECTIONS = 3
MISSING_DATABASE = "shop_archive"
MISSING_DATABASE_ATTEMPTS = 2
# Redis: this many 1 KiB writes overflow `maxmemory` (evictions); reads of recent keys hit, others miss.
CACHE_WRITES = 6000
CACHE_VALUE = "x" * 1024
CACHE_HITS = 300
CACHE_MISSES = 100
BURST = {
    "requests": {f"{method} {path}": count for method, path, count, _ in REQUESTS},
    "commits": COMMITS,
    "rollbacks": ROLLBACKS,
    "failing": {sqlstate: times for sqlstate, _, times in FAILING},
    "deadlocks": DEADLOCKS,
    "slow_seconds": SLOW_SECONDS,
    "cache_writes": CACHE_WRITES,
}
SCHEMA = """
CREATE TABLE accounts (id integer PRIMARY KEY, balance numeric NOT NULL);
INSERT INTO accounts SELECT g, 100 FROM generate_series(1, 100) AS g;
CREATE TABLE orders (
    id serial PRIMARY KEY,
    account_id integer NOT NULL REFERENCES accounts,
    total numeric NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
"""


@dataclass
class Endpoints:
    nginx_url: str
    prometheus_url: str
    postgres: dict  # psycopg connection keywords for the `shop` database
    redis_port: int
    held: list = field(default_factory=list)

    def connect(self, **overrides) -> psycopg.Connection:
        return psycopg.connect(**(self.postgres | overrides), autocommit=True, connect_timeout=5)

    def cache(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.redis_port, socket_timeout=5)

    def close(self) -> None:
        for connection in self.held:
            connection.close()
        self.held.clear()


def schema_create(endpoints: Endpoints) -> None:
    with endpoints.connect(dbname="postgres") as admin:
        admin.execute("CREATE DATABASE shop")
    with endpoints.connect() as shop:
        shop.execute(SCHEMA)


def requests_send(endpoints: Endpoints, requests=REQUESTS) -> None:
    with httpx2.Client(base_url=endpoints.nginx_url, timeout=5) as client:
        for method, path, count, _ in requests:
            for _ in range(count):
                client.request(method, path)


def _order(connection: psycopg.Connection) -> None:
    connection.execute("INSERT INTO orders (account_id, total) VALUES (1 + (random() * 99)::int, 12.5)")


def _rollback(connection: psycopg.Connection) -> None:
    with connection.transaction(force_rollback=True):
        _order(connection)


def _deadlock(endpoints: Endpoints) -> None:
    """Two transactions lock rows 1 and 2 in opposite orders; PostgreSQL aborts one of them."""
    meet = threading.Barrier(2, timeout=10)

    def transfer(first: int, second: int) -> None:
        with endpoints.connect() as connection:
            try:
                with connection.transaction():
                    connection.execute("UPDATE accounts SET balance = balance - 1 WHERE id = %s", (first,))
                    meet.wait()
                    connection.execute("UPDATE accounts SET balance = balance + 1 WHERE id = %s", (second,))
            except psycopg.errors.DeadlockDetected:
                pass

    pair = [threading.Thread(target=transfer, args=args) for args in ((1, 2), (2, 1))]
    for thread in pair:
        thread.start()
    for thread in pair:
        thread.join(timeout=15)


def _slow(endpoints: Endpoints, seconds: float) -> None:
    with endpoints.connect() as connection:
        connection.execute("SELECT pg_sleep(%s)", (seconds,))


def _refused(endpoints: Endpoints, **target) -> int:
    """Connection attempts that the server refuses (FATAL in its log)."""
    refused = 0
    try:
        endpoints.connect(**target).close()
    except psycopg.OperationalError:
        refused += 1
    return refused


def _past_the_limit(endpoints: Endpoints, max_connections: int) -> None:
    """Open connections until the server refuses, try `REFUSED_CONNECTIONS` times more, then close."""
    extra = []
    try:
        for _ in range(max_connections):
            try:
                extra.append(endpoints.connect())
            except psycopg.OperationalError:
                break
        for _ in range(REFUSED_CONNECTIONS - 1):
            _refused(endpoints)
    finally:
        for connection in extra:
            connection.close()


def postgres_burst(endpoints: Endpoints, *, max_connections: int) -> None:
    slow = [threading.Thread(target=_slow, args=(endpoints, seconds)) for seconds in SLOW_SECONDS]
    for thread in slow:
        thread.start()
    with endpoints.connect() as connection:
        for _ in range(COMMITS):
            _order(connection)
        for _ in range(ROLLBACKS):
            _rollback(connection)
        for _, statement, times in FAILING:
            for _ in range(times):
                with contextlib.suppress(psycopg.Error):
                    connection.execute(statement)
    for _ in range(DEADLOCKS):
        _deadlock(endpoints)
    for thread in slow:
        thread.join(timeout=30)
    for _ in range(MISSING_DATABASE_ATTEMPTS):
        _refused(endpoints, dbname=MISSING_DATABASE)
    _past_the_limit(endpoints, max_connections)
    endpoints.held += [endpoints.connect() for _ in range(HELD_CONNECTIONS)]


def cache_burst(endpoints: Endpoints) -> None:
    cache = endpoints.cache()
    pipeline = cache.pipeline(transaction=False)
    for index in range(CACHE_WRITES):
        pipeline.set(f"cache:product:{index}", CACHE_VALUE)
    pipeline.execute()
    for index in range(CACHE_WRITES - CACHE_HITS, CACHE_WRITES):
        pipeline.get(f"cache:product:{index}")
    for index in range(CACHE_MISSES):
        pipeline.get(f"cache:missing:{index}")
    pipeline.execute()
    cache.close()


def burst(endpoints: Endpoints, *, max_connections: int) -> None:
    requests_send(endpoints)
    cache_burst(endpoints)
    postgres_burst(endpoints, max_connections=max_connections)


class Trickle(threading.Thread):
    """Once a second: two good requests, a 502 and a 404 every fifth second; an order and a rollback
    (the exporter's own queries commit too: the share stays well above the rule's 2%), a slow statement every thirtieth, a deadlock every sixtieth; 50 cache writes (still
    evicting) and reads that hit and miss; a dashboard's instant query to Prometheus (its query
    handler's latency histogram has samples). Stops when told or after `max_seconds`."""

    def __init__(self, endpoints: Endpoints, *, max_seconds: float) -> None:
        super().__init__(name="exporter-stack-trickle", daemon=True)
        self.endpoints = endpoints
        self.max_seconds = max_seconds
        self.stopping = threading.Event()
        self.failures: list[str] = []

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)

    def run(self) -> None:
        deadline = time.monotonic() + self.max_seconds
        tick = 0
        with (
            self.endpoints.connect() as connection,
            httpx2.Client(base_url=self.endpoints.nginx_url, timeout=5) as client,
        ):
            cache = self.endpoints.cache()
            while not self.stopping.wait(1.0) and time.monotonic() < deadline:
                tick += 1
                try:
                    self._second(tick, client, connection, cache)
                except (httpx2.HTTPError, psycopg.Error, redis.RedisError) as exc:
                    # The stack is being stopped under it, or a server died: the tests say which.
                    self.failures.append(f"{type(exc).__name__}: {exc}")
                    if len(self.failures) > 10:
                        return
            cache.close()

    def _second(self, tick: int, client, connection, cache) -> None:
        client.get("/")
        client.get("/api/catalog/items")
        client.get(f"{self.endpoints.prometheus_url}/api/v1/query", params={"query": "sum by (job) (up)"})
        if tick % 5 == 0:
            client.get("/api/payments/charge")
            client.get("/static/app.js")
        _order(connection)
        _rollback(connection)
        if tick % 30 == 0:
            _slow(self.endpoints, 0.3)
        if tick % 60 == 0:
            _deadlock(self.endpoints)
        pipeline = cache.pipeline(transaction=False)
        for index in range(50):
            pipeline.set(f"cache:product:t{tick}:{index}", CACHE_VALUE)
        for index in range(10):
            pipeline.get(f"cache:product:t{tick}:{index}")
            pipeline.get(f"cache:missing:t{tick}:{index}")
        pipeline.execute()
