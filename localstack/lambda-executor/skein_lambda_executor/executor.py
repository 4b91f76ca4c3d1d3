"""LocalStack's RuntimeExecutor interface over a Sandbox (a local process).

LocalStack's docker executor starts a container whose init binary serves
the Runtime API and posts results back to LocalStack's executor endpoint.
This executor needs neither: the Sandbox serves the Runtime API itself and
``invoke`` returns the result directly.
"""

import logging
import time

from localstack import config
from localstack.aws.api.lambda_ import PackageType
from localstack.services.lambda_.invocation.executor_endpoint import NAMESPACE, StatusErrorException
from localstack.services.lambda_.invocation.lambda_models import FunctionVersion, InvocationResult
from localstack.services.lambda_.invocation.runtime_executor import LambdaRuntimeException, RuntimeExecutor

from .sandbox import Sandbox, SandboxError

LOG = logging.getLogger(__name__)

# The custom runtimes whose code is a bootstrap executable.
SUPPORTED_RUNTIMES = ("provided.al2023", "provided.al2", "provided")


def _gateway_host():
    host = config.GATEWAY_LISTEN[0].host
    return "127.0.0.1" if host in ("", "0.0.0.0", "::", "[::]") else host


class LocalRuntimeExecutor(RuntimeExecutor):
    def __init__(self, id: str, function_version: FunctionVersion) -> None:
        super().__init__(id=id, function_version=function_version)
        self.sandbox = None

    def start(self, env_vars: dict[str, str]) -> None:
        cfg = self.function_version.config
        self.sandbox = Sandbox(
            code_dir=cfg.code.get_unzipped_code_location(),
            env=env_vars,
            timeout_sec=cfg.timeout,
            memory_mb=cfg.memory_size,
            function_arn=self.function_version.qualified_arn,
            startup_sec=config.LAMBDA_RUNTIME_ENVIRONMENT_TIMEOUT,
            name=self.id,
        )
        started = time.monotonic()
        try:
            self.sandbox.start()
            LOG.debug(
                "Lambda %s: runtime %s started in %.0f ms",
                self.function_version.qualified_arn,
                self.id,
                (time.monotonic() - started) * 1000,
            )
        except SandboxError as e:
            LOG.warning(
                "Lambda %s: runtime failed to start: %s\n%s",
                self.function_version.qualified_arn,
                e,
                self.sandbox.all_logs(),
            )
            raise StatusErrorException(str(e), payload=e.payload) from e

    def stop(self) -> None:
        if self.sandbox is not None:
            self.sandbox.stop()

    def get_address(self) -> str:
        return "127.0.0.1"

    def get_endpoint_from_executor(self) -> str:
        return _gateway_host()

    def get_runtime_endpoint(self) -> str:
        port = config.GATEWAY_LISTEN[0].port
        return f"http://{_gateway_host()}:{port}{NAMESPACE}/{self.id}"

    def invoke(self, payload: dict[str, str]) -> InvocationResult:
        if self.sandbox is None:
            raise LambdaRuntimeException(f"executor {self.id} was not started")
        request_id = payload["invoke-id"]
        started = time.monotonic()
        is_error, body, logs = self.sandbox.invoke(
            request_id, payload.get("payload") or "", payload.get("trace-id") or ""
        )
        LOG.debug("Lambda %s: invocation %s took %.0f ms", self.function_version.qualified_arn, request_id,
                  (time.monotonic() - started) * 1000)
        return InvocationResult(request_id=request_id, payload=body, is_error=is_error, logs=logs)

    def get_logs(self) -> str:
        return self.sandbox.all_logs() if self.sandbox is not None else ""

    @classmethod
    def prepare_version(cls, function_version: FunctionVersion) -> None:
        cfg = function_version.config
        if cfg.package_type != PackageType.Zip or not cfg.code:
            raise LambdaRuntimeException("the skein-local executor runs only .zip functions")
        if cfg.runtime not in SUPPORTED_RUNTIMES:
            raise LambdaRuntimeException(
                f"the skein-local executor runs only custom runtimes {SUPPORTED_RUNTIMES}, not {cfg.runtime}"
            )
        cfg.code.prepare_for_execution()

    @classmethod
    def cleanup_version(cls, function_version: FunctionVersion) -> None:
        pass
