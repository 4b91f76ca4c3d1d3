package dynamoworld

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The hand-written checks agree with the regular expressions they replace,
// on chosen cases and on random strings over each name's alphabet and its
// neighbours.
func TestNameChecksMatchTheirPatterns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		re       *regexp.Regexp
		check    func(string) bool
		alphabet string
		lens     [2]int
		cases    []string
	}{
		{"table", regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`), validTableName, "aZ09_.-#/ ", [2]int{0, 260},
			[]string{"", "ab", "abc", "My_Table.v2-x", "a b", strings.Repeat("t", 255), strings.Repeat("t", 256)}},
		{"bucket", regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`), validBucketName, "az09.-A_", [2]int{0, 66},
			[]string{"", "ab", "abc", "-ab", "ab-", "my.bucket-1", "Ab1", strings.Repeat("b", 63), strings.Repeat("b", 64)}},
		{"gsk", regexp.MustCompile(`^[0-9]{20}#[a-z]{4}_[0-9A-HJKMNP-TV-Z]{26}$`), validGSK, "09az#_AHILOUZ", [2]int{50, 54},
			[]string{"", "00000000000000000001#wrun_01M82HT9MTVBG3YHZ4PQYV7X3R", "00000000000000000001#wrun_01M82HT9MTVBG3YHZ4PQYV7X3I",
				"0000000000000000000a#wrun_01M82HT9MTVBG3YHZ4PQYV7X3R", "00000000000000000001#WRUN_01M82HT9MTVBG3YHZ4PQYV7X3R"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			try := func(s string) {
				if got, want := tc.check(s), tc.re.MatchString(s); got != want {
					t.Errorf("%q: %v, the pattern says %v", s, got, want)
				}
			}
			for _, s := range tc.cases {
				try(s)
			}
			r := rand.New(rand.NewPCG(1, 2))
			for range 20000 {
				b := make([]byte, tc.lens[0]+r.IntN(tc.lens[1]-tc.lens[0]+1))
				for i := range b {
					b[i] = tc.alphabet[r.IntN(len(tc.alphabet))]
				}
				try(string(b))
			}
			// Valid shapes mutated in one place.
			for _, s := range tc.cases {
				for i := 0; i < len(s); i++ {
					for j := 0; j < len(tc.alphabet); j++ {
						try(s[:i] + tc.alphabet[j:j+1] + s[i+1:])
					}
				}
			}
		})
	}
}
