"""Tests of the LocalStack adapter (executor.py, plugin.py).

They need localstack-core, so they run with LocalStack's own interpreter
(after pip install of this package, for the entry point):

    $VENV/bin/python -m unittest discover -s localstack/lambda-executor/tests -v

Elsewhere they skip, saying so; test_sandbox.py runs anywhere.
"""

import importlib.util
import json
import os
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))



def _have_localstack():
    # (run from the repository's root, "localstack" alone would find its localstack/ directory)
    try:
        return importlib.util.find_spec("localstack.services.lambda_") is not None
    except ImportError:
        return False


HAVE_LOCALSTACK = _have_localstack()

BOOTSTRAP = r"""#!{python}
import http.client, json, os, sys
host, port = os.environ["AWS_LAMBDA_RUNTIME_API"].split(":")
if os.environ.get("FAIL_INIT"):
    sys.exit(4)
c = http.client.HTTPConnection(host, int(port))
while True:
    c.request("GET", "/2018-06-01/runtime/invocation/next")
    r = c.getresponse()
    event = json.loads(r.read())
    rid = r.getheader("Lambda-Runtime-Aws-Request-Id")
    kind = "error" if event.get("fail") else "response"
    c.request("POST", "/2018-06-01/runtime/invocation/%s/%s" % (rid, kind),
              body=json.dumps({{"echo": event, "var": os.environ.get("MY_VAR")}}))
    c.getresponse().read()
"""


@unittest.skipUnless(HAVE_LOCALSTACK, "localstack-core is not importable: run with LocalStack's venv python")
class ExecutorTest(unittest.TestCase):
    def setUp(self):
        from localstack.aws.api.lambda_ import PackageType

        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        path = os.path.join(self.dir.name, "bootstrap")
        with open(path, "w") as f:
            f.write(BOOTSTRAP.format(python=sys.executable))
        os.chmod(path, 0o755)
        code = types.SimpleNamespace(
            get_unzipped_code_location=lambda: self.dir.name, prepare_for_execution=lambda: None
        )
        self.version = types.SimpleNamespace(
            qualified_arn="arn:aws:lambda:us-east-1:000000000000:function:f:$LATEST",
            config=types.SimpleNamespace(
                code=code, timeout=30, memory_size=128, runtime="provided.al2023", package_type=PackageType.Zip
            ),
        )

    def executor(self):
        from skein_lambda_executor.executor import LocalRuntimeExecutor

        ex = LocalRuntimeExecutor("exec-1", self.version)
        self.addCleanup(ex.stop)
        return ex

    def test_invoke_results(self):
        ex = self.executor()
        ex.start({"MY_VAR": "v", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": 128})
        ok = ex.invoke({"invoke-id": "r1", "payload": '{"n": 1}', "trace-id": "Root=1-2-3"})
        self.assertFalse(ok.is_error)
        self.assertEqual(ok.request_id, "r1")
        self.assertEqual(json.loads(ok.payload), {"echo": {"n": 1}, "var": "v"})
        bad = ex.invoke({"invoke-id": "r2", "payload": '{"fail": true}'})
        self.assertTrue(bad.is_error)
        self.assertIsNotNone(bad.logs)

    def test_failed_start_is_a_status_error(self):
        from localstack.services.lambda_.invocation.executor_endpoint import StatusErrorException

        ex = self.executor()
        with self.assertRaises(StatusErrorException) as cm:
            ex.start({"FAIL_INIT": "1"})
        self.assertEqual(json.loads(cm.exception.payload)["errorType"], "Runtime.ExitError")

    def test_prepare_rejects_other_runtimes(self):
        from localstack.services.lambda_.invocation.runtime_executor import LambdaRuntimeException
        from skein_lambda_executor.executor import LocalRuntimeExecutor

        self.version.config.runtime = "python3.12"
        with self.assertRaises(LambdaRuntimeException):
            LocalRuntimeExecutor.prepare_version(self.version)
        self.version.config.runtime = "provided.al2023"
        LocalRuntimeExecutor.prepare_version(self.version)

    def test_registered_by_name(self):
        from localstack.services.lambda_.invocation.runtime_executor import EXECUTOR_PLUGIN_MANAGER
        from skein_lambda_executor import NAME

        if not EXECUTOR_PLUGIN_MANAGER.exists(NAME):
            self.fail(f"no {NAME!r} executor plugin: pip install --no-deps --no-build-isolation localstack/lambda-executor")
        self.assertEqual(EXECUTOR_PLUGIN_MANAGER.load(NAME).load().__name__, "LocalRuntimeExecutor")


if __name__ == "__main__":
    unittest.main()
