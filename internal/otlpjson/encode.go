package otlpjson

import (
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OTLP JSON shapes (the protobuf messages' JSON mapping: IDs in hex,
// 64-bit integers as strings, enums as numbers).
type (
	exportRequest struct {
		ResourceSpans []resourceSpans `json:"resourceSpans"`
	}
	resourceSpans struct {
		Resource   jsonResource `json:"resource"`
		ScopeSpans []scopeSpans `json:"scopeSpans"`
		SchemaURL  string       `json:"schemaUrl,omitempty"`
	}
	jsonResource struct {
		Attributes []keyValue `json:"attributes,omitempty"`
	}
	scopeSpans struct {
		Scope     scope  `json:"scope"`
		Spans     []span `json:"spans"`
		SchemaURL string `json:"schemaUrl,omitempty"`
	}
	scope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	span struct {
		TraceID           string     `json:"traceId"`
		SpanID            string     `json:"spanId"`
		TraceState        string     `json:"traceState,omitempty"`
		ParentSpanID      string     `json:"parentSpanId,omitempty"`
		Flags             uint32     `json:"flags,omitempty"`
		Name              string     `json:"name"`
		Kind              int        `json:"kind"`
		StartTimeUnixNano string     `json:"startTimeUnixNano"`
		EndTimeUnixNano   string     `json:"endTimeUnixNano"`
		Attributes        []keyValue `json:"attributes,omitempty"`
		Events            []event    `json:"events,omitempty"`
		Links             []link     `json:"links,omitempty"`
		Status            status     `json:"status"`
	}
	event struct {
		TimeUnixNano string     `json:"timeUnixNano"`
		Name         string     `json:"name"`
		Attributes   []keyValue `json:"attributes,omitempty"`
	}
	link struct {
		TraceID    string     `json:"traceId"`
		SpanID     string     `json:"spanId"`
		TraceState string     `json:"traceState,omitempty"`
		Attributes []keyValue `json:"attributes,omitempty"`
	}
	status struct {
		Code    int    `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	keyValue struct {
		Key   string   `json:"key"`
		Value anyValue `json:"value"`
	}
	anyValue struct {
		StringValue *string     `json:"stringValue,omitempty"`
		BoolValue   *bool       `json:"boolValue,omitempty"`
		IntValue    *string     `json:"intValue,omitempty"`
		DoubleValue *float64    `json:"doubleValue,omitempty"`
		ArrayValue  *arrayValue `json:"arrayValue,omitempty"`
	}
	arrayValue struct {
		Values []anyValue `json:"values"`
	}
)

// OTLP status codes (they differ from the Go API's numbering).
const (
	statusUnset = 0
	statusOK    = 1
	statusError = 2
)

// encode groups spans by resource and instrumentation scope.
func encode(spans []sdktrace.ReadOnlySpan) exportRequest {
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	var req exportRequest
	resIndex := map[*resource.Resource]int{}
	scopeIndex := map[scopeKey]int{}
	for _, s := range spans {
		res := s.Resource()
		ri, ok := resIndex[res]
		if !ok {
			ri = len(req.ResourceSpans)
			resIndex[res] = ri
			rs := resourceSpans{}
			if res != nil {
				rs.Resource.Attributes = keyValues(res.Attributes())
				rs.SchemaURL = res.SchemaURL()
			}
			req.ResourceSpans = append(req.ResourceSpans, rs)
		}
		rs := &req.ResourceSpans[ri]
		k := scopeKey{res, s.InstrumentationScope()}
		si, ok := scopeIndex[k]
		if !ok {
			si = len(rs.ScopeSpans)
			scopeIndex[k] = si
			rs.ScopeSpans = append(rs.ScopeSpans, scopeSpans{
				Scope: scope{Name: k.scope.Name, Version: k.scope.Version}, SchemaURL: k.scope.SchemaURL,
			})
		}
		rs.ScopeSpans[si].Spans = append(rs.ScopeSpans[si].Spans, encodeSpan(s))
	}
	return req
}

func encodeSpan(s sdktrace.ReadOnlySpan) span {
	sc := s.SpanContext()
	out := span{
		TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), TraceState: sc.TraceState().String(),
		Flags: uint32(sc.TraceFlags()), Name: s.Name(), Kind: int(s.SpanKind()),
		StartTimeUnixNano: nanos(s.StartTime().UnixNano()), EndTimeUnixNano: nanos(s.EndTime().UnixNano()),
		Attributes: keyValues(s.Attributes()),
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		out.ParentSpanID = p.SpanID().String()
	}
	for _, ev := range s.Events() {
		out.Events = append(out.Events, event{TimeUnixNano: nanos(ev.Time.UnixNano()), Name: ev.Name, Attributes: keyValues(ev.Attributes)})
	}
	for _, l := range s.Links() {
		out.Links = append(out.Links, link{
			TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String(),
			TraceState: l.SpanContext.TraceState().String(), Attributes: keyValues(l.Attributes),
		})
	}
	switch st := s.Status(); st.Code {
	case codes.Error:
		out.Status = status{Code: statusError, Message: st.Description}
	case codes.Ok:
		out.Status = status{Code: statusOK}
	default:
		out.Status = status{Code: statusUnset}
	}
	return out
}

func nanos(n int64) string { return strconv.FormatInt(n, 10) }

func keyValues(kvs []attribute.KeyValue) []keyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]keyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, keyValue{Key: string(kv.Key), Value: value(kv.Value)})
	}
	return out
}

func value(v attribute.Value) anyValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return anyValue{BoolValue: &b}
	case attribute.INT64:
		s := nanos(v.AsInt64())
		return anyValue{IntValue: &s}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return anyValue{DoubleValue: &f}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	default:
		s := v.String()
		return anyValue{StringValue: &s}
	}
}

func array[T any](vs []T, wrap func(T) attribute.Value) anyValue {
	a := &arrayValue{Values: make([]anyValue, 0, len(vs))}
	for _, x := range vs {
		a.Values = append(a.Values, value(wrap(x)))
	}
	return anyValue{ArrayValue: a}
}
