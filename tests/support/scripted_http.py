"""The loopback HTTP server under every scripted model API (`model_server` for Claude Code,
`responses_model` for Codex, `gemini_model` for Gemini CLI): it records each request's body
on the ScriptedModel and answers through the API's own `route`."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # model_server builds its server from this module
    from tests.support.model_server import ScriptedModel

__all__ = ["Reply", "Route", "serve"]

Reply = tuple[int, str, bytes]  # status, content type, body
Route = Callable[["ScriptedModel", str, dict[str, Any]], Reply]
NOT_FOUND: Reply = (404, "application/json", b'{"error": {"code": 404}}')


def _handler(model: ScriptedModel, route: Route) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test reads the recorded requests, not a log

        def _reply(self, reply: Reply) -> None:
            status, kind, payload = reply
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            model.record(self.path, {})
            self._reply(NOT_FOUND)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            model.record(self.path, body)
            self._reply(route(model, self.path.split("?")[0], body))

    return Handler


@contextmanager
def serve(model: ScriptedModel, route: Route, suffix: str = "") -> Iterator[ScriptedModel]:
    """`model` answering on a free loopback port (its `url`: the address plus `suffix`)
    until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(model, route))
    server.daemon_threads = True
    model.url = f"http://127.0.0.1:{server.server_address[1]}{suffix}"
    thread = threading.Thread(target=server.serve_forever, name="scripted-model", daemon=True)
    thread.start()
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
