package flows

import (
	"os"
	"time"

	"example.com/pricing"
	"github.com/skeinflow/skein/workflow"
)

// deadline reads the clock: workflow code that calls it is not
// deterministic.
func deadline(d time.Duration) time.Time { return time.Now().Add(d) }

// viaDeadline calls deadline: the finding goes through both.
func viaDeadline() time.Time { return deadline(time.Hour) }

// region reads the environment.
func region() string { return os.Getenv("AWS_REGION") }

// describe does nothing wrong.
func describe(n int) string { return "n=" + itoa(n) }

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + itoa(n%10) // a recursive helper is summarized once
}

// sortedKeys's own map range is fine: it sorts what it collects. It is
// suppressed with a reason.
func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m { //skein:nondeterministic-ok the keys are sorted below
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

// helper takes a workflow.Context: it is workflow code itself, reported in
// its own body and not again where it is called.
func helper(ctx workflow.Context) time.Time {
	return time.Now() // want `time.Now reads the machine clock`
}

var callsHelpers = workflow.New("helpers", func(ctx workflow.Context, m map[string]int) (string, error) {
	_ = deadline(time.Hour) // want `deadline is not deterministic: time.Now reads the machine clock: use ctx.Now\(\), the workflow's time \(helpers.go:13\)`
	_ = viaDeadline()       // want `viaDeadline is not deterministic: deadline is not deterministic: time.Now`
	_ = region()            // want `region is not deterministic: os.Getenv does I/O`
	_ = helper(ctx)
	_ = sortedKeys(m)
	return describe(len(m)), nil
})

// callsPackages calls helpers of another package of the module.
var callsPackages = workflow.New("packages", func(ctx workflow.Context, cents []int) (int, error) {
	_ = pricing.Deadline(time.Hour)       // want `pricing.Deadline is not deterministic: time.Now reads the machine clock: use ctx.Now\(\), the workflow's time \(pricing.go:11\)`
	_ = pricing.Region()                  // want `pricing.Region is not deterministic: region is not deterministic: os.Getenv does I/O`
	_ = pricing.Quote{Cents: 1}.Stamped() // want `pricing.Quote.Stamped is not deterministic: time.Now`
	_ = pricing.Flagged()
	return pricing.Total(cents), nil
})
