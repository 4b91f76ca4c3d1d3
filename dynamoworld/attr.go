package dynamoworld

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// item is one DynamoDB item.
type item = map[string]types.AttributeValue

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func boolean(b bool) types.AttributeValue {
	return &types.AttributeValueMemberBOOL{Value: b}
}

// setS, setN and setT store a value, or nothing for the zero value, so that
// items carry only what they need.
func setS(it item, name, v string) {
	if v != "" {
		it[name] = str(v)
	}
}

func setN(it item, name string, v int64) { it[name] = num(v) }

func setT(it item, name string, t time.Time) {
	if !t.IsZero() {
		it[name] = num(t.UnixNano())
	}
}

func getS(it item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(it item, name string) int64 {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func getBool(it item, name string) bool {
	if v, ok := it[name].(*types.AttributeValueMemberBOOL); ok {
		return v.Value
	}
	return false
}

// getT reads a time stored as Unix nanoseconds; absent is the zero time.
func getT(it item, name string) time.Time {
	if _, ok := it[name]; !ok {
		return time.Time{}
	}
	return time.Unix(0, getN(it, name)).UTC()
}

// avSize estimates the stored size of an attribute value as DynamoDB counts
// it: the bytes of strings and binaries, about one byte per two digits of a
// number, plus the names and a little overhead in containers.
func avSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)/2 + 2
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += len(k) + avSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += avSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	}
	return 16
}

// itemSize estimates an item's stored size.
func itemSize(it item) int {
	n := 0
	for k, v := range it {
		n += len(k) + avSize(v)
	}
	return n
}

// expr builds the placeholders of one expression set: every attribute name
// goes through "#name" (no reserved-word surprises) and every value through
// ":vN".
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

func (e *expr) n(attr string) string {
	k := "#" + attr
	e.names[k] = attr
	return k
}

func (e *expr) v(v types.AttributeValue) string {
	k := fmt.Sprintf(":v%d", len(e.values))
	e.values[k] = v
	return k
}

func (e *expr) nameMap() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

func (e *expr) valueMap() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

// notExists is the condition that the item does not exist yet.
func (e *expr) notExists() string { return "attribute_not_exists(" + e.n(attrPK) + ")" }

func (e *expr) exists() string { return "attribute_exists(" + e.n(attrPK) + ")" }

// updateBuilder collects SET and REMOVE clauses.
type updateBuilder struct {
	e      *expr
	sets   []string
	remove []string
}

func (u *updateBuilder) set(attr string, v types.AttributeValue) {
	u.sets = append(u.sets, u.e.n(attr)+" = "+u.e.v(v))
}

func (u *updateBuilder) del(attr string) { u.remove = append(u.remove, u.e.n(attr)) }

func (u *updateBuilder) empty() bool { return len(u.sets) == 0 && len(u.remove) == 0 }

func (u *updateBuilder) String() string {
	s := ""
	if len(u.sets) > 0 {
		s = "SET " + join(u.sets)
	}
	if len(u.remove) > 0 {
		if s != "" {
			s += " "
		}
		s += "REMOVE " + join(u.remove)
	}
	return s
}

func join(parts []string) string {
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += ", "
		}
		s += p
	}
	return s
}

// avEqual compares the scalar attribute values the World writes.
func avEqual(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	}
	return false
}

func sortStrings(s []string) { slices.Sort(s) }
