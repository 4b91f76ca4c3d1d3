"""Unit tests of the sandbox and its Runtime API, without LocalStack.

Run from localstack/lambda-executor: python3 -m unittest discover -s tests -v
The function under test is a Python bootstrap speaking the Runtime API
(FIXTURE below): its event says what to do.
"""

import json
import os
import signal
import socket
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from skein_lambda_executor import runtime_api, sandbox  # noqa: E402

FIXTURE = r'''#!{python}
import json, os, subprocess, sys, time, http.client
host, port = os.environ["AWS_LAMBDA_RUNTIME_API"].split(":")
init = os.environ.get("FIXTURE_INIT", "")
conn = http.client.HTTPConnection(host, int(port))
if init == "exit":
    sys.exit(3)
if init == "init-error":
    conn.request("POST", "/2018-06-01/runtime/init/error",
                 body=json.dumps({{"errorType": "Fixture.Init", "errorMessage": "no config"}}))
    conn.getresponse().read()
    time.sleep(60)
hold = []
while True:
    conn.request("GET", "/2018-06-01/runtime/invocation/next")
    r = conn.getresponse()
    event = json.loads(r.read())
    rid = r.getheader("Lambda-Runtime-Aws-Request-Id")
    op = event.get("op")
    print("handling", op, flush=True)
    base = "/2018-06-01/runtime/invocation/" + rid
    if op == "error":
        conn.request("POST", base + "/error", body=json.dumps({{"errorType": "Boom", "errorMessage": "it failed"}}))
    elif op == "sleep":
        with open(event["pidfile"], "w") as f:
            f.write(str(subprocess.Popen(["sleep", "300"]).pid))
        time.sleep(300)
    elif op == "exit":
        os._exit(7)
    elif op == "alloc":
        hold.append(b"\x01" * (event["mb"] << 20))
        time.sleep(300)
    elif op == "chunked":
        conn.putrequest("POST", base + "/response")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        for part in (b'{{"a":', b'"chunked"}}'):
            conn.send(b"%x\r\n%s\r\n" % (len(part), part))
        conn.send(b"0\r\n\r\n")
    else:
        out = {{"event": event, "pid": os.getpid(), "deadline": r.getheader("Lambda-Runtime-Deadline-Ms"),
               "arn": r.getheader("Lambda-Runtime-Invoked-Function-Arn"),
               "env": {{k: os.environ.get(k) for k in ("MY_VAR", "LAMBDA_TASK_ROOT", "TMPDIR", "PATH")}},
               "cwd": os.getcwd()}}
        conn.request("POST", base + "/response", body=json.dumps(out))
    conn.getresponse().read()
'''


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead too
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_dead(pid, seconds=30):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


class SandboxTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.code = self.dir.name
        path = os.path.join(self.code, "bootstrap")
        with open(path, "w") as f:
            f.write(FIXTURE.format(python=sys.executable))
        os.chmod(path, 0o755)
        self.boxes = []

    def tearDown(self):
        for b in self.boxes:
            b.stop()
        self.dir.cleanup()

    def box(self, timeout=60, memory=0, env=None):
        b = sandbox.Sandbox(self.code, dict(env or {}, MY_VAR="mine"), timeout, memory, "arn:fn", startup_sec=60)
        self.boxes.append(b)
        return b

    def invoke(self, b, event, rid="req-1"):
        is_error, body, logs = b.invoke(rid, json.dumps(event))
        return is_error, json.loads(body) if body else None, logs

    def test_success_passes_event_env_and_deadline(self):
        b = self.box(timeout=60)
        before = time.time()
        is_error, out, logs = self.invoke(b, {"op": "echo", "n": 1})
        self.assertFalse(is_error, out)
        self.assertEqual(out["event"], {"op": "echo", "n": 1})
        self.assertEqual(out["arn"], "arn:fn")
        self.assertEqual(out["env"]["MY_VAR"], "mine")
        self.assertEqual(out["env"]["LAMBDA_TASK_ROOT"], self.code)
        self.assertEqual(os.path.realpath(out["cwd"]), os.path.realpath(self.code))
        self.assertEqual(out["env"]["PATH"], sandbox.BASE_PATH)
        self.assertTrue(out["env"]["TMPDIR"] and os.path.isdir(out["env"]["TMPDIR"]))
        deadline = int(out["deadline"]) / 1000
        self.assertGreater(deadline, before + 59)
        self.assertLess(deadline, time.time() + 61)
        self.assertIn("REPORT RequestId: req-1", logs)
        # The runtime's output is read as it comes: an invocation's logs hold what arrived by its end.
        end = time.monotonic() + 30
        while "handling echo" not in b.all_logs() and time.monotonic() < end:
            time.sleep(0.05)
        self.assertIn("handling echo", b.all_logs())
        # warm: the same process answers the next invocation
        _, again, _ = self.invoke(b, {"op": "echo"}, "req-2")
        self.assertEqual(again["pid"], out["pid"])

    def test_handler_error(self):
        is_error, out, _ = self.invoke(self.box(), {"op": "error"})
        self.assertTrue(is_error)
        self.assertEqual(out, {"errorType": "Boom", "errorMessage": "it failed"})

    def test_chunked_response(self):
        is_error, out, _ = self.invoke(self.box(), {"op": "chunked"})
        self.assertFalse(is_error)
        self.assertEqual(out, {"a": "chunked"})

    def test_timeout_kills_process_group_and_restarts_cold(self):
        b = self.box(timeout=1)
        _, first, _ = self.invoke(b, {"op": "echo"})
        pidfile = os.path.join(self.code, "child.pid")
        is_error, out, _ = self.invoke(b, {"op": "sleep", "pidfile": pidfile}, "req-slow")
        self.assertTrue(is_error)
        self.assertEqual(out["errorType"], "Sandbox.Timedout")
        self.assertIn("RequestId: req-slow Error: Task timed out after 1.00 seconds", out["errorMessage"])
        self.assertTrue(wait_dead(first["pid"]), "the runtime outlived its timeout")
        with open(pidfile) as f:
            child = int(f.read())
        self.assertTrue(wait_dead(child), "the runtime's child outlived the timeout")
        is_error, again, _ = self.invoke(b, {"op": "echo"}, "req-after")
        self.assertFalse(is_error, again)
        self.assertNotEqual(again["pid"], first["pid"])

    def test_crash_during_invoke(self):
        is_error, out, _ = self.invoke(self.box(), {"op": "exit"})
        self.assertTrue(is_error)
        self.assertEqual(out["errorType"], "Runtime.ExitError")
        self.assertIn("exit status 7", out["errorMessage"])

    def test_memory_limit(self):
        if not os.path.exists("/proc/self/status"):
            self.skipTest("no /proc: the memory limit is not enforced here")
        is_error, out, _ = self.invoke(self.box(memory=64), {"op": "alloc", "mb": 256})
        self.assertTrue(is_error)
        self.assertEqual(out["errorType"], "Runtime.OutOfMemory")

    def test_memory_limit_off(self):
        os.environ[sandbox.MEMORY_ENV] = "0"
        try:
            b = self.box(timeout=2, memory=64)
        finally:
            del os.environ[sandbox.MEMORY_ENV]
        is_error, out, _ = self.invoke(b, {"op": "alloc", "mb": 256})
        self.assertTrue(is_error)
        self.assertEqual(out["errorType"], "Sandbox.Timedout")

    def test_init_exit(self):
        b = self.box(env={"FIXTURE_INIT": "exit"})
        with self.assertRaises(sandbox.SandboxError) as cm:
            b.start()
        self.assertEqual(cm.exception.error_type, "Runtime.ExitError")
        self.assertIn("exit status 3", cm.exception.payload.decode())

    def test_init_error(self):
        b = self.box(env={"FIXTURE_INIT": "init-error"})
        with self.assertRaises(sandbox.SandboxError) as cm:
            b.start()
        self.assertEqual(cm.exception.error_type, "Fixture.Init")
        self.assertIsNone(b.pid, "the runtime was left running after its init error")

    def test_stop_leaves_no_process(self):
        b = self.box()
        _, out, _ = self.invoke(b, {"op": "echo"})
        b.stop()
        self.assertTrue(wait_dead(out["pid"]))
        is_error, body, _ = b.invoke("req-late", "{}")
        self.assertTrue(is_error)
        self.assertIn(b"Runtime.Stopped", body)


class LaunchTest(unittest.TestCase):
    def elf(self, machine):
        f = tempfile.NamedTemporaryFile(delete=False)
        f.write(b"\x7fELF\x02\x01\x01" + b"\x00" * 11 + machine.to_bytes(2, "little") + b"\x00" * 44)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_arm64_runs_under_qemu(self):
        import platform

        if platform.machine() != "x86_64":
            self.skipTest("the arm64 case needs a non-arm64 host")
        path = self.elf(sandbox.EM_AARCH64)
        qemu = sys.executable  # any executable file stands for qemu here
        self.assertEqual(sandbox.launch_command(path, {sandbox.QEMU_ENV: qemu}), [qemu, path])
        with self.assertRaises(sandbox.SandboxError):
            sandbox.launch_command(path, {sandbox.QEMU_ENV: "/nonexistent/qemu"})

    def test_native_and_script_run_directly(self):
        import platform

        if platform.machine() != "x86_64":
            self.skipTest("written for an x86_64 host")
        path = self.elf(sandbox.EM_X86_64)
        self.assertEqual(sandbox.launch_command(path, {}), [path])
        script = tempfile.NamedTemporaryFile("w", delete=False)
        script.write("#!/bin/sh\n")
        script.close()
        self.addCleanup(os.unlink, script.name)
        self.assertEqual(sandbox.launch_command(script.name, {}), [script.name])


class RuntimeAPITest(unittest.TestCase):
    def test_accepted_connections_have_tcp_nodelay(self):
        srv = runtime_api._Server(("127.0.0.1", 0), runtime_api._Handler)
        self.addCleanup(srv.server_close)
        client = socket.create_connection(srv.server_address[:2])
        self.addCleanup(client.close)
        conn, _ = srv.get_request()
        self.addCleanup(conn.close)
        self.assertNotEqual(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), 0)

    def test_unknown_request_id_is_refused(self):
        api = runtime_api.RuntimeAPI()
        self.addCleanup(api.close)
        import http.client

        host, port = api.address.split(":")
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        c.request("POST", "/2018-06-01/runtime/invocation/nope/response", body=b"{}")
        self.assertEqual(c.getresponse().status, 400)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    unittest.main()
