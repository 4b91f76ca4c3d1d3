package integration

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// leadingKeysKey is the condition key IAM sets to the partition key values
// of the items a DynamoDB request reads or writes.
const leadingKeysKey = "dynamodb:LeadingKeys"

// ddbAttr is an attribute value in DynamoDB's JSON protocol; only strings
// matter as partition keys here.
type ddbAttr struct{ S *string }

// ddbKeyed is the part of a request or a transaction item that names an
// item: its table and key (or, for a put, the whole item).
type ddbKeyed struct {
	TableName string
	Key       map[string]ddbAttr
	Item      map[string]ddbAttr
}

// decodeDynamoDB decodes a DynamoDB request (JSON protocol) by its
// X-Amz-Target into what IAM authorises: a transaction item by item
// (PutItem, UpdateItem, DeleteItem, ConditionCheckItem; GetItem for
// TransactGetItems), a batch per table and partition key, a Query or Scan
// with IndexName on the index. Each request names the partition key value
// it touches as the condition key dynamodb:LeadingKeys (a Query's is the
// value its key condition sets the partition key to), so that a policy can
// limit a role to some partitions; the table's partition key is
// arns.PartitionKey ("pk" when unset).
func decodeDynamoDB(arns iamARNs, target string, body []byte) ([]iamRequest, error) {
	op, ok := strings.CutPrefix(target, "DynamoDB_20120810.")
	if !ok {
		return nil, fmt.Errorf("DynamoDB: X-Amz-Target %q", target)
	}
	var in struct {
		ddbKeyed
		IndexName                 string
		KeyConditionExpression    string
		ExpressionAttributeNames  map[string]string
		ExpressionAttributeValues map[string]ddbAttr
		RequestItems              map[string]json.RawMessage
		TransactItems             []map[string]ddbKeyed
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("DynamoDB %s: body: %w", op, err)
	}
	pk := arns.PartitionKey
	if pk == "" {
		pk = "pk"
	}
	switch op {
	case "TransactWriteItems", "TransactGetItems":
		var out []iamRequest
		for i, item := range in.TransactItems {
			if len(item) != 1 {
				return nil, fmt.Errorf("DynamoDB %s: item %d has %d operations", op, i, len(item))
			}
			for kind, x := range item {
				action := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}[kind]
				if action == "" {
					return nil, fmt.Errorf("DynamoDB %s: item %d: unknown operation %s", op, i, kind)
				}
				out = append(out, withLeadingKey(iamRequest{Action: "dynamodb:" + action, Resource: arns.Table(x.TableName)}, x.leadingKey(pk)))
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("DynamoDB %s without items", op)
		}
		return out, nil
	case "BatchGetItem", "BatchWriteItem":
		return decodeBatch(arns, op, pk, in.RequestItems)
	}
	if in.TableName == "" {
		// ListTables and the like: account-wide, "*" as IAM sees it.
		return []iamRequest{{Action: "dynamodb:" + op, Resource: "*"}}, nil
	}
	res := arns.Table(in.TableName)
	if in.IndexName != "" && (op == "Query" || op == "Scan") {
		res += "/index/" + in.IndexName
	}
	key := in.leadingKey(pk)
	if op == "Query" {
		key = queryPartition(in.KeyConditionExpression, pk, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	}
	return []iamRequest{withLeadingKey(iamRequest{Action: "dynamodb:" + op, Resource: res}, key)}, nil
}

// decodeBatch is one request per table, or per table and partition key
// when the batch names keys: a policy whose LeadingKeys condition is
// ForAllValues holds for the batch when it holds for each key.
func decodeBatch(arns iamARNs, op, pk string, items map[string]json.RawMessage) ([]iamRequest, error) {
	tables := make([]string, 0, len(items))
	for t := range items {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	var out []iamRequest
	for _, t := range tables {
		var keys []ddbKeyed
		if op == "BatchGetItem" {
			var get struct{ Keys []map[string]ddbAttr }
			if err := json.Unmarshal(items[t], &get); err != nil {
				return nil, fmt.Errorf("DynamoDB %s: %s: %w", op, t, err)
			}
			for _, k := range get.Keys {
				keys = append(keys, ddbKeyed{Key: k})
			}
		} else {
			var writes []struct{ PutRequest, DeleteRequest *ddbKeyed }
			if err := json.Unmarshal(items[t], &writes); err != nil {
				return nil, fmt.Errorf("DynamoDB %s: %s: %w", op, t, err)
			}
			for _, w := range writes {
				for _, k := range []*ddbKeyed{w.PutRequest, w.DeleteRequest} {
					if k != nil {
						keys = append(keys, *k)
					}
				}
			}
		}
		seen := map[string]bool{}
		for _, k := range keys {
			if v := k.leadingKey(pk); v != "" && !seen[v] {
				seen[v] = true
				out = append(out, withLeadingKey(iamRequest{Action: "dynamodb:" + op, Resource: arns.Table(t)}, v))
			}
		}
		if len(seen) == 0 {
			out = append(out, iamRequest{Action: "dynamodb:" + op, Resource: arns.Table(t)})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("DynamoDB %s without tables", op)
	}
	return out, nil
}

// leadingKey is the partition key value k names, "" when it names none.
func (k ddbKeyed) leadingKey(pk string) string {
	for _, m := range []map[string]ddbAttr{k.Key, k.Item} {
		if a, ok := m[pk]; ok && a.S != nil {
			return *a.S
		}
	}
	return ""
}

// queryPartition is the partition key value a Query's key condition sets:
// the value of its equality on pk, or on a table without pk (an index's
// own partition key) its first equality. A key condition is an equality on
// the partition key and, after AND, a condition on the sort key.
func queryPartition(cond, pk string, names map[string]string, values map[string]ddbAttr) string {
	first := ""
	for _, part := range strings.Split(cond, " AND ") {
		lhs, rhs, ok := strings.Cut(part, "=")
		if !ok || strings.ContainsAny(lhs, "<>!(") {
			continue
		}
		name, ph := strings.TrimSpace(lhs), strings.TrimSpace(rhs)
		if n, ok := names[name]; ok {
			name = n
		}
		a, ok := values[ph]
		if !ok || a.S == nil {
			continue
		}
		if name == pk {
			return *a.S
		}
		if first == "" {
			first = *a.S
		}
	}
	return first
}

func withLeadingKey(r iamRequest, key string) iamRequest {
	if key != "" {
		r.Context = map[string]string{leadingKeysKey: key}
	}
	return r
}
