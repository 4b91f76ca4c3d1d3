package knobs

import (
	"testing"
	"time"
)

func TestApplyLaterWins(t *testing.T) {
	t0 := time.Unix(1, 0)
	t1 := time.Unix(2, 0)
	s := Apply([]Option{WithNow(func() time.Time { return t0 }), nil, WithNow(func() time.Time { return t1 })})
	if s.Now == nil || !s.Now().Equal(t1) {
		t.Fatal("Now is not the later option's clock")
	}
	if z := Apply(nil); z.Now != nil || z.Entropy != nil {
		t.Fatal("Apply(nil) is not the zero Set")
	}
}
