package dynamoworld

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Key attributes and index names (see doc.go for the table design).
const (
	attrPK  = "pk"
	attrSK  = "sk"
	attrGSK = "gsk" // sort key of every GSI: created time and ID
	attrG1  = "g1"  // GSI "g1" partition: "run" for runs, "hook" for hooks
	attrG2  = "g2"  // GSI "g2" partition: "wf#<workflow>"
	attrG3  = "g3"  // GSI "g3" partition: "st#<status>"
	attrTTL = "ttl"

	indexAll      = "gs1"
	indexWorkflow = "gs2"
	indexStatus   = "gs3"

	g1Run  = "run"
	g1Hook = "hook"
)

// Sort keys inside a run's partition ("r#<runID>"). The head and the body
// sort right after the commits ("e~" > "e#..."), so one Query reads the
// body, the head and the newest commit.
const (
	skRunHead  = "e~"    // status, times, GSI keys
	skRunBody  = "e~b"   // immutable inputs, and outputs once ended
	skLease    = "lease" // the run lease
	prefStep   = "s#"
	prefWait   = "w#"
	prefHook   = "h#" // a run's link to its active hook
	prefStream = "o#" // a stream's marker: the run has a stream of that name
	skStreams  = "oc" // the run's count of streams (n), within Limits.MaxStreams
	prefCommit = "e#" // a commit: its events, keyed by the run's last sequence number before it
	prefLease  = "x#" // a lazy step's renewed lease (lazy.go), outside the entities' range

	skHook  = "hook" // the global hook item, pk "h#<hookID>"
	skToken = "tok"  // pk "t#<sha256(token)>"
	skIdem  = "idem" // pk "i#<sha256(run idempotency key)>"
	skDedup = "q"    // pk "q#<sha256(queue idempotency key)>"
)

type itemKey struct{ pk, sk string }

func (k itemKey) av() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(k.pk), attrSK: str(k.sk)}
}

func (k itemKey) String() string { return k.pk + "/" + k.sk }

func runPK(runID string) string { return "r#" + runID }

func runHeadKey(runID string) itemKey { return itemKey{runPK(runID), skRunHead} }
func runBodyKey(runID string) itemKey { return itemKey{runPK(runID), skRunBody} }
func leaseKey(runID string) itemKey   { return itemKey{runPK(runID), skLease} }
func stepKey(runID, id string) itemKey {
	return itemKey{runPK(runID), prefStep + id}
}
func leaseRecordKey(runID, id string) itemKey {
	return itemKey{runPK(runID), prefLease + id}
}
func waitKey(runID, id string) itemKey     { return itemKey{runPK(runID), prefWait + id} }
func hookLinkKey(runID, id string) itemKey { return itemKey{runPK(runID), prefHook + id} }
func streamKey(runID, name string) itemKey { return itemKey{runPK(runID), prefStream + name} }
func streamCountKey(runID string) itemKey  { return itemKey{runPK(runID), skStreams} }
func commitKey(runID string, prev int64) itemKey {
	return itemKey{runPK(runID), commitSK(prev)}
}
func commitSK(prev int64) string    { return fmt.Sprintf("%s%020d", prefCommit, prev) }
func hookKey(id string) itemKey     { return itemKey{"h#" + id, skHook} }
func tokenKey(token string) itemKey { return itemKey{"t#" + digest(token), skToken} }
func idemKey(key string) itemKey    { return itemKey{"i#" + digest(key), skIdem} }
func dedupeKey(key string) itemKey  { return itemKey{"q#" + digest(key), skDedup} }
func digest(s string) string        { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
func prevFromSK(sk string) (int64, bool) {
	if len(sk) != len(prefCommit)+20 || sk[:len(prefCommit)] != prefCommit {
		return 0, false
	}
	n, err := strconv.ParseInt(sk[len(prefCommit):], 10, 64)
	return n, err == nil
}

// gsk orders runs and hooks by creation time, then ID: fixed-width
// nanoseconds so that string order is time order.
func gsk(t time.Time, id string) string { return fmt.Sprintf("%020d#%s", t.UnixNano(), id) }
