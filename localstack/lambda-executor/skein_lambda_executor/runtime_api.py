"""A Lambda Runtime API (2018-06-01) for one execution environment.

The function's runtime (an aws-lambda-go ``bootstrap``, say) polls
``GET /2018-06-01/runtime/invocation/next`` for its next event and posts the
result to ``.../invocation/<id>/response`` or ``.../invocation/<id>/error``;
``POST .../runtime/init/error`` reports a failed init. One server serves one
runtime process, on 127.0.0.1 and a port of its own.

Every accepted connection gets TCP_NODELAY: the runtime's requests are small
and each answer is written in one piece, so Nagle's algorithm with the
peer's delayed ACK would add tens of milliseconds to every invoke.
"""

import json
import logging
import queue
import socket
import threading
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = logging.getLogger(__name__)

PREFIX = "/2018-06-01/runtime"

# Bound on what the runtime may post (AWS: 6 MB synchronous responses).
MAX_BODY_BYTES = 6 * 1024 * 1024 + 1024


class Invocation:
    """One event handed to the runtime, and the future of its result.

    The future's result is ``(is_error, body)``: the bytes the runtime posted
    to /response (is_error False) or to /error (True).
    """

    def __init__(self, request_id, payload, deadline_ms, function_arn, trace_id=""):
        self.request_id = request_id
        self.payload = payload if isinstance(payload, bytes) else str(payload).encode()
        self.deadline_ms = int(deadline_ms)
        self.function_arn = function_arn
        self.trace_id = trace_id or ""
        self.future = Future()


class RuntimeAPI:
    """Serves the Runtime API to one runtime process.

    ``submit`` hands an Invocation to the runtime's next poll; ``ready`` is
    set at the runtime's first poll (its init is over); ``init_error`` holds
    the body of a posted init error, if any (and sets ``ready`` too).
    """

    def __init__(self):
        self.ready = threading.Event()
        self.init_error = None
        self._pending = queue.Queue()
        self._lock = threading.Lock()
        self._current = {}  # request id -> Invocation handed out, not yet answered
        self._closed = threading.Event()
        api = self

        class Handler(_Handler):
            owner = api

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="skein-runtime-api",
            daemon=True,
        )
        self._thread.start()

    @property
    def address(self):
        """host:port, the value of AWS_LAMBDA_RUNTIME_API."""
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def submit(self, inv):
        """Queues inv for the runtime's next poll."""
        with self._lock:
            self._current[inv.request_id] = inv
        self._pending.put(inv)

    def forget(self, inv):
        """Drops inv (timed out or abandoned): a late answer is ignored."""
        with self._lock:
            self._current.pop(inv.request_id, None)

    def fail_all(self, exc):
        """Fails every invocation not answered yet with exc (the runtime died)."""
        with self._lock:
            invs = list(self._current.values())
            self._current.clear()
        for inv in invs:
            if not inv.future.done():
                inv.future.set_exception(exc)

    def close(self):
        self._closed.set()
        self.fail_all(ConnectionAbortedError("runtime API closed"))
        self._server.shutdown()
        self._server.server_close()

    # --- called by the handler -------------------------------------------------------------
    def _next(self):
        self.ready.set()
        while not self._closed.is_set():
            try:
                inv = self._pending.get(timeout=0.5)
            except queue.Empty:
                continue
            with self._lock:
                live = inv.request_id in self._current
            if live:
                return inv
        return None

    def _answer(self, request_id, is_error, body):
        with self._lock:
            inv = self._current.pop(request_id, None)
        if inv is None:
            return False
        if not inv.future.done():
            inv.future.set_result((is_error, body))
        return True

    def _init_error(self, body):
        if self.init_error is None:
            self.init_error = body
        self.ready.set()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def get_request(self):
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr

    def handle_error(self, request, client_address):
        # A runtime killed mid-request (a timeout, a stop) resets its connections: not worth a traceback.
        LOG.debug("runtime API connection from %s failed", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    owner: RuntimeAPI = None
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass

    def _reply(self, status, body=b"", headers=None):
        lines = [f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}"]
        hdrs = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        hdrs.update(headers or {})
        lines += [f"{k}: {v}" for k, v in hdrs.items()]
        # One write: status line, headers and body leave in one segment.
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        self.wfile.flush()

    def _error(self, status, error_type, message):
        body = json.dumps({"errorType": error_type, "errorMessage": message}).encode()
        self._reply(status, body)

    def _body(self):
        """The request body (Content-Length or chunked), or None past MAX_BODY_BYTES."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._chunked()
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY_BYTES:
            self.close_connection = True
            return None
        return self.rfile.read(n) if n > 0 else b""

    def _chunked(self):
        # aws-lambda-go streams its responses: Transfer-Encoding: chunked.
        parts, total = [], 0
        while True:
            size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            total += size
            if total > MAX_BODY_BYTES:
                self.close_connection = True
                return None
            parts.append(self.rfile.read(size))
            self.rfile.readline(8)  # the chunk's CRLF

    def do_GET(self):
        if self.path != PREFIX + "/invocation/next":
            self._error(404, "InvalidRequest", f"no such path: {self.path}")
            return
        inv = self.owner._next()
        if inv is None:
            self._error(503, "ServiceUnavailable", "runtime API closed")
            self.close_connection = True
            return
        headers = {
            "Lambda-Runtime-Aws-Request-Id": inv.request_id,
            "Lambda-Runtime-Deadline-Ms": str(inv.deadline_ms),
            "Lambda-Runtime-Invoked-Function-Arn": inv.function_arn,
        }
        if inv.trace_id:
            headers["Lambda-Runtime-Trace-Id"] = inv.trace_id
        self._reply(200, inv.payload, headers)

    def do_POST(self):
        body = self._body()
        if body is None:
            self._error(413, "RequestEntityTooLarge", f"body over {MAX_BODY_BYTES} bytes")
            return
        path = self.path
        if path == PREFIX + "/init/error":
            self.owner._init_error(body)
            self._reply(202, b'{"status":"OK"}')
            return
        parts = path[len(PREFIX) :].strip("/").split("/") if path.startswith(PREFIX) else []
        if len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
            if self.owner._answer(parts[1], parts[2] == "error", body):
                self._reply(202, b'{"status":"OK"}')
            else:
                self._error(400, "InvalidRequestID", f"unknown or finished request id {parts[1]}")
            return
        self._error(404, "InvalidRequest", f"no such path: {path}")
