// Package envvars is the one place Skein's code reads environment
// variables: Read reads every variable Skein's programs take, each once, into
// a Vars; the wiring (skeinlambda's New, handler.ConfigFromEnv, the skein
// command's setup, dynamotest) parses the fields it needs into the Config of
// the object it builds. Nothing else calls os.Getenv for a Skein setting, so
// that a variable's name, and what an unset one means, are written once.
//
// The AWS SDK and the OpenTelemetry SDK read their own variables as well
// (region, credentials, AWS_CA_BUNDLE, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER); Vars holds those Skein's own code looks at.
package envvars

import (
	"os"
	"strings"
)

// The variables of a function of the stack (template.yaml sets the first
// four; handler.ConfigFromEnv parses them).
const (
	Handler             = "SKEIN_HANDLER"
	Table               = "SKEIN_TABLE"
	QueueURL            = "SKEIN_QUEUE_URL"
	Bucket              = "SKEIN_BUCKET"
	InlineConcurrency   = "SKEIN_INLINE_CONCURRENCY"
	TimeBudgetMargin    = "SKEIN_TIME_BUDGET_MARGIN"
	ClaimCheckThreshold = "SKEIN_CLAIM_CHECK_THRESHOLD"
	RetentionDays       = "SKEIN_RETENTION_DAYS"
	S3PathStyle         = "SKEIN_S3_PATH_STYLE"
	StepLeaseTTL        = "SKEIN_STEP_LEASE_TTL"
	RunLeaseTTL         = "SKEIN_RUN_LEASE_TTL"
	MaxQueueDelay       = "SKEIN_MAX_QUEUE_DELAY"
	MaxInterruptions    = "SKEIN_MAX_INTERRUPTIONS"
	HoldRetryDelay      = "SKEIN_HOLD_RETRY_DELAY"
	HoldRetryLimit      = "SKEIN_HOLD_RETRY_LIMIT"
	RecordConcurrency   = "SKEIN_RECORD_CONCURRENCY"
	Malformed           = "SKEIN_MALFORMED"
	MetricsNamespace    = "SKEIN_METRICS_NAMESPACE"
	KMSKeyID            = "SKEIN_KMS_KEY_ID"
	Version             = "SKEIN_VERSION"
	Versions            = "SKEIN_VERSIONS"
	VersionRetryDelay   = "SKEIN_VERSION_RETRY_DELAY"
	VersionRetryLimit   = "SKEIN_VERSION_RETRY_LIMIT"
)

// Lambda's own variables.
const (
	LogLevel        = "AWS_LAMBDA_LOG_LEVEL"
	FunctionName    = "AWS_LAMBDA_FUNCTION_NAME"
	FunctionVersion = "AWS_LAMBDA_FUNCTION_VERSION"
)

// The AWS SDK's endpoint overrides (emulators set them).
const (
	EndpointURL      = "AWS_ENDPOINT_URL"
	EndpointDynamoDB = "AWS_ENDPOINT_URL_DYNAMODB"
	EndpointSQS      = "AWS_ENDPOINT_URL_SQS"
	EndpointS3       = "AWS_ENDPOINT_URL_S3"
)

// The skein command's variables, and the test kit's.
const (
	DB               = "SKEIN_DB"
	EncryptionKeys   = "SKEIN_ENCRYPTION_KEYS"
	Stack            = "SKEIN_STACK"
	Endpoint         = "SKEIN_ENDPOINT"
	NoColor          = "NO_COLOR"
	Emulators        = "SKEIN_EMULATORS"
	RequireEmulators = "SKEIN_REQUIRE_EMULATORS"
)

// Vars are the values of the variables, trimmed of surrounding spaces; an
// unset variable is "".
type Vars struct {
	// A function's settings (the constants of the same names).
	Handler, Table, QueueURL, Bucket, KMSKeyID                 string
	InlineConcurrency, RecordConcurrency, TimeBudgetMargin     string
	ClaimCheckThreshold, RetentionDays, S3PathStyle            string
	StepLeaseTTL, RunLeaseTTL, MaxQueueDelay, MaxInterruptions string
	HoldRetryDelay, HoldRetryLimit, VersionRetryDelay          string
	VersionRetryLimit, Malformed, MetricsNamespace             string
	Version, Versions                                          string
	LogLevel, FunctionName, FunctionVersion                    string
	EndpointURL, EndpointDynamoDB, EndpointSQS, EndpointS3     string
	DB, EncryptionKeys, Stack, Endpoint, NoColor               string
	Emulators, RequireEmulators                                string
	OTel                                                       OTel
}

