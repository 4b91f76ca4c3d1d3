#!/bin/bash
# LocalStack ready hook: create the resources template.yaml declares, with the same keys, indexes, TTL,
# redrive and lifecycle, so the integration suite can run against LocalStack. Runs inside the LocalStack
# container (awslocal is on its PATH) each time the container becomes ready; safe to run again.
#
# Settings (docker-compose.yml passes them; the defaults match template.yaml's parameter defaults):
#   SKEIN_TABLE, SKEIN_QUEUE (the DLQ is "$SKEIN_QUEUE-dlq"), SKEIN_BUCKET,
#   SKEIN_VISIBILITY_TIMEOUT (6 x FunctionTimeout + 30), SKEIN_MAX_RECEIVE_COUNT,
#   SKEIN_OBJECT_EXPIRATION_DAYS
set -euo pipefail

TABLE=${SKEIN_TABLE:-skein-events}
QUEUE=${SKEIN_QUEUE:-skein-work}
DLQ=$QUEUE-dlq
BUCKET=${SKEIN_BUCKET:-skein-data}
VISIBILITY_TIMEOUT=${SKEIN_VISIBILITY_TIMEOUT:-390}
MAX_RECEIVE_COUNT=${SKEIN_MAX_RECEIVE_COUNT:-5}
EXPIRATION_DAYS=${SKEIN_OBJECT_EXPIRATION_DAYS:-30}
AWS=${AWSLOCAL:-awslocal}

log() { printf 'skein: %s\n' "$*"; }

# ---- DynamoDB: the event log -------------------------------------------------------------------
if "$AWS" dynamodb describe-table --table-name "$TABLE" >/dev/null 2>&1; then
	log "table $TABLE exists"
else
	"$AWS" dynamodb create-table \
		--table-name "$TABLE" \
		--billing-mode PAY_PER_REQUEST \
		--attribute-definitions \
		AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=S \
		AttributeName=g1,AttributeType=S AttributeName=g2,AttributeType=S \
		AttributeName=g3,AttributeType=S AttributeName=gsk,AttributeType=S \
		--key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
		--global-secondary-indexes \
		'IndexName=gs1,KeySchema=[{AttributeName=g1,KeyType=HASH},{AttributeName=gsk,KeyType=RANGE}],Projection={ProjectionType=KEYS_ONLY}' \
		'IndexName=gs2,KeySchema=[{AttributeName=g2,KeyType=HASH},{AttributeName=gsk,KeyType=RANGE}],Projection={ProjectionType=INCLUDE,NonKeyAttributes=[st]}' \
		'IndexName=gs3,KeySchema=[{AttributeName=g3,KeyType=HASH},{AttributeName=gsk,KeyType=RANGE}],Projection={ProjectionType=KEYS_ONLY}' \
		--sse-specification Enabled=true \
		>/dev/null
	"$AWS" dynamodb wait table-exists --table-name "$TABLE"
	log "table $TABLE created"
fi
"$AWS" dynamodb update-time-to-live --table-name "$TABLE" \
	--time-to-live-specification Enabled=true,AttributeName=ttl >/dev/null 2>&1 ||
	log "TTL on $TABLE already enabled"
"$AWS" dynamodb update-continuous-backups --table-name "$TABLE" \
	--point-in-time-recovery-specification PointInTimeRecoveryEnabled=true >/dev/null ||
	log "point-in-time recovery not supported by this endpoint (irrelevant for tests)"

# ---- SQS: the work queue and its dead-letter queue ---------------------------------------------
dlq_attrs='{"MessageRetentionPeriod":"1209600","SqsManagedSseEnabled":"true"}'
# ensure_queue NAME ATTRIBUTES_JSON: create the queue, or set the attributes of an existing one.
ensure_queue() {
	local url
	if url=$("$AWS" sqs get-queue-url --queue-name "$1" --query QueueUrl --output text 2>/dev/null); then
		"$AWS" sqs set-queue-attributes --queue-url "$url" --attributes "$2"
	else
		url=$("$AWS" sqs create-queue --queue-name "$1" --attributes "$2" --query QueueUrl --output text)
	fi
	printf '%s' "$url"
}
dlq_url=$(ensure_queue "$DLQ" "$dlq_attrs")
dlq_arn=$("$AWS" sqs get-queue-attributes --queue-url "$dlq_url" --attribute-names QueueArn \
	--query Attributes.QueueArn --output text)
# RedrivePolicy is a JSON document inside the JSON attribute map, hence the escaped quotes.
attrs=$(printf '{"VisibilityTimeout":"%s","DelaySeconds":"0","MessageRetentionPeriod":"345600","ReceiveMessageWaitTimeSeconds":"20","SqsManagedSseEnabled":"true","RedrivePolicy":"{\\"deadLetterTargetArn\\":\\"%s\\",\\"maxReceiveCount\\":\\"%s\\"}"}' \
	"$VISIBILITY_TIMEOUT" "$dlq_arn" "$MAX_RECEIVE_COUNT")
queue_url=$(ensure_queue "$QUEUE" "$attrs")
log "queue $queue_url (visibility ${VISIBILITY_TIMEOUT}s, DLQ $DLQ after $MAX_RECEIVE_COUNT receives)"

# ---- S3: streams and claim-checked payloads ------------------------------------------------------
if "$AWS" s3api head-bucket --bucket "$BUCKET" >/dev/null 2>&1; then
	log "bucket $BUCKET exists"
else
	"$AWS" s3api create-bucket --bucket "$BUCKET" >/dev/null
	log "bucket $BUCKET created"
fi
"$AWS" s3api put-bucket-encryption --bucket "$BUCKET" --server-side-encryption-configuration \
	'{"Rules":[{"ApplyServerSideEncryptionByDefault":{"SSEAlgorithm":"AES256"}}]}'
"$AWS" s3api put-public-access-block --bucket "$BUCKET" --public-access-block-configuration \
	BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true
"$AWS" s3api put-bucket-ownership-controls --bucket "$BUCKET" --ownership-controls \
	'Rules=[{ObjectOwnership=BucketOwnerEnforced}]'
"$AWS" s3api put-bucket-lifecycle-configuration --bucket "$BUCKET" --lifecycle-configuration \
	"$(printf '{"Rules":[{"ID":"ExpireStreamAndClaimCheckObjects","Status":"Enabled","Filter":{},"Expiration":{"Days":%s},"AbortIncompleteMultipartUpload":{"DaysAfterInitiation":1}}]}' "$EXPIRATION_DAYS")"
# No TLS-only bucket policy here (template.yaml has one): clients reach LocalStack over plain HTTP.

log "ready. Point the suite at LocalStack with:"
log "  export AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_REGION=${AWS_DEFAULT_REGION:-us-east-1} AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test SKEIN_S3_PATH_STYLE=1"
log "  export SKEIN_TABLE=$TABLE SKEIN_QUEUE_URL=$queue_url SKEIN_BUCKET=$BUCKET"
