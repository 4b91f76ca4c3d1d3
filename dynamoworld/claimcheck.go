package dynamoworld

import (
	"time"

	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/skeinflow/skein/world"
)

// Payload attributes. Each holds a payload either inline (type B: the bytes)
// or claim-checked (type S: the S3 key of the bytes). No other attribute of
// an item uses these names.
const (
	attrInput   = "in"
	attrOutput  = "out"
	attrError   = "err"
	attrCompErr = "cerr" // a step's compensation's last error (compensation.go)
	attrContext = "ctx"
	attrAttrs   = "attrs"
	attrMeta    = "md"
	attrData    = "d"
)

func isPayloadAttr(name string) bool {
	switch name {
	case attrInput, attrOutput, attrError, attrCompErr, attrContext, attrAttrs, attrMeta, attrData:
		return true
	}
	return false
}

// claimCheck moves payloads to S3: content-addressed objects under
// <prefix>blobs/<runID>/<sha256>, so that a retried commit uploads nothing
// new and the same payload in an event and its entity is stored once.
type claimCheck struct {
	s3        S3API
	bucket    string
	prefix    string
	threshold int
	// retention is Config.Retention: without it no run's items expire,
	// so a missing object was deleted, not expired.
	retention time.Duration

	mu     sync.Mutex
	stored map[string]struct{} // keys this process uploaded (bounded)
}

const maxStoredKeys = 4096

func (c *claimCheck) key(runID string, data []byte) string {
	h := sha256.Sum256(data)
	return c.prefix + "blobs/" + runID + "/" + hex.EncodeToString(h[:])
}

// encItem is an item being built, with its payload attributes noted so that
// finalize can move them to S3.
type encItem struct {
	it       item
	payloads []string // payload attribute names set inline
}

func newEncItem(k itemKey) *encItem { return &encItem{it: k.av()} }

// payload sets a payload attribute inline; empty payloads are not stored.
func (e *encItem) payload(name string, data []byte) {
	if len(data) == 0 {
		return
	}
	e.it[name] = &types.AttributeValueMemberB{Value: data}
	e.payloads = append(e.payloads, name)
}

func inlineLen(it item, name string) int {
	if b, ok := it[name].(*types.AttributeValueMemberB); ok {
		return len(b.Value)
	}
	return 0
}

// offloadPlan decides which inline payloads of items go to S3: those over
// the threshold, then the largest of any item still over maxItemBytes, then
// the largest overall while the items together exceed maxBytes (0: no
// bound). It changes nothing; the result is indexed like items.
func (c *claimCheck) offloadPlan(items []*encItem, maxBytes int) ([]map[string]bool, error) {
	plan := make([]map[string]bool, len(items))
	sizes := make([]int, len(items))
	total := 0
	for i, e := range items {
		plan[i] = map[string]bool{}
		size := itemSize(e.it)
		for _, name := range e.payloads {
			if n := inlineLen(e.it, name); n > c.threshold {
				plan[i][name] = true
				size -= n - 80
			}
		}
		for size > maxItemBytes {
			name, n := largestInline(e, plan[i])
			if n == 0 {
				return nil, fmt.Errorf("%w: item %s is %d bytes without its payloads (over %d)", world.ErrInvalid, keyOf(e.it), size, maxItemBytes)
			}
			plan[i][name] = true
			size -= n - 80
		}
		sizes[i] = size
		total += size
	}
	for maxBytes > 0 && total > maxBytes {
		best, bestName, bestN := -1, "", 0
		for i, e := range items {
			if name, n := largestInline(e, plan[i]); n > bestN {
				best, bestName, bestN = i, name, n
			}
		}
		if best < 0 {
			return nil, fmt.Errorf("%w: commit of %d items is %d bytes without its payloads (over %d)", world.ErrInvalid, len(items), total, maxBytes)
		}
		plan[best][bestName] = true
		total -= bestN - 80
	}
	return plan, nil
}

func largestInline(e *encItem, skip map[string]bool) (string, int) {
	name, size := "", 0
	for _, p := range e.payloads {
		if n := inlineLen(e.it, p); !skip[p] && n > size {
			name, size = p, n
		}
	}
	return name, size
}

