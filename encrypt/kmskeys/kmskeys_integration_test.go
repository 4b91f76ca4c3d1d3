//go:build integration

package kmskeys_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/skeinflow/skein/encrypt"
	"github.com/skeinflow/skein/encrypt/kmskeys"
)

// kmsClient is a KMS client on the emulator (moto) the environment names.
func kmsClient(t *testing.T) *kms.Client {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL_KMS") == "" {
		if os.Getenv("SKEIN_REQUIRE_EMULATORS") != "" {
			t.Fatal("SKEIN_REQUIRE_EMULATORS is set but AWS_ENDPOINT_URL_KMS is not: load localstack/emulators.sh env")
		}
		t.Skip("no KMS emulator (AWS_ENDPOINT_URL_KMS)")
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return kms.NewFromConfig(cfg)
}

func newKey(t *testing.T, c *kms.Client) string {
	t.Helper()
	out, err := c.CreateKey(context.Background(), &kms.CreateKeyInput{Description: aws.String("skein test " + t.Name())})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.KeyMetadata.Arn)
}

func TestKMSKeyring(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := kmsClient(t)
	k1, k2 := newKey(t, c), newKey(t, c)
	ring, err := kmskeys.New(c, k1)
	if err != nil {
		t.Fatal(err)
	}
	plain, wrapped, id, err := ring.NewDataKey(ctx)
	if err != nil || id != k1 || len(plain) != encrypt.DataKeySize || bytes.Contains(wrapped, plain) {
		t.Fatalf("NewDataKey: key %q, %d bytes, %v", id, len(plain), err)
	}
	// Any keyring on the account opens it: Decrypt finds the key.
	other, _ := kmskeys.New(c, k2)
	got, err := other.OpenDataKey(ctx, id, wrapped)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("OpenDataKey = %v", err)
	}
	// Tampered, or claimed for another key: a KeyError naming the key.
	bad := bytes.Clone(wrapped)
	bad[len(bad)/2] ^= 1
	for _, tc := range []struct {
		name    string
		id      string
		wrapped []byte
	}{
		{"tampered", k1, bad},
		{"another key", k2, wrapped},
	} {
		_, err := ring.OpenDataKey(ctx, tc.id, tc.wrapped)
		var ke *encrypt.KeyError
		if !errors.As(err, &ke) || ke.KeyID != tc.id {
			t.Errorf("%s: OpenDataKey = %v; want a *KeyError naming %s", tc.name, err, tc.id)
		}
	}
}
