"""A stand-in for llama.cpp's llama-server, for `manage.py llm_real` in tests: a script taking
llama-server's arguments that serves the fake OpenAI server's honest replies and `/health`."""

import sys
import textwrap
from pathlib import Path

from django.conf import settings

STAND_IN = textwrap.dedent(
    """\
    import argparse, json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    sys.path.insert(0, {base_dir!r})
    from diagnosis.evaluation.fake_llm.server import FakeOpenAIServer

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    options, _ = parser.parse_known_args()
    fake = FakeOpenAIServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, headers, body = fake.respond(request)
            payload = json.dumps(body, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    ThreadingHTTPServer(("127.0.0.1", options.port), Handler).serve_forever()
    """
)


def llama_stand_in(folder: Path) -> tuple[Path, Path]:
    """(server, model): the stand-in script and a model file for it to be given."""
    server = folder / "llama-server"
    server.write_text(f"#!{sys.executable}\n" + STAND_IN.format(base_dir=str(settings.BASE_DIR)))
    server.chmod(0o755)
    model = folder / "model.gguf"
    model.write_bytes(b"GGUF")
    return server, model
