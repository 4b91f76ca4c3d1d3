package api_test

import (
	"bufio"
	"bytes"
	"fmt"

	api "github.com/skeinflow/skein/docs/api"
)

// The document is OpenAPI 3.0 YAML; the API function serves the same bytes
// at GET /v1/openapi.yaml.
func ExampleOpenAPI() {
	sc := bufio.NewScanner(bytes.NewReader(api.OpenAPI()))
	sc.Scan()
	fmt.Println(sc.Text())
	// Output: openapi: 3.0.3
}