// OTel are the standard OpenTelemetry variables skeinlambda's tracer
// provider follows (OTEL_*).
type OTel struct {
	SDKDisabled    string // OTEL_SDK_DISABLED
	TracesExporter string // OTEL_TRACES_EXPORTER
	ServiceName    string // OTEL_SERVICE_NAME
	// The OTLP exporter's settings: the traces-specific variable
	// (OTEL_EXPORTER_OTLP_TRACES_*) and the general one (OTEL_EXPORTER_OTLP_*).
	TracesEndpoint, Endpoint string
	TracesProtocol, Protocol string
	TracesHeaders, Headers   string
	TracesTimeout, Timeout   string
}

// Read reads the environment through getenv (os.Getenv when nil), each
// variable once.
func Read(getenv func(string) string) Vars {
	if getenv == nil {
		getenv = os.Getenv
	}
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	return Vars{
		Handler: get(Handler), Table: get(Table), QueueURL: get(QueueURL), Bucket: get(Bucket), KMSKeyID: get(KMSKeyID),
		InlineConcurrency: get(InlineConcurrency), RecordConcurrency: get(RecordConcurrency),
		TimeBudgetMargin: get(TimeBudgetMargin), ClaimCheckThreshold: get(ClaimCheckThreshold),
		RetentionDays: get(RetentionDays), S3PathStyle: get(S3PathStyle),
		StepLeaseTTL: get(StepLeaseTTL), RunLeaseTTL: get(RunLeaseTTL), MaxQueueDelay: get(MaxQueueDelay),
		MaxInterruptions: get(MaxInterruptions), HoldRetryDelay: get(HoldRetryDelay), HoldRetryLimit: get(HoldRetryLimit),
		VersionRetryDelay: get(VersionRetryDelay), VersionRetryLimit: get(VersionRetryLimit),
		Malformed: get(Malformed), MetricsNamespace: get(MetricsNamespace),
		Version: get(Version), Versions: get(Versions),
		LogLevel: get(LogLevel), FunctionName: get(FunctionName), FunctionVersion: get(FunctionVersion),
		EndpointURL: get(EndpointURL), EndpointDynamoDB: get(EndpointDynamoDB),
		EndpointSQS: get(EndpointSQS), EndpointS3: get(EndpointS3),
		DB: get(DB), EncryptionKeys: get(EncryptionKeys), Stack: get(Stack), Endpoint: get(Endpoint), NoColor: get(NoColor),
		Emulators: get(Emulators), RequireEmulators: get(RequireEmulators),
		OTel: OTel{
			SDKDisabled: get("OTEL_SDK_DISABLED"), TracesExporter: get("OTEL_TRACES_EXPORTER"),
			ServiceName:    get("OTEL_SERVICE_NAME"),
			TracesEndpoint: get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), Endpoint: get("OTEL_EXPORTER_OTLP_ENDPOINT"),
			TracesProtocol: get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), Protocol: get("OTEL_EXPORTER_OTLP_PROTOCOL"),
			TracesHeaders: get("OTEL_EXPORTER_OTLP_TRACES_HEADERS"), Headers: get("OTEL_EXPORTER_OTLP_HEADERS"),
			TracesTimeout: get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"), Timeout: get("OTEL_EXPORTER_OTLP_TIMEOUT"),
		},
	}
}

// EmulatorEndpoint reports whether DynamoDB's requests go to an endpoint
// of the environment's rather than AWS's (AWS_ENDPOINT_URL_DYNAMODB or
// AWS_ENDPOINT_URL): an emulator, whose error answers lack the CRC32 header
// DynamoDB sends.
func (v Vars) EmulatorEndpoint() bool { return v.EndpointDynamoDB != "" || v.EndpointURL != "" }

// ServiceEndpoint returns the endpoint the SDK uses for a service
// ("DYNAMODB", "SQS", "S3"): its own variable's, else AWS_ENDPOINT_URL's;
// "" for AWS's own.
func (v Vars) ServiceEndpoint(service string) string {
	var own string
	switch strings.ToUpper(service) {
	case "DYNAMODB":
		own = v.EndpointDynamoDB
	case "SQS":
		own = v.EndpointSQS
	case "S3":
		own = v.EndpointS3
	}
	if own != "" {
		return own
	}
	return v.EndpointURL
}
