package dynamotest

import (
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The partition model. DynamoDB takes about 1,000 write units a second on
// one partition key value, of the table or of a global secondary index (a
// throttled index throttles the table's writes). Partitions counts, from
// the writes a Meter recorded in order, the write units that land on each
// partition key value: the table's (pk, by the item's size) and each
// index's (g1..g4: one unit per index entry written or deleted, the entries
// being keys only, or keys and the status for gs2). An index entry is
// written when an item is put with the index's key, when an update changes
// the key (a delete under the old value and a put under the new) or, for
// gs2, the projected status; it is deleted with the item. Writes are
// replayed on a shadow of the items' index attributes, so that an update's
// old values are known.

// indexAttrs are the attributes a write may change that the indexes key
// on or project: the four GSI partition keys and gs2's projected status.
var indexAttrs = []string{"g1", "g2", "g3", "g4", "st"}

// Partition is one partition key value: "table r#<run>" or "gs1 run07".
type Partition = string

// Partitions returns the write units per partition key value over the
// recorded writes.
func (m *Meter) Partitions() map[Partition]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	shadow := map[string]map[string]string{} // "pk/sk" -> index attributes
	out := map[Partition]float64{}
	for _, w := range m.ordered {
		switch p := w.(type) {
		case *dynamodb.PutItemInput:
			putEntry(out, shadow, p.Item, 1)
		case *dynamodb.UpdateItemInput:
			updateEntry(out, shadow, p.Key, p.UpdateExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues, 1)
		case *dynamodb.DeleteItemInput:
			deleteEntry(out, shadow, p.Key)
		case *dynamodb.TransactWriteItemsInput:
			for _, ti := range p.TransactItems {
				switch {
				case ti.Put != nil:
					putEntry(out, shadow, ti.Put.Item, 2)
				case ti.Update != nil:
					updateEntry(out, shadow, ti.Update.Key, ti.Update.UpdateExpression, ti.Update.ExpressionAttributeNames, ti.Update.ExpressionAttributeValues, 2)
				case ti.Delete != nil:
					deleteEntry(out, shadow, ti.Delete.Key)
				}
			}
		}
	}
	return out
}

func sVal(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return ""
}

func putEntry(out map[Partition]float64, shadow map[string]map[string]string, it map[string]types.AttributeValue, per float64) {
	k := itemKey(it)
	out["table "+sVal(it["pk"])] += per * float64(kb(ItemBytes(it)))
	now := map[string]string{}
	for _, a := range indexAttrs {
		if v, ok := it[a]; ok {
			now[a] = sVal(v)
		}
	}
	indexWrites(out, shadow[k], now)
	shadow[k] = now
}

func deleteEntry(out map[Partition]float64, shadow map[string]map[string]string, key map[string]types.AttributeValue) {
	k := itemKey(key)
	out["table "+sVal(key["pk"])]++
	indexWrites(out, shadow[k], nil)
	delete(shadow, k)
}

var setClause = regexp.MustCompile(`(#\w+)\s*=\s*(:\w+)`)

func updateEntry(out map[Partition]float64, shadow map[string]map[string]string, key map[string]types.AttributeValue, expr *string, names map[string]string, values map[string]types.AttributeValue, per float64) {
	k := itemKey(key)
	out["table "+sVal(key["pk"])] += per // the item's size is not known here: 1 KB
	if expr == nil {
		return
	}
	old := shadow[k]
	now := map[string]string{}
	for a, v := range old {
		now[a] = v
	}
	e := *expr
	set, remove := e, ""
	if i := strings.Index(e, "REMOVE"); i >= 0 {
		set, remove = e[:i], e[i+len("REMOVE"):]
	}
	for _, m := range setClause.FindAllStringSubmatch(set, -1) {
		if name, ok := names[m[1]]; ok {
			now[name] = sVal(values[m[2]])
		}
	}
	for _, n := range strings.Split(remove, ",") {
		if name, ok := names[strings.TrimSpace(n)]; ok {
			delete(now, name)
		}
	}
	indexWrites(out, old, now)
	shadow[k] = now
}

// indexWrites adds the index entries a change of an item's index
// attributes from old to now writes (nil: no item).
func indexWrites(out map[Partition]float64, old, now map[string]string) {
	for i, a := range []string{"g1", "g2", "g3", "g4"} {
		index := "gs" + string(rune('1'+i))
		o, had := old[a]
		n, has := now[a]
		switch {
		case had && has && o == n:
			if a == "g2" && old["st"] != now["st"] {
				out[index+" "+n]++ // the projected status changed
			}
		default:
			if had {
				out[index+" "+o]++
			}
			if has {
				out[index+" "+n]++
			}
		}
	}
}
