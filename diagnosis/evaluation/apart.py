"""A stand-in server run in a process of its own, as the service it stands in for runs: its work is not
the measured code's. In the measured process, a server thread competes with the investigation for one
interpreter lock, and the benchmark's time per case counted the stand-in's answering as the product's.

The server is built in a spawned process (not forked: the parent holds threads and connections) from
its class and arguments, which are pickled to get there; it serves until told to stop or until the
parent is gone.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from multiprocessing.connection import Connection
from typing import Any, Protocol

# How long a server may take to be built and listening (a TrainTicket case's 40,000 spans: about 1 s,
# the interpreter's start included).
STARTED_WITHIN = 120.0
STOPPED_WITHIN = 10.0
STOP = "stop"


class Served(Protocol):
    url: str


@contextmanager
def served_apart(server: Callable[..., AbstractContextManager[Served]], *arguments: Any) -> Iterator[str]:
    """`server(*arguments)` entered in a process of its own while this is; yields its URL (RuntimeError
    when it does not come up)."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=_serve, args=(theirs, server, arguments), daemon=True)
    process.start()
    theirs.close()
    try:
        if not ours.poll(STARTED_WITHIN):
            raise RuntimeError(f"{server.__name__} 未在 {STARTED_WITHIN:.0f} 秒内启动")
        try:
            url = ours.recv()
        except EOFError as error:
            raise RuntimeError(f"{server.__name__} 启动失败（进程退出码 {process.exitcode}）") from error
        yield url
    finally:
        with suppress(OSError):
            ours.send(STOP)
        process.join(STOPPED_WITHIN)
        if process.is_alive():
            process.terminate()
            process.join()
        ours.close()


def _serve(
    connection: Connection, server: Callable[..., AbstractContextManager[Served]], arguments: tuple
) -> None:
    with server(*arguments) as running:
        connection.send(running.url)
        # Until told to stop, or until the parent is gone (EOFError): nothing is left to serve.
        with suppress(EOFError):
            connection.recv()
