// Package kmskeys is an encrypt.Keyring backed by AWS KMS (envelope
// encryption): each run's data key comes from GenerateDataKey under a KMS
// key and is opened with Decrypt, so the key-encryption key never leaves
// KMS and one Decrypt per run and process opens all of a run's payloads.
// The key ID a run records is the key ARN KMS answers with. Rotating needs
// nothing more: KMS's automatic rotation keeps old key material for
// Decrypt, and a new key named in the configuration wraps new runs while
// older runs name theirs. Every data key is drawn and opened with the
// encryption context skein=run-data-key, which CloudTrail logs show and
// key policies can require.
package kmskeys

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/skeinflow/skein/encrypt"
)

// API is the part of the KMS client the keyring uses.
type API interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// contextKey and contextValue are the encryption context every data key is
// drawn and opened with: a data key wrapped for something else does not
// open here.
const (
	contextKey   = "skein"
	contextValue = "run-data-key"
)

// Keys is a Keyring whose key-encryption key is in KMS.
type Keys struct {
	api   API
	keyID string
}

var _ encrypt.Keyring = (*Keys)(nil)

// New returns a keyring drawing data keys under keyID (a key ID, ARN, alias
// name or alias ARN). Without a key ID it only opens data keys: a reader's
// keyring (KMS finds the key from the ciphertext).
func New(api API, keyID string) (*Keys, error) {
	if api == nil {
		return nil, errors.New("kmskeys: a KMS client is required")
	}
	return &Keys{api: api, keyID: keyID}, nil
}

// NewDataKey draws a 256-bit data key under the configured KMS key.
func (k *Keys) NewDataKey(ctx context.Context) (plain, wrapped []byte, keyID string, err error) {
	if k.keyID == "" {
		return nil, nil, "", errors.New("kmskeys: no KMS key to draw data keys under (a reader's keyring)")
	}
	out, err := k.api.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId: aws.String(k.keyID), KeySpec: types.DataKeySpecAes256,
		EncryptionContext: map[string]string{contextKey: contextValue},
	})
	if err != nil {
		return nil, nil, "", fmt.Errorf("kmskeys: GenerateDataKey under %s: %w", k.keyID, err)
	}
	if len(out.Plaintext) != encrypt.DataKeySize {
		return nil, nil, "", fmt.Errorf("kmskeys: KMS gave a %d-byte data key, want %d", len(out.Plaintext), encrypt.DataKeySize)
	}
	id := aws.ToString(out.KeyId)
	if id == "" {
		id = k.keyID
	}
	return out.Plaintext, out.CiphertextBlob, id, nil
}

// OpenDataKey decrypts a data key with KMS, which must have been wrapped by
// keyID.
func (k *Keys) OpenDataKey(ctx context.Context, keyID string, wrapped []byte) ([]byte, error) {
	out, err := k.api.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob: wrapped, KeyId: aws.String(keyID),
		EncryptionContext: map[string]string{contextKey: contextValue},
	})
	if err != nil {
		return nil, &encrypt.KeyError{KeyID: keyID, Err: fmt.Errorf("KMS Decrypt: %w", err)}
	}
	return out.Plaintext, nil
}
