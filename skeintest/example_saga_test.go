package skeintest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skeinflow/skein/skeintest"
	"github.com/skeinflow/skein/workflow"
)

// A trip: book a flight (undone by cancel-flight), then a hotel, which is
// full; the saga cancels the flight, the airline's API busy twice first.

var cancelFlight = workflow.NewStep("cancel-flight", func(ctx context.Context, c workflow.Compensation[string, string]) (struct{}, error) {
	if m, _ := workflow.StepMetadataFrom(ctx); m.Attempt <= 2 {
		return struct{}{}, errors.New("airline API busy")
	}
	return struct{}{}, nil
}, workflow.StepOptions{MaxRetries: 5, Backoff: func(int) time.Duration { return time.Minute }})

var bookFlight = workflow.WithCompensation(workflow.NewStep("book-flight", func(_ context.Context, to string) (string, error) {
	return "flight to " + to, nil
}), cancelFlight)

var bookHotel = workflow.NewStep("book-hotel", func(context.Context, string) (string, error) {
	return "", workflow.Fatal(errors.New("hotel full"))
})

var trip = workflow.New("trip", func(ctx workflow.Context, to string) (string, error) {
	flight, err := bookFlight.Call(ctx, to)
	if err != nil {
		return "", err
	}
	hotel, err := bookHotel.Call(ctx, to)
	return flight + ", " + hotel, err
}).WithCompensateOnFailure()

// A failed saga ends before it compensates: Result returns the failure,
// Env.WaitDeactivated waits for the compensations (their backoff skipped)
// and returns the run at rest.
func ExampleEnv_WaitDeactivated() {
	example(func(t testing.TB) {
		env := skeintest.New(t, workflow.NewRegistry().MustRegister(cancelFlight, bookFlight, bookHotel, trip),
			skeintest.WithStartTime(jan1))
		run, err := trip.Start(env.Context(), env.Client(), "Lisbon")
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		_, err = skeintest.Result(env, run)
		fmt.Println("result:", err != nil)
		r := env.WaitDeactivated(run.ID())
		fmt.Printf("compensations: %+v, at rest after %s\n", r.Compensations, r.DeactivatedAt.Sub(jan1).Round(time.Minute))
		env.ExpectStepAttempts(run.ID(), "cancel-flight", 3)
	})
	// Output:
	// result: true
	// compensations: {Owed:0 Running:0 Succeeded:1 Failed:0}, at rest after 2m0s
}
