"""The plux plugin LocalStack loads by LAMBDA_RUNTIME_EXECUTOR's name."""

from localstack.services.lambda_.invocation.plugins import RuntimeExecutorPlugin

from . import NAME


class LocalRuntimeExecutorPlugin(RuntimeExecutorPlugin):
    name = NAME

    def load(self, *args, **kwargs):
        from .executor import LocalRuntimeExecutor

        return LocalRuntimeExecutor
