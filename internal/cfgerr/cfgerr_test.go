package cfgerr

import (
	"errors"
	"testing"

	"github.com/skeinflow/skein/world"
)

func TestInvalid(t *testing.T) {
	base := errors.New("x: Config.Y is negative")
	err := Invalid(base)
	if !errors.Is(err, world.ErrInvalid) || !errors.Is(err, base) || err.Error() != base.Error() {
		t.Fatalf("Invalid(%q) = %v: want the same message, matching world.ErrInvalid and the cause", base, err)
	}
	if Invalid(nil) != nil {
		t.Fatal("Invalid(nil) != nil")
	}
}
