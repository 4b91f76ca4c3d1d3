#!/usr/bin/env bash
# Deploys template.yaml into LocalStack the way users deploy it: `sam build` (scripts/template-check.sh's
# pinned SAM CLI and flags), then `sam deploy` against the LocalStack endpoint, whose CloudFormation
# expands the Serverless transform.
#
#   deploy.sh deploy    build and deploy (or update) the stack; prints `export` lines of its outputs
#   deploy.sh outputs   print `export` lines of the deployed stack's outputs (SKEIN_TABLE, SKEIN_QUEUE_URL, ...)
#   deploy.sh delete    delete the stack
#
# The endpoint: AWS_ENDPOINT_URL when set (a LocalStack you run yourself: Docker or Pro), else the one
# localstack/localstack.sh started for this checkout. See localstack/README.md.
#
# Settings (environment):
#   SKEIN_LS_STACK       stack name (default skein)
#   SKEIN_LS_PARAMETERS  extra `--parameter-overrides` (Key=Value ...), after this script's own
#   SKEIN_LS_BUILD_DIR   where `sam build` writes (default $SKEIN_LS_STATE/sam-build, i.e. .localstack/sam-build)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
STACK=${SKEIN_LS_STACK:-skein}
STATE_DIR=${SKEIN_LS_STATE:-$PWD/.localstack}
BUILD_DIR=${SKEIN_LS_BUILD_DIR:-$STATE_DIR/sam-build}
TOOLS=${SKEIN_TOOLS_CACHE:-$HOME/.cache/skein-tools}
SAM=$TOOLS/sam-cli-1.170.0/bin/sam # scripts/template-check.sh's pin
ARTIFACTS=skein-sam-artifacts

export SAM_CLI_TELEMETRY=0 SAM_CLI_DISABLE_UPDATE_CHECK=1

log() { printf 'deploy: %s\n' "$*" >&2; }
die() { printf 'deploy: ERROR: %s\n' "$*" >&2; exit 1; }

# endpoint: AWS_ENDPOINT_URL, else this checkout's LocalStack.
endpoint() {
  if [[ -z "${AWS_ENDPOINT_URL:-}" ]]; then
    # not eval "$(...)": eval of nothing succeeds, and the SDKs would go to AWS itself
    local settings
    settings=$(bash "$HERE/localstack.sh" env) || die "LocalStack is not running: bash localstack/localstack.sh start"
    eval "$settings"
  fi
  [[ -n "${AWS_ENDPOINT_URL:-}" ]] || die "no AWS_ENDPOINT_URL: this script deploys to LocalStack only, never to AWS"
  export AWS_REGION=${AWS_REGION:-us-east-1} AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-${AWS_REGION:-us-east-1}}
  export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test}
  # S3 on an IP address needs path-style addressing (sam's uploads go through boto3)
  mkdir -p "$STATE_DIR"
  printf '[default]\ns3 =\n    addressing_style = path\n' >"$STATE_DIR/aws-config"
  export AWS_CONFIG_FILE=$STATE_DIR/aws-config
  unset AWS_PROFILE
}

# boto PYTHON-CODE: run Python with boto3 (sam's venv has it) against the endpoint.
boto() { "$TOOLS/sam-cli-1.170.0/bin/python" -c "$1"; }

outputs() {
  boto "
import boto3, shlex
s = boto3.client('cloudformation').describe_stacks(StackName='$STACK')['Stacks'][0]
names = {'TableName': 'SKEIN_TABLE', 'QueueUrl': 'SKEIN_QUEUE_URL', 'QueueArn': 'SKEIN_QUEUE_ARN',
         'DeadLetterQueueUrl': 'SKEIN_DLQ_URL', 'BucketName': 'SKEIN_BUCKET', 'WebhookUrl': 'SKEIN_WEBHOOK_URL',
         'ApiUrl': 'SKEIN_API_URL', 'FlowFunctionArn': 'SKEIN_FLOW_FUNCTION_ARN',
         'WebhookFunctionArn': 'SKEIN_WEBHOOK_FUNCTION_ARN', 'ApiFunctionArn': 'SKEIN_API_FUNCTION_ARN',
         'PayloadKeyArn': 'SKEIN_KMS_KEY_ARN'}
print('export SKEIN_LS_STACK=' + shlex.quote('$STACK'))
for o in s.get('Outputs', []):
    k = names.get(o['OutputKey'])
    if k:
        print('export %s=%s' % (k, shlex.quote(o['OutputValue'])))
"
}

deploy() {
  local start=$SECONDS
  [[ -x "$SAM" ]] || bash "$ROOT/scripts/template-check.sh" install
  endpoint
  log "sam build -> $BUILD_DIR"
  rm -rf "$BUILD_DIR"
  bash "$ROOT/scripts/template-check.sh" build "$BUILD_DIR" >&2 || die "sam build failed"
  local built=$((SECONDS - start))
  "$TOOLS/sam-cli-1.170.0/bin/python" "$HERE/adapt-template.py" "$BUILD_DIR/template.yaml" || die "adapt-template.py failed"
  boto "
import boto3
s3 = boto3.client('s3')
try:
    s3.head_bucket(Bucket='$ARTIFACTS')
except Exception:
    s3.create_bucket(Bucket='$ARTIFACTS')
"
  # a stack whose creation failed cannot be updated: delete it first
  boto "
import boto3
cf = boto3.client('cloudformation')
try:
    st = cf.describe_stacks(StackName='$STACK')['Stacks'][0]['StackStatus']
except Exception:
    st = ''
if st in ('ROLLBACK_COMPLETE', 'ROLLBACK_FAILED', 'CREATE_FAILED', 'DELETE_FAILED'):
    print('deploy: deleting stack $STACK (%s)' % st, flush=True)
    cf.delete_stack(StackName='$STACK')
    cf.get_waiter('stack_delete_complete').wait(StackName='$STACK', WaiterConfig={'Delay': 2, 'MaxAttempts': 150})
" >&2
  log "sam deploy $STACK -> $AWS_ENDPOINT_URL"
  # shellcheck disable=SC2086  # SKEIN_LS_PARAMETERS is a list of Key=Value words
  (cd "$BUILD_DIR" && "$SAM" deploy --template-file "$BUILD_DIR/template.yaml" --stack-name "$STACK" \
    --s3-bucket "$ARTIFACTS" --s3-prefix "$STACK" --region "$AWS_REGION" \
    --capabilities CAPABILITY_IAM CAPABILITY_NAMED_IAM --no-confirm-changeset --no-fail-on-empty-changeset \
    --no-progressbar --disable-rollback \
    ${SKEIN_LS_PARAMETERS:+--parameter-overrides $SKEIN_LS_PARAMETERS}) >&2 || die "sam deploy failed"
  log "deployed $STACK in $((SECONDS - start))s (sam build ${built}s)"
  outputs
}

case ${1:-} in
  deploy) deploy ;;
  outputs) endpoint; outputs ;;
  delete) endpoint; boto "
import boto3
cf = boto3.client('cloudformation')
cf.delete_stack(StackName='$STACK')
cf.get_waiter('stack_delete_complete').wait(StackName='$STACK')
" ;;
  *) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2 ;;
esac
