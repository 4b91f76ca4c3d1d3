//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/skeinflow/skein/client"
	"github.com/skeinflow/skein/dynamoworld"
	"github.com/skeinflow/skein/internal/dynamotest"
)

// skein ui on a deployed stack (the emulators), by resource flags: the run
// page shows an input the World claim-checked to S3, read back whole (the
// page clips it, giving its whole size).
func TestUIOnDeployedStack(t *testing.T) {
	t.Parallel()
	c := dynamotest.Clients(t, dynamoworld.ClientOptions{})
	res, queueURL := dynamotest.NewResources(t, c)
	w, err := dynamoworld.New(context.Background(), dynamotest.Config(c, res, queueURL))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	client, err := client.New(client.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	// Over the claim-check threshold: the input lives in S3.
	big := strings.Repeat("x", dynamoworld.DefaultClaimCheckThreshold) + "<end-of-the-big-input>"
	id, err := client.Start(context.Background(), "ticker", big)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := startUI(t, "-table", res.Table, "-queue-url", queueURL, "-bucket", res.Bucket)
	resp, err := http.Get(base + "/runs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "ticker") {
		t.Fatalf("GET the run page = %d\n%.2000s", resp.StatusCode, page)
	}
	// The input, clipped, with the size of the whole (its JSON), which only
	// the object read back from S3 gives.
	raw, _ := json.Marshal(big)
	whole := fmt.Sprintf("(%d bytes in all;", len(raw))
	if !strings.Contains(page, whole) {
		t.Errorf("the page lacks the claim-checked input's size %q", whole)
	}
	if strings.Contains(page, "read-only") {
		t.Error("the dashboard on a stack is read-only")
	}
}
