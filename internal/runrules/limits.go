package runrules

import "github.com/skeinflow/skein/world"

// LimitsOf returns the limits w enforces: its own when it says (a
// Limits() world.Limits method), the defaults otherwise; either way with
// world.Limits.WithDefaults applied.
func LimitsOf(w world.World) world.Limits {
	if l, ok := w.(interface{ Limits() world.Limits }); ok {
		return l.Limits().WithDefaults()
	}
	return world.Limits{}.WithDefaults()
}
