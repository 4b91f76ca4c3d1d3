package webui

import (
	"strings"
	"testing"

	"github.com/skeinflow/skein/world"
)

// TestChildHookShownAsChild: the engine's own hook on which a parent waits
// for a child run is shown redacted and marked as a child's, so the page
// offers no resume form for it (only the child's end may resume it).
func TestChildHookShownAsChild(t *testing.T) {
	t.Parallel()
	tok := "skein-child:wrun_01JABCDEFGHJKMNPQRSTVWXYZ0:1:tagtagtag"
	hooks, _ := hooksAndWaits([]world.Event{
		{CorrelationID: "hook_1", Data: &world.HookCreated{Token: tok}},
		{CorrelationID: "hook_2", Data: &world.HookCreated{Token: "approve/1"}},
	}, pretty)
	if len(hooks) != 2 || !hooks[0].Child || strings.Contains(hooks[0].Token, "tagtagtag") || hooks[1].Child || hooks[1].Token != "approve/1" {
		t.Fatalf("hooks = %+v", hooks)
	}
}

// TestTimersLeftByARunEnd: a sleep still waiting when its run ends (the
// timer a Select did not need) is shown abandoned, or cancelled with a
// cancelled run, never waiting forever; a finished sleep stays completed.
func TestTimersLeftByARunEnd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		end  world.EventData
		want string
	}{
		{&world.RunCompleted{}, "abandoned"},
		{&world.RunFailed{}, "abandoned"},
		{&world.RunCancelled{}, "cancelled"},
	} {
		_, waits := hooksAndWaits([]world.Event{
			{CorrelationID: "wait_1", Data: &world.WaitCreated{}},
			{CorrelationID: "wait_2", Data: &world.WaitCreated{}},
			{CorrelationID: "wait_2", Data: &world.WaitCompleted{}},
			{Data: c.end},
		}, pretty)
		if len(waits) != 2 || waits[0].Status != c.want || waits[1].Status != "completed" {
			t.Errorf("after %T: waits %+v, want the open one %s", c.end, waits, c.want)
		}
	}
}
