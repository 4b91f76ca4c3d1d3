package dynamoworld

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/skeinflow/skein/world"
)

// The inbox holds the webhook requests too large for a queue message, from
// the webhook function that accepts them to the flow function that commits
// them (worker.Inbox): one object per delivery, under Prefix+"inbox/",
// deleted once committed. The delivery's queue message carries the
// object's digest, which the flow function checks. The webhook function's
// role may put objects there and nowhere else in the bucket.

// maxInboxObject bounds what GetDelivery reads: a webhook request is at
// most 1 MiB, 2 MiB as JSON with its headers.
const maxInboxObject = 4 << 20

// deliveryIDOK reports whether id can name an inbox object: letters,
// digits, '_' and '-', 1 to 64 of them.
func deliveryIDOK(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

func (w *store) inboxKey(id string) (string, error) {
	if !deliveryIDOK(id) {
		return "", invalid("inbox: delivery ID %q", id)
	}
	return w.cfg.Prefix + "inbox/" + id, nil
}

// PutDelivery is World.PutDelivery.
func (w *store) PutDelivery(ctx context.Context, id string, data []byte) error {
	key, err := w.inboxKey(id)
	if err != nil {
		return err
	}
	_, err = w.cfg.S3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(w.cfg.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(data), ContentType: aws.String("application/json"),
	})
	if err != nil {
		return s3Err("PutObject", w.cfg.Bucket, key, err)
	}
	return nil
}

// GetDelivery is World.GetDelivery.
func (w *store) GetDelivery(ctx context.Context, id string) ([]byte, error) {
	key, err := w.inboxKey(id)
	if err != nil {
		return nil, err
	}
	out, err := w.cfg.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(w.cfg.Bucket), Key: aws.String(key)})
	if err != nil {
		if errorCode(err) == "NoSuchKey" {
			return nil, fmt.Errorf("%w: inbox object s3://%s/%s", world.ErrNotFound, w.cfg.Bucket, key)
		}
		return nil, s3Err("GetObject", w.cfg.Bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, maxInboxObject+1))
	if err != nil {
		return nil, s3Err("GetObject", w.cfg.Bucket, key, err)
	}
	if len(b) > maxInboxObject {
		return nil, fmt.Errorf("%w: inbox object s3://%s/%s is over %d bytes", world.ErrInvalid, w.cfg.Bucket, key, maxInboxObject)
	}
	return b, nil
}

// objectDeleter is the S3 call DeleteDelivery makes, when the S3 client
// has it (the AWS client does).
type objectDeleter interface {
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// DeleteDelivery is World.DeleteDelivery.
func (w *store) DeleteDelivery(ctx context.Context, id string) error {
	key, err := w.inboxKey(id)
	if err != nil {
		return err
	}
	d, ok := w.cfg.S3.(objectDeleter)
	if !ok {
		return nil
	}
	if _, err := d.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(w.cfg.Bucket), Key: aws.String(key)}); err != nil {
		return s3Err("DeleteObject", w.cfg.Bucket, key, err)
	}
	return nil
}
