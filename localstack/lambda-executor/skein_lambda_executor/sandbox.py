"""One Lambda execution environment as a local process.

A Sandbox runs a function's ``bootstrap`` (a provided.al2023 / provided.al2
custom runtime) from its unzipped code directory as a child process in a
process group of its own, under qemu-aarch64 when the binary is an arm64
ELF on another machine, and serves it a RuntimeAPI. It enforces the
function's timeout (the process group is killed and the invocation answers
``Sandbox.Timedout``, as Lambda does) and its memory size (the runtime's
resident set is sampled while an invocation runs; past the limit the group
is killed and the invocation answers ``Runtime.OutOfMemory``; by default
only for a native runtime: see MEMORY_ENV). A runtime
killed or crashed is started again, cold, at the next invocation.

Nothing here imports LocalStack: executor.py adapts a Sandbox to
LocalStack's RuntimeExecutor interface, and the unit tests drive it
directly.
"""

import collections
import json
import os
import platform
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from .runtime_api import Invocation, RuntimeAPI

# Environment variable (of the LocalStack process) naming qemu-aarch64.
QEMU_ENV = "SKEIN_QEMU_AARCH64"
# Environment variable (of the LocalStack process) for the memory limit: unset, it is enforced on
# native runtimes only (an emulated one's resident set includes qemu's own, 50 MB and more);
# "1" enforces it on every runtime, "0" on none.
MEMORY_ENV = "SKEIN_LAMBDA_ENFORCE_MEMORY"

EM_X86_64 = 62
EM_AARCH64 = 183
_HOST_MACHINE = {"x86_64": EM_X86_64, "amd64": EM_X86_64, "aarch64": EM_AARCH64, "arm64": EM_AARCH64}

# What the function's process gets besides the function's own environment.
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
# Bound on the runtime output a sandbox keeps (its log lines).
MAX_LOG_CHARS = 1 << 20
# How often the memory of a running invocation is sampled.
MEMORY_SAMPLE_SEC = 0.05


class SandboxError(Exception):
    """The sandbox cannot run the function (bad code, no qemu, init failed).

    ``payload`` is the Lambda error document to answer with (JSON bytes).
    """

    def __init__(self, error_type, message):
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.payload = json.dumps({"errorType": error_type, "errorMessage": message}).encode()