func keyOf(it item) string { return getS(it, attrPK) + "/" + getS(it, attrSK) }

// apply replaces the planned payloads by their S3 keys, seals each item
// (the checksums of the values it now holds, checksum.go) and returns the
// uploads they need (key -> bytes).
func (c *claimCheck) apply(runID string, items []*encItem, plan []map[string]bool) map[string][]byte {
	uploads := map[string][]byte{}
	for i, e := range items {
		for name := range plan[i] {
			data := e.it[name].(*types.AttributeValueMemberB).Value
			k := c.key(runID, data)
			e.it[name] = str(k)
			uploads[k] = data
		}
		seal(e.it)
	}
	return uploads
}

// upload stores payloads in S3 (those this process has not stored already).
func (c *claimCheck) upload(ctx context.Context, uploads map[string][]byte) error {
	keys := make([]string, 0, len(uploads))
	c.mu.Lock()
	for k := range uploads {
		if _, done := c.stored[k]; !done {
			keys = append(keys, k)
		}
	}
	c.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	err := parallel(ctx, len(keys), 8, func(ctx context.Context, i int) error {
		k := keys[i]
		_, err := c.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(c.bucket), Key: aws.String(k),
			Body: bytes.NewReader(uploads[k]), ContentType: aws.String("application/json"),
		})
		if err != nil {
			return s3Err("PutObject", c.bucket, k, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	if len(c.stored)+len(keys) > maxStoredKeys {
		clear(c.stored)
	}
	for _, k := range keys {
		c.stored[k] = struct{}{}
	}
	c.mu.Unlock()
	return nil
}

// fetch reads every claim-checked payload of items from S3; the result maps
// keys to bytes, for payloadOf.
func (c *claimCheck) fetch(ctx context.Context, items ...item) (map[string][]byte, error) {
	var keys []string
	whats := map[string]string{} // key -> what it holds, for an expiry's refusal
	for _, it := range items {
		for name, v := range it {
			s, ok := v.(*types.AttributeValueMemberS)
			if !ok || !isPayloadAttr(name) {
				continue
			}
			if err := verifyValue(it, name); err != nil {
				return nil, err // an edited key is not followed
			}
			if whats[s.Value] == "" {
				whats[s.Value] = payloadName(name) + " of item " + keyOf(it)
				keys = append(keys, s.Value)
			}
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	out := make(map[string][]byte, len(keys))
	var mu sync.Mutex
	err := parallel(ctx, len(keys), 16, func(ctx context.Context, i int) error {
		b, err := c.get(ctx, keys[i])
		if errors.Is(err, world.ErrGone) {
			err = c.expired(keys[i], whats[keys[i]]+" (claim-checked payload s3://"+c.bucket+"/"+keys[i]+")")
		} else if errors.Is(err, world.ErrCorrupt) {
			err = fmt.Errorf("%w (the %s)", err, whats[keys[i]])
		}
		if err != nil {
			return err
		}
		mu.Lock()
		out[keys[i]] = b
		mu.Unlock()
		return nil
	})
	return out, err
}

// fetchCommits fetches what decoding commit items needs: their claim-
// checked payloads, then the claim-checked data of their events.
func (c *claimCheck) fetchCommits(ctx context.Context, items []item) (map[string][]byte, error) {
	fetched, err := c.fetch(ctx, items...)
	if err != nil {
		return nil, err
	}
	var refs []string
	for _, it := range items {
		evs, err := commitEvents(it, fetched)
		if err != nil {
			return nil, err
		}
		for _, se := range evs {
			if se.Ref != "" {
				refs = append(refs, se.Ref)
			}
		}
	}
	if len(refs) == 0 {
		return fetched, nil
	}
	if fetched == nil {
		fetched = map[string][]byte{}
	}
	var mu sync.Mutex
	err = parallel(ctx, len(refs), 16, func(ctx context.Context, i int) error {
		b, err := c.get(ctx, refs[i])
		if errors.Is(err, world.ErrGone) {
			err = c.expired(refs[i], "event data (claim-checked payload s3://"+c.bucket+"/"+refs[i]+")")
		}
		if err != nil {
			return err
		}
		mu.Lock()
		fetched[refs[i]] = b
		mu.Unlock()
		return nil
	})
	return fetched, err
}

// expired is the refusal of a read of key, which the bucket's lifecycle
// rule has expired: what names the part of the run it held.
func (c *claimCheck) expired(key, what string) error {
	return &world.RefusalError{Kind: world.ErrGone, Entity: runOfKey(c.prefix, key), Reason: what + " has expired"}
}

func (c *claimCheck) get(ctx context.Context, key string) ([]byte, error) {
	if !strings.HasPrefix(key, c.prefix+"blobs/") {
		return nil, fmt.Errorf("dynamoworld: claim check reference %q is outside %sblobs/", key, c.prefix)
	}
	out, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(key)})
	if err != nil {
		switch errorCode(err) {
		case "NoSuchKey":
			if c.retention == 0 {
				// Runs are kept forever: nothing may expire the object.
				return nil, fmt.Errorf("%w: dynamoworld: run %s: claim-checked payload s3://%s/%s is missing (deleted: runs on this table are kept forever, Config.Retention is 0, so no lifecycle rule may expire it)",
					world.ErrCorrupt, runOfKey(c.prefix, key), c.bucket, key)
			}
			// The bucket's lifecycle rule expired it (or someone deleted it).
			return nil, c.expired(key, "claim-checked payload s3://"+c.bucket+"/"+key)
		case "AccessDenied":
			// S3 cannot say NoSuchKey to a caller without s3:ListBucket on
			// the bucket: it answers 403 for a missing object too.
			return nil, s3Err("GetObject", c.bucket, key, fmt.Errorf("%w (a missing object looks the same to a caller without s3:ListBucket: it may have expired)", err))
		}
		return nil, s3Err("GetObject", c.bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, s3Err("GetObject", c.bucket, key, err)
	}
	if err := c.verify(key, b); err != nil {
		return nil, err
	}
	return b, nil
}

// verify checks that b is what key promises: its last element is the
// SHA-256 of the bytes stored under it (key), sealed or not. An object
// that was damaged or replaced is world.ErrCorrupt, never data.
func (c *claimCheck) verify(key string, b []byte) error {
	want := key[strings.LastIndexByte(key, '/')+1:]
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != want {
		return fmt.Errorf("%w: run %s: claim-checked payload s3://%s/%s holds %d bytes whose sha256 is %s, not the one its key names (the object was damaged or replaced)",
			world.ErrCorrupt, runOfKey(c.prefix, key), c.bucket, key, len(b), got)
	}
	return nil
}

// payloadName says what a payload attribute holds, for errors.
func payloadName(attr string) string {
	switch attr {
	case attrInput:
		return "input"
	case attrOutput:
		return "output"
	case attrError:
		return "error"
	case attrCompErr:
		return "compensation error"
	case attrContext:
		return "execution context"
	case attrAttrs:
		return "attributes"
	case attrMeta:
		return "hook metadata"
	case aHoldError:
		return "held run's error"
	case aToken:
		return "hook token"
	case aWrittenAt:
		return "write mark"
	}
	return "event data"
}

// runOfKey returns the run ID of a claim-check key
// (<prefix>blobs/<runID>/<sha256>).
func runOfKey(prefix, key string) string {
	rest := strings.TrimPrefix(key, prefix+"blobs/")
	run, _, _ := strings.Cut(rest, "/")
	return run
}

// payloadOf returns a payload attribute's bytes, inline or fetched, once
// they verify against their checksum (checksum.go).
func payloadOf(it item, name string, fetched map[string][]byte) ([]byte, error) {
	if err := verifyValue(it, name); err != nil {
		return nil, err
	}
	switch v := it[name].(type) {
	case nil:
		return nil, nil
	case *types.AttributeValueMemberB:
		return v.Value, nil
	case *types.AttributeValueMemberS:
		b, ok := fetched[v.Value]
		if !ok {
			return nil, errors.New("dynamoworld: claim-checked payload " + v.Value + " was not fetched")
		}
		return b, nil
	}
	return nil, fmt.Errorf("dynamoworld: payload attribute %q of %s has an unexpected type", name, keyOf(it))
}
