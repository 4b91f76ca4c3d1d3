package lambdaemu

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Lambda and SQS defaults, used when the template leaves a property out.
const (
	defaultBatchSize          = 10
	defaultFunctionTimeout    = 3 * time.Second
	defaultMemorySize         = 128
	defaultVisibilityTimeout  = 30 * time.Second
	defaultMessageRetention   = 4 * 24 * time.Hour
	defaultMaximumConcurrency = 5 // what the emulator runs when ScalingConfig is absent
)

// Mapping is an SQS event source mapping with its function and queue, as the template declares them.
// Fields may be adjusted after reading (tests shorten Function.Timeout and Queue.VisibilityTimeout).
type Mapping struct {
	FunctionID string // logical ID of the function
	QueueID    string // logical ID of the source queue
	EventID    string // SAM event name, or the AWS::Lambda::EventSourceMapping logical ID

	Enabled               bool
	BatchSize             int           // default 10
	MaximumBatchingWindow time.Duration // MaximumBatchingWindowInSeconds
	FunctionResponseTypes []string      // e.g. [ReportBatchItemFailures]
	MaximumConcurrency    int           // ScalingConfig.MaximumConcurrency; 0 when unset

	Function FunctionSpec
	Queue    QueueSpec

	// Unresolved lists the resource references in the function's environment (logical IDs, or
	// "LogicalID.Attribute" for !GetAtt) that had no value in ResolveOptions and so resolved to their
	// own names. A test that runs the real handler wants it empty.
	Unresolved []string
}

// ReportBatchItemFailures reports whether the mapping lists ReportBatchItemFailures.
func (m *Mapping) ReportBatchItemFailures() bool {
	return slices.Contains(m.FunctionResponseTypes, "ReportBatchItemFailures")
}

// FunctionSpec is what the emulator needs of a function.
type FunctionSpec struct {
	Runtime       string
	Handler       string
	CodeURI       string
	Architectures []string
	Timeout       time.Duration // default 3 s
	MemorySize    int           // MB, default 128
	Env           map[string]string
	LogFormat     string // LoggingConfig.LogFormat (Text or JSON)

	unresolved []string
}

// QueueSpec is what the emulator needs of an SQS queue.
type QueueSpec struct {
	VisibilityTimeout time.Duration // default 30 s
	Delay             time.Duration // DelaySeconds
	MessageRetention  time.Duration // default 4 days
	ReceiveWait       time.Duration // ReceiveMessageWaitTimeSeconds
	FIFO              bool
	// Redrive is the queue's RedrivePolicy; nil when it has none.
	Redrive *RedrivePolicy
}

// RedrivePolicy moves a message to DeadLetter after MaxReceiveCount receives.
type RedrivePolicy struct {
	DeadLetterID    string // logical ID of the dead-letter queue
	MaxReceiveCount int
	DeadLetter      QueueSpec
}

// MappingOptions selects and resolves a mapping.
type MappingOptions struct {
	ResolveOptions
	// Function is the logical ID of the function whose SQS mapping to read. Empty: the template must
	// have exactly one SQS mapping.
	Function string
}

// ReadMapping reads the SQS event source mapping from the template at path.
func ReadMapping(path string, opts *MappingOptions) (*Mapping, error) {
	t, err := ReadTemplate(path)
	if err != nil {
		return nil, err
	}
	return t.Mapping(opts)
}

type mappingSource struct {
	functionID, eventID string
	props               map[string]any // resolved event (or ESM) properties
	queueRef            any            // the unresolved queue reference
}

// Mapping returns the template's SQS event source mapping (see MappingOptions.Function).
func (t *Template) Mapping(opts *MappingOptions) (*Mapping, error) {
	if opts == nil {
		opts = &MappingOptions{}
	}
	r, err := t.newResolver(&opts.ResolveOptions)
	if err != nil {
		return nil, err
	}
	sources, err := t.sqsSources(r)
	if err != nil {
		return nil, err
	}
	var picked []mappingSource
	for _, s := range sources {
		if opts.Function == "" || s.functionID == opts.Function {
			picked = append(picked, s)
		}
	}
	switch {
	case len(picked) == 0 && opts.Function != "":
		return nil, fmt.Errorf("function %s has no SQS event source mapping", opts.Function)
	case len(picked) == 0:
		return nil, errors.New("the template has no SQS event source mapping")
	case len(picked) > 1:
		var names []string
		for _, s := range picked {
			names = append(names, s.functionID+"/"+s.eventID)
		}
		return nil, fmt.Errorf("several SQS event source mappings (%s): set MappingOptions.Function",
			strings.Join(names, ", "))
	}
	return r.mapping(picked[0])
}