def elf_machine(path):
    """The ELF e_machine of path, or None when it is not an ELF file (a script)."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    order = "little" if head[5] == 1 else "big"
    return int.from_bytes(head[18:20], order)


def launch_command(bootstrap, environ=None):
    """The argv that runs bootstrap on this machine (qemu-aarch64 first for a foreign arm64 ELF)."""
    environ = os.environ if environ is None else environ
    machine = elf_machine(bootstrap)
    host = _HOST_MACHINE.get(platform.machine().lower())
    if machine is None or machine == host:
        return [bootstrap]
    if machine == EM_AARCH64:
        qemu = environ.get(QEMU_ENV) or shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
        if not qemu or not os.access(qemu, os.X_OK):
            raise SandboxError(
                "Runtime.InvalidEntrypoint",
                f"{bootstrap} is an arm64 binary and no qemu-aarch64 was found: set {QEMU_ENV} "
                "(bash scripts/qemu.sh path prints it)",
            )
        return [qemu, bootstrap]
    raise SandboxError("Runtime.InvalidEntrypoint", f"{bootstrap}: ELF machine {machine} cannot run here")


class Sandbox:
    """Runs one function's runtime process; one invocation at a time.

    code_dir holds the unzipped code (its ``bootstrap`` is the runtime);
    env is the function's environment (LocalStack's variables and the
    function's own); timeout_sec and memory_mb are the function's limits.
    """

    def __init__(self, code_dir, env, timeout_sec, memory_mb=0, function_arn="", startup_sec=20, name="lambda"):
        self.code_dir = str(code_dir)
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.timeout_sec = float(timeout_sec)
        self.memory_mb = int(memory_mb or 0)
        self.function_arn = function_arn
        self.startup_sec = float(startup_sec)
        self.name = name
        self.memory_policy = os.environ.get(MEMORY_ENV, "")
        self.enforce_memory = False  # decided at each start, by the runtime's launcher
        self._lock = threading.RLock()
        self._proc = None
        self._api = None
        self._tmp = None
        self._logs = collections.deque()
        self._log_chars = 0
        self._log_seq = 0  # lines ever logged
        self._log_lock = threading.Lock()
        self._stopped = False

    # --- lifecycle -------------------------------------------------------------------------
    def start(self):
        """Starts the runtime and waits for its first poll (its init done).

        Raises SandboxError when the runtime exits or reports an init error first.
        """
        with self._lock:
            if self._stopped:
                raise SandboxError("Runtime.Stopped", "the execution environment was stopped")
            if self._proc is not None and self._proc.poll() is None:
                return
            self._kill_locked()
            bootstrap = os.path.join(self.code_dir, "bootstrap")
            if not os.path.isfile(bootstrap):
                raise SandboxError("Runtime.InvalidEntrypoint", "no bootstrap file in the function's code")
            argv = launch_command(bootstrap)
            emulated = len(argv) > 1
            self.enforce_memory = self.memory_mb > 0 and (
                self.memory_policy == "1" or (self.memory_policy != "0" and not emulated)
            )
            self._api = RuntimeAPI()
            self._tmp = tempfile.mkdtemp(prefix=f"skein-lambda-{self.name}-")
            env = {"PATH": BASE_PATH, "LANG": "en_US.UTF-8"}
            env.update(self.env)
            env.update(
                {
                    "AWS_LAMBDA_RUNTIME_API": self._api.address,
                    "LAMBDA_TASK_ROOT": self.code_dir,
                    "TMPDIR": self._tmp,
                }
            )
            self._proc = _spawn(argv, env, self.code_dir)
            proc, api = self._proc, self._api
            threading.Thread(target=self._pump, args=(proc,), name="skein-lambda-log", daemon=True).start()
            threading.Thread(target=self._reap, args=(proc, api), name="skein-lambda-reap", daemon=True).start()
        deadline = time.monotonic() + self.startup_sec
        while not api.ready.wait(0.05):
            if proc.poll() is not None:
                raise SandboxError("Runtime.ExitError", f"Runtime exited with error: {_exit_status(proc.returncode)}")
            if time.monotonic() > deadline:
                self.kill()
                raise SandboxError("Runtime.InitTimeout", f"init did not finish in {self.startup_sec:.0f} s")
        if api.init_error is not None:
            self.kill()
            raise SandboxError(*_error_fields(api.init_error, "Runtime.InitError"))

    def stop(self):
        """Kills the runtime's process group and releases the sandbox for good."""
        with self._lock:
            self._stopped = True
            self._kill_locked()

    def kill(self):
        """Kills the runtime's process group; the next invocation starts it again."""
        with self._lock:
            self._kill_locked()

    def _kill_locked(self):
        proc, api, tmp = self._proc, self._api, self._tmp
        self._proc = self._api = self._tmp = None
        if proc is not None:
            _kill_group(proc)
        if api is not None:
            api.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    @property
    def pid(self):
        proc = self._proc
        return proc.pid if proc is not None else None

    # --- invocations -----------------------------------------------------------------------
    def invoke(self, request_id, payload, trace_id=""):
        """Runs one invocation; returns (is_error, body bytes, logs of the invocation)."""
        first_line = self._log_seq
        try:
            self.start()  # a no-op while the runtime lives
        except SandboxError as e:
            return True, e.payload, self.logs_since(first_line)
        with self._lock:
            proc, api = self._proc, self._api
        if proc is None or api is None:
            return True, SandboxError("Runtime.Stopped", "the execution environment was stopped").payload, ""
        start = time.monotonic()
        deadline = start + self.timeout_sec
        inv = Invocation(request_id, payload, int((time.time() + self.timeout_sec) * 1000), self.function_arn, trace_id)
        api.submit(inv)
        try:
            is_error, body = self._wait(inv, proc, deadline)
        except _Timeout:
            api.forget(inv)
            self.kill()
            is_error, body = True, _doc(
                "Sandbox.Timedout", f"RequestId: {request_id} Error: Task timed out after {self.timeout_sec:.2f} seconds"
            )
        except _OutOfMemory as e:
            api.forget(inv)
            self.kill()
            is_error, body = True, _doc(
                "Runtime.OutOfMemory",
                f"RequestId: {request_id} Error: Runtime exited with error: signal: killed "
                f"(memory {e.args[0]} MB over the function's {self.memory_mb} MB)",
            )
        except _Exited as e:
            self.kill()
            is_error, body = True, _doc(
                "Runtime.ExitError", f"RequestId: {request_id} Error: Runtime exited with error: {e.args[0]}"
            )
        took = (time.monotonic() - start) * 1000
        self._log(f"REPORT RequestId: {request_id}\tDuration: {took:.2f} ms")
        return is_error, body, self.logs_since(first_line)

    def _wait(self, inv, proc, deadline):
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Timeout()
            try:
                return inv.future.result(timeout=min(left, MEMORY_SAMPLE_SEC))
            except TimeoutError:
                pass
            except ConnectionAbortedError as e:
                code = proc.poll()
                raise _Exited(_exit_status(code) if code is not None else str(e)) from e
            if self.enforce_memory:
                used = _rss_mb(proc.pid)
                if used > self.memory_mb:
                    raise _OutOfMemory(used)

    # --- logs ------------------------------------------------------------------------------
    def _log(self, line):
        with self._log_lock:
            self._logs.append(line)
            self._log_chars += len(line) + 1
            self._log_seq += 1
            while self._log_chars > MAX_LOG_CHARS and len(self._logs) > 1:
                self._log_chars -= len(self._logs.popleft()) + 1

    def logs_since(self, seq):
        """The log lines written since line number seq (as many as are still kept)."""
        with self._log_lock:
            n = min(self._log_seq - seq, len(self._logs))
            return "".join(line + "\n" for line in list(self._logs)[len(self._logs) - n :])

    def all_logs(self):
        with self._log_lock:
            return "".join(line + "\n" for line in self._logs)

    def _pump(self, proc):
        try:
            for raw in proc.stdout:
                self._log(raw.decode("utf-8", "replace").rstrip("\n"))
        finally:
            proc.stdout.close()

    def _reap(self, proc, api):
        code = proc.wait()
        api.fail_all(ConnectionAbortedError(_exit_status(code)))


