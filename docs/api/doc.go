// Package api holds the OpenAPI document of Skein's HTTP API
// (openapi.yaml, beside this file): the routes the API function serves
// (handler.NewAPI), their request and response shapes, and the problem
// details its errors are. The API serves it at GET /v1/openapi.yaml, and
// the handler's tests validate the document and every response they get
// against it, so that it describes what the code does.
package api

import (
	"bytes"
	_ "embed" // openapi.yaml
)

//go:embed openapi.yaml
var openAPI []byte

// OpenAPI returns the OpenAPI document (YAML) of the HTTP API.
func OpenAPI() []byte { return bytes.Clone(openAPI) }
