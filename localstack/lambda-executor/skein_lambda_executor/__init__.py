"""skein-lambda-executor: a LocalStack Lambda runtime executor that runs functions as local processes.

LocalStack core selects it with ``LAMBDA_RUNTIME_EXECUTOR=skein-local`` (the
plugin registers itself in the ``localstack.lambda.runtime_executor`` entry
point group). See README.md.
"""

NAME = "skein-local"
