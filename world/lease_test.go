package world

import (
	"errors"
	"testing"
	"time"
)

func TestRunLeaseParamsLeaseTTL(t *testing.T) {
	t.Parallel()
	const def = 30 * time.Second
	tests := []struct {
		name    string
		p       *RunLeaseParams
		want    time.Duration
		invalid bool
	}{
		{"nil", nil, 0, true},
		{"no run", &RunLeaseParams{Owner: "o"}, 0, true},
		{"no owner", &RunLeaseParams{RunID: "r"}, 0, true},
		{"negative", &RunLeaseParams{RunID: "r", Owner: "o", TTL: -time.Second}, 0, true},
		{"default", &RunLeaseParams{RunID: "r", Owner: "o"}, def, false},
		{"given", &RunLeaseParams{RunID: "r", Owner: "o", TTL: time.Second}, time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.p.LeaseTTL(def)
			if tc.invalid {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("LeaseTTL = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}
