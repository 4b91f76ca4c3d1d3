package dynamoworld

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/skeinflow/skein/internal/awslimits"
	"github.com/skeinflow/skein/internal/cfgerr"
	"github.com/skeinflow/skein/internal/knobs"
	"github.com/skeinflow/skein/world"
)

// Defaults applied by Config.WithDefaults. A request that names no run
// lease or visibility gets world.DefaultRunLease or world.DefaultVisibility.
const (
	DefaultTable               = "skein"
	DefaultPrefix              = "skein/"
	DefaultClaimCheckThreshold = 64 << 10
	DefaultDedupeWindow        = 24 * time.Hour
)

// defaultWatchPollMin and defaultWatchPollMax bound the wait between two
// reads of a watched run's partition (World.Watch), for a watch whose
// WatchParams set no bounds (knobs.WithWatchPoll).
const (
	defaultWatchPollMin = 50 * time.Millisecond
	defaultWatchPollMax = 2 * time.Second
)

// Settings only Skein's tests change (internal/knobs).
const (
	// defaultCacheRuns bounds the runs whose state the World keeps in memory
	// to commit without reading first.
	defaultCacheRuns = 1024
	// defaultPendingGrace: an idempotency key claimed by an Enqueue whose
	// send is not confirmed holds for this long: an Enqueue under it
	// meanwhile sends nothing and fails with world.ErrKeyPending (never a
	// Duplicate: the message is not known sent); after that an Enqueue takes
	// the claim over and sends (the first sender presumably died).
	defaultPendingGrace = 30 * time.Second
)

// maxAppendAttempts bounds the attempts of one Append under contention
// (conflicting commits of other Worlds to the same run); past it Append
// fails with the last conflict.
const maxAppendAttempts = 64

// Limits.
const (
	// MaxClaimCheckThreshold bounds Config.ClaimCheckThreshold (100 KiB;
	// the least is 1 KiB).
	MaxClaimCheckThreshold = awslimits.MaxClaimCheckThreshold
	// maxItemBytes, maxTransactionItems and maxQueueDelay are the AWS
	// bounds the World respects (internal/awslimits).
	maxItemBytes        = awslimits.MaxItemBytes
	maxTransactionItems = awslimits.MaxTransactionItems
	maxQueueDelay       = awslimits.MaxQueueDelay
	// maxTransactionBytes keeps a transaction under DynamoDB's 4 MB.
	maxTransactionBytes = 3500 << 10
)

// Config configures a World. DynamoDB, SQS and S3 are required; the rest has
// defaults.
type Config struct {
	// DynamoDB, SQS and S3 are the AWS clients (see NewClients), or fakes.
	DynamoDB DynamoDBAPI
	SQS      SQSAPI
	S3       S3API

	// Table is the DynamoDB table (default "skein"); see CreateResources for
	// its schema.
	Table string
	// QueueURL is the SQS queue (a standard queue) the World enqueues to.
	QueueURL string
	// Bucket is the S3 bucket for claim-checked payloads and streams; Prefix
	// (default "skein/") starts every key the World writes there.
	Bucket string
	Prefix string

	// ClaimCheckThreshold is the payload size above which a payload (input,
	// output, result, hook payload, metadata, error) is stored in S3 and
	// referenced from the item (default 64 KiB, at most 100 KiB). Smaller
	// payloads also move to S3 when an item would otherwise exceed
	// 350 KB (under DynamoDB's 400 KB item limit).
	ClaimCheckThreshold int
	// Retention is how long a run's items live after the run ends: its
	// DynamoDB items get a TTL attribute ("ttl", epoch seconds) of end time +
	// Retention, set by the World that commits the end. Zero keeps runs
	// forever. Every World on a table should use the same Retention, and an
	// S3 lifecycle rule on the bucket must not expire objects sooner (see
	// the package documentation, Retention).
	Retention time.Duration
	// DedupeWindow is how long an Enqueue idempotency key suppresses
	// duplicates (default 24h).
	DedupeWindow time.Duration
	// Limits bound how far one run may grow (events, payload size, hooks,
	// waits, stream bytes, streams): see world.Limits for each and its default.
	// Every World and every Processor on a table should use the same.
	Limits world.Limits

	// Logger gets operational messages (default: discarded).
	Logger *slog.Logger

	// Settings only Skein's tests and wiring change: the clock (default
	// time.Now), the source of IDs (default crypto/rand), the run cache
	// (defaultCacheRuns; negative disables) and whether New skips Check,
	// set by New's options (internal/knobs); the Streamer (default a
	// streams.Streamer on S3, Bucket and Prefix, registering its streams in
	// the table) and the pending grace (defaultPendingGrace), set by this
	// package's tests.
	now     func() time.Time
	entropy io.Reader
	// watchPollMin and watchPollMax bound the wait between two looks of a
	// watch whose WatchParams set none: the minimum after a look that
	// found events, doubling while idle up to the maximum (defaults 50ms
	// and 2s; knobs.WithWatchPoll). A watch of every run looks at most once
	// a second and backs off to 5s (see doc.go, Watching).
	watchPollMin, watchPollMax time.Duration
	streams                    world.Streamer
	cacheRuns                  int
	pendingGrace               time.Duration
	skipCheck                  bool
}