class _Timeout(Exception):
    pass


class _OutOfMemory(Exception):
    pass


class _Exited(Exception):
    pass


def _doc(error_type, message):
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()


def _error_fields(body, default_type):
    try:
        doc = json.loads(body)
        return str(doc.get("errorType") or default_type), str(doc.get("errorMessage") or "")
    except (ValueError, AttributeError):
        return default_type, body.decode("utf-8", "replace")


def _exit_status(code):
    if code is None:
        return "running"
    if code < 0:
        try:
            return f"signal: {signal.Signals(-code).name.lower()[3:]}"
        except ValueError:
            return f"signal: {-code}"
    return f"exit status {code}"


def _spawn(argv, env, cwd):
    """Starts argv in a new process group (session), its output piped.

    When setpriv is available, the child is also killed if LocalStack dies
    (PR_SET_PDEATHSIG), so a killed LocalStack leaves no runtime behind.
    """
    setpriv = shutil.which("setpriv")
    if setpriv:
        argv = [setpriv, "--pdeathsig", "KILL", "--"] + list(argv)
    return _SPAWNER.run(
        lambda: subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    )


class _Spawner:
    """Forks every runtime from one long-lived thread.

    PR_SET_PDEATHSIG fires when the thread that forked the child exits, not
    the process: LocalStack starts environments from short-lived worker
    threads, so the fork happens here instead.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._jobs = None

    def run(self, fn):
        with self._lock:
            if self._jobs is None:
                self._jobs = queue.Queue()
                threading.Thread(target=self._loop, name="skein-lambda-spawner", daemon=True).start()
        done = threading.Event()
        box = {}
        self._jobs.put((fn, box, done))
        done.wait()
        if "err" in box:
            raise box["err"]
        return box["ok"]

    def _loop(self):
        while True:
            fn, box, done = self._jobs.get()
            try:
                box["ok"] = fn()
            except BaseException as e:  # handed back to the caller
                box["err"] = e
            done.set()


_SPAWNER = _Spawner()


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0
