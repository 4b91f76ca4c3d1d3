package world_test

import "github.com/skeinflow/skein/world"

// typeOf names a payload's event type.
func typeOf(d world.EventData) world.EventType { return world.EventInput{Data: d}.Type() }