// withKnobs returns a copy of c with the settings k holds.
func (c Config) withKnobs(k knobs.Set) Config {
	if k.Now != nil {
		c.now = k.Now
	}
	if k.Entropy != nil {
		c.entropy = k.Entropy
	}
	if k.CacheRuns != 0 {
		c.cacheRuns = k.CacheRuns
	}
	c.skipCheck = c.skipCheck || k.SkipCheck
	if k.WatchPollMin > 0 {
		c.watchPollMin = k.WatchPollMin
	}
	if k.WatchPollMax > 0 {
		c.watchPollMax = k.WatchPollMax
	}
	return c
}

// WithDefaults returns a copy of c with every unset field given its default.
// It is safe on a nil Config.
func (c *Config) WithDefaults() *Config {
	var out Config
	if c != nil {
		out = *c
	}
	out.Limits = out.Limits.WithDefaults()
	if out.Table == "" {
		out.Table = DefaultTable
	}
	if out.Prefix == "" {
		out.Prefix = DefaultPrefix
	}
	if out.ClaimCheckThreshold == 0 {
		out.ClaimCheckThreshold = DefaultClaimCheckThreshold
	}
	if out.DedupeWindow == 0 {
		out.DedupeWindow = DefaultDedupeWindow
	}
	if out.pendingGrace <= 0 {
		out.pendingGrace = defaultPendingGrace
	}
	if out.cacheRuns == 0 {
		out.cacheRuns = defaultCacheRuns
	}
	if out.watchPollMin <= 0 {
		out.watchPollMin = defaultWatchPollMin
	}
	if out.watchPollMax <= 0 {
		out.watchPollMax = defaultWatchPollMax
	}
	if out.now == nil {
		out.now = time.Now
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return &out
}

// validate checks a Config after WithDefaults.
func (c *Config) validate() error {
	var errs []error
	if c.DynamoDB == nil {
		errs = append(errs, errors.New("DynamoDB client required"))
	}
	if c.SQS == nil {
		errs = append(errs, errors.New("SQS client required"))
	}
	if c.S3 == nil {
		errs = append(errs, errors.New("S3 client required"))
	}
	if !validTableName(c.Table) {
		errs = append(errs, fmt.Errorf("table name %q: want 3 to 255 of a-z A-Z 0-9 _ . -", c.Table))
	}
	if c.QueueURL == "" {
		errs = append(errs, errors.New("QueueURL required"))
	} else if !strings.Contains(c.QueueURL, "://") {
		errs = append(errs, fmt.Errorf("QueueURL %q is not a URL", c.QueueURL))
	}
	if !validBucketName(c.Bucket) {
		errs = append(errs, fmt.Errorf("bucket name %q: want 3 to 63 of a-z 0-9 . -", c.Bucket))
	}
	if c.ClaimCheckThreshold < awslimits.MinClaimCheckThreshold || c.ClaimCheckThreshold > MaxClaimCheckThreshold {
		errs = append(errs, fmt.Errorf("ClaimCheckThreshold %d: want %d to %d bytes", c.ClaimCheckThreshold, awslimits.MinClaimCheckThreshold, MaxClaimCheckThreshold))
	}
	if c.DedupeWindow < 0 {
		errs = append(errs, fmt.Errorf("negative DedupeWindow %s", c.DedupeWindow))
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("negative Retention %s", c.Retention))
	}
	if err := errors.Join(errs...); err != nil {
		return cfgerr.Invalid(fmt.Errorf("dynamoworld: invalid config: %w", err))
	}
	return nil
}