// sqsSources finds SAM SQS events and AWS::Lambda::EventSourceMapping resources whose source is an
// AWS::SQS::Queue of the template.
func (t *Template) sqsSources(r *resolver) ([]mappingSource, error) {
	resources := t.section("Resources")
	ids := slices.Sorted(maps.Keys(resources))
	var out []mappingSource
	for _, id := range ids {
		res, _ := resources[id].(map[string]any)
		props, _ := res["Properties"].(map[string]any)
		switch res["Type"] {
		case "AWS::Serverless::Function":
			events, _ := props["Events"].(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(events)) {
				ev, _ := events[name].(map[string]any)
				if ev["Type"] != "SQS" {
					continue
				}
				evProps, _ := ev["Properties"].(map[string]any)
				resolved, err := r.resolveValue(withoutKey(evProps, "Queue"))
				if err != nil {
					return nil, fmt.Errorf("%s event %s: %w", id, name, err)
				}
				out = append(out, mappingSource{functionID: id, eventID: name,
					props: resolved.(map[string]any), queueRef: evProps["Queue"]})
			}
		case "AWS::Lambda::EventSourceMapping":
			fnID := refTarget(props["FunctionName"])
			if fnID == "" {
				continue
			}
			src := props["EventSourceArn"]
			if typ, _ := resourceType(resources, refTarget(src)); typ != "AWS::SQS::Queue" {
				continue
			}
			resolved, err := r.resolveValue(withoutKey(withoutKey(props, "EventSourceArn"), "FunctionName"))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", id, err)
			}
			out = append(out, mappingSource{functionID: fnID, eventID: id,
				props: resolved.(map[string]any), queueRef: src})
		}
	}
	return out, nil
}

