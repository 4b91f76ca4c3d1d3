package handler_test

import (
	"fmt"
	"github.com/skeinflow/skein/worker"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/skeinflow/skein/handler"
	"github.com/skeinflow/skein/localworld"
	"github.com/skeinflow/skein/workflow"
)

// The HTTP API over a local world: a start, the same start again (its
// idempotency key finds the first run), and an input of the wrong type.
func ExampleNewAPIServer() {
	w, err := localworld.Open(localworld.Config{}) // in memory
	if err != nil {
		panic(err)
	}
	defer w.Close()
	greet := workflow.New("greet", func(ctx workflow.Context, name string) (string, error) { return "hello, " + name, nil })
	reg := workflow.NewRegistry().MustRegister(greet)
	api, err := handler.NewAPIServer(handler.Config{Worker: worker.Config{World: w, Registry: reg}})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()

	post := func(body string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/workflows/greet/runs", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "greet-ada")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.Status, resp.Header.Get("Content-Type"), strings.Contains(string(b), `"status":"pending"`))
	}
	post(`{"input":"ada"}`)
	post(`{"input":"ada"}`)
	post(`{"input":42}`)
	// Output:
	// 201 Created application/json true
	// 200 OK application/json true
	// 400 Bad Request application/problem+json false
}
