package knobs

import (
	"os"
	"time"
)

// World holds the knobs of the Worlds (localworld, dynamoworld) and of the
// packages beside them (streams, encrypt, webui, skeinhttp). It imports no
// AWS code: an AWS-typed setting goes another way (the SDK clients' own
// middleware goes in aws.Config.APIOptions).
type World struct {
	// FileMode is the permission of a file localworld creates (default 0600).
	FileMode os.FileMode
	// CacheRuns bounds the runs whose state dynamoworld keeps in memory
	// (default 1024; negative disables the cache).
	CacheRuns int
	// SkipCheck skips dynamoworld.New's check of the table, queue and
	// bucket (skeinlambda's cold start, benchmarks and fakes).
	SkipCheck bool
	// MaxBackoff bounds the wait between two attempts of an SDK client
	// dynamoworld.NewClients builds (default the SDK's 20s).
	MaxBackoff time.Duration
	// MaxChunksPerObject bounds the chunks of one streams object (default 1000).
	MaxChunksPerObject int
	// PageSize is the runs per page of webui's list (default 50).
	PageSize int
	// Heartbeat is how often skeinhttp's event stream sends a comment to keep
	// idle connections open (default 15s); Retry is the reconnection delay it
	// suggests to browsers (default none; webui's stream 2s).
	Heartbeat, Retry time.Duration
	// WatchPollMin and WatchPollMax are a World's default bounds of the
	// wait between two looks of a polling watch, for a watch whose
	// world.WatchParams set none (localworld's read-only view: 5ms to
	// 100ms; dynamoworld: 50ms to 2s).
	WatchPollMin, WatchPollMax time.Duration
}

// WithFileMode sets World.FileMode.
func WithFileMode(m os.FileMode) Option { return func(s *Set) { s.FileMode = m } }

// WithCacheRuns sets World.CacheRuns.
func WithCacheRuns(n int) Option { return func(s *Set) { s.CacheRuns = n } }

// WithSkipCheck sets World.SkipCheck.
func WithSkipCheck() Option { return func(s *Set) { s.SkipCheck = true } }

// WithMaxBackoff sets World.MaxBackoff.
func WithMaxBackoff(d time.Duration) Option { return func(s *Set) { s.MaxBackoff = d } }

// WithMaxChunksPerObject sets World.MaxChunksPerObject.
func WithMaxChunksPerObject(n int) Option { return func(s *Set) { s.MaxChunksPerObject = n } }

// WithPageSize sets World.PageSize.
func WithPageSize(n int) Option { return func(s *Set) { s.PageSize = n } }

// WithWatchPoll sets World.WatchPollMin and World.WatchPollMax.
func WithWatchPoll(lo, hi time.Duration) Option {
	return func(s *Set) { s.WatchPollMin, s.WatchPollMax = lo, hi }
}

// WithHeartbeat sets World.Heartbeat and World.Retry.
func WithHeartbeat(heartbeat, retry time.Duration) Option {
	return func(s *Set) { s.Heartbeat, s.Retry = heartbeat, retry }
}