func withoutKey(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// refTarget names the resource a !Ref or !GetAtt points at ("" when v is neither).
func refTarget(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if s, ok := m["Ref"].(string); ok {
		return s
	}
	if l, ok := m["Fn::GetAtt"].([]any); ok && len(l) == 2 {
		s, _ := l[0].(string)
		return s
	}
	return ""
}

func resourceType(resources map[string]any, id string) (string, bool) {
	res, ok := resources[id].(map[string]any)
	if !ok {
		return "", false
	}
	typ, _ := res["Type"].(string)
	return typ, true
}

func (r *resolver) mapping(s mappingSource) (*Mapping, error) {
	queueID := refTarget(s.queueRef)
	if typ, _ := resourceType(r.t.section("Resources"), queueID); typ != "AWS::SQS::Queue" {
		return nil, fmt.Errorf("%s/%s: the queue is not an AWS::SQS::Queue of this template", s.functionID, s.eventID)
	}
	m := &Mapping{
		FunctionID: s.functionID,
		QueueID:    queueID,
		EventID:    s.eventID,
		Enabled:    true,
		BatchSize:  defaultBatchSize,
	}
	var err error
	p := s.props
	if v, ok := p["Enabled"]; ok {
		if m.Enabled, err = toBool(v); err != nil {
			return nil, fmt.Errorf("property Enabled: %w", err)
		}
	}
	if v, ok := p["BatchSize"]; ok {
		if m.BatchSize, err = toInt(v); err != nil {
			return nil, fmt.Errorf("property BatchSize: %w", err)
		}
	}
	if v, ok := p["MaximumBatchingWindowInSeconds"]; ok {
		if m.MaximumBatchingWindow, err = toSeconds(v); err != nil {
			return nil, fmt.Errorf("property MaximumBatchingWindowInSeconds: %w", err)
		}
	}
	if list, ok := p["FunctionResponseTypes"].([]any); ok {
		for _, e := range list {
			m.FunctionResponseTypes = append(m.FunctionResponseTypes, scalarString(e))
		}
	}
	if sc, ok := p["ScalingConfig"].(map[string]any); ok {
		if v, ok := sc["MaximumConcurrency"]; ok {
			if m.MaximumConcurrency, err = toInt(v); err != nil {
				return nil, fmt.Errorf("property ScalingConfig.MaximumConcurrency: %w", err)
			}
		}
	}
	if m.Function, err = r.functionSpec(s.functionID); err != nil {
		return nil, err
	}
	if m.Queue, err = r.queueSpec(queueID, true); err != nil {
		return nil, err
	}
	m.Unresolved = m.Function.unresolved
	return m, nil
}

func (r *resolver) functionSpec(id string) (FunctionSpec, error) {
	typ, p, err := r.resource(id)
	if err != nil {
		return FunctionSpec{}, err
	}
	if typ != "AWS::Serverless::Function" && typ != "AWS::Lambda::Function" {
		return FunctionSpec{}, fmt.Errorf("%s is a %s, not a function", id, typ)
	}
	f := FunctionSpec{Timeout: defaultFunctionTimeout, MemorySize: defaultMemorySize, Env: map[string]string{}}
	f.Runtime = scalarString(p["Runtime"])
	f.Handler = scalarString(p["Handler"])
	if s, ok := p["CodeUri"].(string); ok {
		f.CodeURI = s
	}
	if list, ok := p["Architectures"].([]any); ok {
		for _, a := range list {
			f.Architectures = append(f.Architectures, scalarString(a))
		}
	}
	if v, ok := p["Timeout"]; ok {
		if f.Timeout, err = toSeconds(v); err != nil {
			return f, fmt.Errorf("%s Timeout: %w", id, err)
		}
	}
	if v, ok := p["MemorySize"]; ok {
		if f.MemorySize, err = toInt(v); err != nil {
			return f, fmt.Errorf("%s MemorySize: %w", id, err)
		}
	}
	// Resolve the environment on its own, so that Unresolved lists only what the function would see.
	raw, _ := r.rawProps(id)
	clear(r.unresolved)
	if rawEnv, ok := raw["Environment"]; ok {
		resolved, err := r.resolveValue(rawEnv)
		if err != nil {
			return f, fmt.Errorf("%s Environment: %w", id, err)
		}
		env, _ := resolved.(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		for k, v := range vars {
			f.Env[k] = scalarString(v)
		}
	}
	for k := range r.unresolved {
		f.unresolved = append(f.unresolved, k)
	}
	sort.Strings(f.unresolved)
	if lc, ok := p["LoggingConfig"].(map[string]any); ok {
		f.LogFormat = scalarString(lc["LogFormat"])
	}
	return f, nil
}

func (r *resolver) queueSpec(id string, followRedrive bool) (QueueSpec, error) {
	_, p, err := r.resource(id)
	if err != nil {
		return QueueSpec{}, err
	}
	q := QueueSpec{VisibilityTimeout: defaultVisibilityTimeout, MessageRetention: defaultMessageRetention}
	for key, dst := range map[string]*time.Duration{
		"VisibilityTimeout":             &q.VisibilityTimeout,
		"DelaySeconds":                  &q.Delay,
		"MessageRetentionPeriod":        &q.MessageRetention,
		"ReceiveMessageWaitTimeSeconds": &q.ReceiveWait,
	} {
		if v, ok := p[key]; ok {
			if *dst, err = toSeconds(v); err != nil {
				return q, fmt.Errorf("%s %s: %w", id, key, err)
			}
		}
	}
	if v, ok := p["FifoQueue"]; ok {
		if q.FIFO, err = toBool(v); err != nil {
			return q, fmt.Errorf("%s FifoQueue: %w", id, err)
		}
	}
	if !followRedrive {
		return q, nil
	}
	rp, ok := p["RedrivePolicy"].(map[string]any)
	if !ok {
		return q, nil
	}
	// The raw (unresolved) policy names the DLQ's logical ID; the resolved one has its count.
	res, _ := r.t.section("Resources")[id].(map[string]any)
	rawProps, _ := res["Properties"].(map[string]any)
	rawRP, _ := rawProps["RedrivePolicy"].(map[string]any)
	dlqID := refTarget(rawRP["deadLetterTargetArn"])
	if dlqID == "" {
		return q, fmt.Errorf("%s RedrivePolicy: deadLetterTargetArn does not refer to a queue of this template", id)
	}
	count, err := toInt(rp["maxReceiveCount"])
	if err != nil {
		return q, fmt.Errorf("%s RedrivePolicy maxReceiveCount: %w", id, err)
	}
	dlq, err := r.queueSpec(dlqID, false)
	if err != nil {
		return q, err
	}
	q.Redrive = &RedrivePolicy{DeadLetterID: dlqID, MaxReceiveCount: count, DeadLetter: dlq}
	return q, nil
}

func toInt(v any) (int, error) {
	s := scalarString(v)
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return n, nil
}

func toSeconds(v any) (time.Duration, error) {
	n, err := toInt(v)
	if err != nil {
		return 0, err
	}
	return time.Duration(n) * time.Second, nil
}

func toBool(v any) (bool, error) {
	s := scalarString(v)
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not a boolean", s)
	}
	return b, nil
}
