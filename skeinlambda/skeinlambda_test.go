package skeinlambda

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/skeinflow/skein/dynamoworld"
)

func TestUsesSystemRoots(t *testing.T) {
	customCA := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.TLSClientConfig = &tls.Config{RootCAs: x509.NewCertPool()}
	})
	for _, c := range []struct {
		name     string
		endpoint string // aws.Config.BaseEndpoint (AWS_ENDPOINT_URL)
		client   aws.HTTPClient
		want     bool
	}{
		{"AWS", "", nil, true},
		{"https endpoint", "https://localhost.localstack.cloud:4566", nil, true},
		{"http endpoints (emulators)", "http://127.0.0.1:4566", nil, false},
		{"AWS with a custom CA bundle", "", customCA, false},
		{"http endpoints with a custom CA bundle", "http://127.0.0.1:4566", customCA, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := aws.Config{Region: "us-east-1", HTTPClient: c.client}
			if c.endpoint != "" {
				cfg.BaseEndpoint = aws.String(c.endpoint)
			}
			if got := usesSystemRoots(cfg, dynamoworld.NewClients(cfg, dynamoworld.ClientOptions{})); got != c.want {
				t.Errorf("usesSystemRoots = %v, want %v", got, c.want)
			}
		})
	}
}
