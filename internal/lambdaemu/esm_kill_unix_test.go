//go:build unix

package lambdaemu

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
)

// TestESMKillOne: KillOne crashes one busy execution environment, the one
// pick chooses, returns its process ID once it has exited, and leaves the
// other running; with none busy it kills nothing.
func TestESMKillOne(t *testing.T) {
	t.Parallel()
	q := newFakeSQS("sleep 20s", "sleep 20s")
	fc := FunctionConfig{Bootstrap: buildEcho(t), Name: "echo", Timeout: 30 * time.Second, Stderr: newLineWriter(t, "bootstrap: ")}
	reports := make(chan BatchReport, 2)
	esm, err := NewESM(ESMConfig{Mapping: testMapping(1, 2, true), SQS: q, QueueURL: "http://fake/q", Function: fc,
		PollWait: time.Second, OnBatch: func(r BatchReport) { reports <- r }})
	if err != nil {
		t.Fatal(err)
	}
	if err := esm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer esm.Stop()
	busy := func() int {
		n := 0
		esm.envMu.Lock()
		defer esm.envMu.Unlock()
		for _, inv := range esm.envs {
			if inv.(*Function).InFlight() != "" {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); busy() < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d environments busy, want 2", busy())
		}
	}
	var choices []int
	pid := esm.KillOne(func(n int) int { choices = append(choices, n); return n - 1 })
	if pid == 0 || len(choices) != 1 || choices[0] != 2 {
		t.Fatalf("KillOne = %d after choosing among %v, want a process among 2", pid, choices)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d after KillOne: %v, want it gone", pid, err)
	}
	select {
	case r := <-reports:
		if r.Response == nil || r.Response.Err == nil || r.Response.Err.Type != "Runtime.ExitError" {
			t.Fatalf("report %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the killed batch was not settled")
	}
	if n := busy(); n != 1 {
		t.Errorf("%d environments busy after KillOne, want the other one", n)
	}
	if second := esm.KillOne(func(n int) int { return 0 }); second == 0 || second == pid {
		t.Errorf("the second KillOne = %d (the first killed %d)", second, pid)
	}
	<-reports
	if got := esm.KillOne(func(int) int { t.Error("pick called with none busy"); return 0 }); got != 0 {
		t.Errorf("KillOne with none busy = %d", got)
	}
}
