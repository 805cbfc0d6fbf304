"""A scheduler extender service on 127.0.0.1 for tests: real HTTP, answers chosen per test."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Route = Callable[[dict[str, Any]], tuple[int, Any]]


class FakeExtender:
    """An extender service: ``routes`` maps a path (``verb``, or ``prefix/verb`` for several
    extenders on one server) to a function of the request body that returns (status,
    answer); ``seen`` keeps every (path, body)."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[tuple[str, dict[str, Any]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                path = self.path.removeprefix("/scheduler/")
                verb = path.rsplit("/", 1)[-1]
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                assert self.headers["Content-Type"] == "application/json"
                route = fake.routes.get(path) or fake.routes[verb]
                fake.seen.append((path if path in fake.routes else verb, body))
                status, answer = route(body)
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up (timed out, refused the certificate)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/scheduler/"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
