package lambdaemu

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Template is a parsed CloudFormation or SAM template. Short-form intrinsic tags (!Ref, !GetAtt, !Sub,
// ...) are turned into their long form ({"Ref": ...}, {"Fn::GetAtt": [...]}) while parsing.
type Template struct {
	root map[string]any
}

// ReadTemplate parses the template at path.
func ReadTemplate(path string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTemplate(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseTemplate parses a template in YAML (or JSON, which is YAML).
func ParseTemplate(data []byte) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("parse template: empty document")
	}
	v, err := fromNode(doc.Content[0])
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("parse template: the document is not a mapping")
	}
	if _, ok := root["Resources"].(map[string]any); !ok {
		return nil, errors.New("parse template: no Resources")
	}
	return &Template{root: root}, nil
}

// fromNode converts a YAML node into plain Go values: map[string]any, []any, string, int64, float64,
// bool and nil. Local tags become CloudFormation intrinsic functions in long form.
func fromNode(n *yaml.Node) (any, error) {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return fromNode(n.Content[0])
	case yaml.AliasNode:
		return fromNode(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.ShortTag() == "!!merge" { // YAML merge key: <<: *anchor
				merged, err := fromNode(val)
				if err != nil {
					return nil, err
				}
				for _, src := range mergeSources(merged) {
					for mk, mv := range src {
						if _, exists := m[mk]; !exists {
							m[mk] = mv
						}
					}
				}
				continue
			}
			cv, err := fromNode(val)
			if err != nil {
				return nil, err
			}
			m[k.Value] = cv
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			cv, err := fromNode(c)
			if err != nil {
				return nil, err
			}
			s = append(s, cv)
		}
		v = s
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool", "!!null":
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
		default:
			v = n.Value
		}
	default:
		return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
	}
	tag := n.Tag
	if !strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "!!") {
		return v, nil
	}
	return intrinsicFromTag(tag[1:], v, n.Line)
}

func mergeSources(v any) []map[string]any {
	switch t := v.(type) {
	case map[string]any:
		return []map[string]any{t}
	case []any:
		var out []map[string]any
		for _, e := range t {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

func intrinsicFromTag(name string, v any, line int) (any, error) {
	switch name {
	case "Ref":
		return map[string]any{"Ref": v}, nil
	case "Condition":
		return map[string]any{"Condition": v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			res, attr, found := strings.Cut(s, ".")
			if !found {
				return nil, fmt.Errorf("line %d: !GetAtt %q is not Resource.Attribute", line, s)
			}
			return map[string]any{"Fn::GetAtt": []any{res, attr}}, nil
		}
		return map[string]any{"Fn::GetAtt": v}, nil
	default:
		return map[string]any{"Fn::" + name: v}, nil
	}
}

// ResolveOptions supplies what a template cannot know about itself when it is resolved offline.
type ResolveOptions struct {
	// Parameters overrides parameter defaults, like `sam deploy --parameter-overrides`. Values are
	// checked against the parameter's AllowedValues, MinValue, MaxValue and AllowedPattern.
	Parameters map[string]string
	// Resources gives the value of !Ref for a resource by logical ID (a table name, a queue URL, a
	// bucket name). A resource without one resolves to its logical ID and is listed in Unresolved.
	Resources map[string]string
	// Attributes gives the value of !GetAtt by "LogicalID.Attribute" (e.g. "WorkQueue.Arn"). A missing
	// one resolves to "LogicalID.Attribute" and is listed in Unresolved.
	Attributes map[string]string
	// Pseudo parameters. Defaults: us-east-1, 000000000000, skein.
	Region    string
	AccountID string
	StackName string
}

func (o *ResolveOptions) withDefaults() ResolveOptions {
	out := ResolveOptions{}
	if o != nil {
		out = *o
	}
	if out.Region == "" {
		out.Region = "us-east-1"
	}
	if out.AccountID == "" {
		out.AccountID = "000000000000"
	}
	if out.StackName == "" {
		out.StackName = "skein"
	}
	return out
}

// noValue is what AWS::NoValue resolves to; containers drop it.
type noValue struct{}

func isNoValue(v any) bool {
	_, ok := v.(noValue)
	return ok
}

type resolver struct {
	t          *Template
	opts       ResolveOptions
	params     map[string]any // resolved parameter values: string, or []any for list types
	conditions map[string]bool
	unresolved map[string]bool
}

func (t *Template) section(name string) map[string]any {
	m, _ := t.root[name].(map[string]any)
	return m
}

func (t *Template) newResolver(o *ResolveOptions) (*resolver, error) {
	r := &resolver{t: t, opts: o.withDefaults(), params: map[string]any{}, unresolved: map[string]bool{}}
	params := t.section("Parameters")
	for name := range r.opts.Parameters {
		if _, ok := params[name]; !ok {
			return nil, fmt.Errorf("parameter override %s: no such parameter", name)
		}
	}
	for name, raw := range params {
		p, _ := raw.(map[string]any)
		val, overridden := r.opts.Parameters[name]
		if !overridden {
			def, ok := p["Default"]
			if !ok {
				return nil, fmt.Errorf("parameter %s has no Default and no override", name)
			}
			val = scalarString(def)
		}
		if err := checkParameter(name, p, val); err != nil {
			return nil, err
		}
		typ, _ := p["Type"].(string)
		if strings.HasPrefix(typ, "List<") || typ == "CommaDelimitedList" {
			var list []any
			for _, e := range strings.Split(val, ",") {
				list = append(list, strings.TrimSpace(e))
			}
			r.params[name] = list
		} else {
			r.params[name] = val
		}
	}
	r.conditions = map[string]bool{}
	conds := t.section("Conditions")
	names := make([]string, 0, len(conds))
	for name := range conds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := r.condition(name, map[string]bool{}); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func checkParameter(name string, p map[string]any, val string) error {
	if allowed, ok := p["AllowedValues"].([]any); ok {
		found := false
		for _, a := range allowed {
			if scalarString(a) == val {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("parameter %s: %q is not one of the AllowedValues", name, val)
		}
	}
	typ, _ := p["Type"].(string)
	if typ == "Number" {
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return fmt.Errorf("parameter %s: %q is not a number", name, val)
		}
		if mv, ok := p["MinValue"]; ok {
			if m, err := strconv.ParseFloat(scalarString(mv), 64); err == nil && f < m {
				return fmt.Errorf("parameter %s: %s is below MinValue %s", name, val, scalarString(mv))
			}
		}
		if mv, ok := p["MaxValue"]; ok {
			if m, err := strconv.ParseFloat(scalarString(mv), 64); err == nil && f > m {
				return fmt.Errorf("parameter %s: %s is above MaxValue %s", name, val, scalarString(mv))
			}
		}
	}
	if pat, ok := p["AllowedPattern"].(string); ok {
		re, err := regexp.Compile("^(?:" + pat + ")$")
		if err != nil {
			return fmt.Errorf("parameter %s: AllowedPattern: %w", name, err)
		}
		if !re.MatchString(val) {
			return fmt.Errorf("parameter %s: %q does not match AllowedPattern %s", name, val, pat)
		}
	}
	return nil
}

// scalarString renders a YAML scalar the way CloudFormation sees it.
func scalarString(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case int:
		return strconv.Itoa(t)
	case int64:
		return strconv.FormatInt(t, 10)
	case uint64:
		return strconv.FormatUint(t, 10)
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1e15 {
			return strconv.FormatInt(int64(t), 10)
		}
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	}
	return fmt.Sprint(v)
}

func (r *resolver) condition(name string, visiting map[string]bool) (bool, error) {
	if v, ok := r.conditions[name]; ok {
		return v, nil
	}
	if visiting[name] {
		return false, fmt.Errorf("condition %s refers to itself", name)
	}
	def, ok := r.t.section("Conditions")[name]
	if !ok {
		return false, fmt.Errorf("no condition %s", name)
	}
	visiting[name] = true
	v, err := r.evalCondition(def, visiting)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	r.conditions[name] = v
	return v, nil
}

func (r *resolver) evalCondition(def any, visiting map[string]bool) (bool, error) {
	m, ok := def.(map[string]any)
	if !ok || len(m) != 1 {
		return false, fmt.Errorf("not a condition function: %v", def)
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Condition":
			name, _ := arg.(string)
			return r.condition(name, visiting)
		case "Fn::Equals":
			if len(args) != 2 {
				return false, errors.New("Fn::Equals takes two arguments")
			}
			a, err := r.resolveValue(args[0])
			if err != nil {
				return false, err
			}
			b, err := r.resolveValue(args[1])
			if err != nil {
				return false, err
			}
			return scalarString(a) == scalarString(b), nil
		case "Fn::Not":
			if len(args) != 1 {
				return false, errors.New("Fn::Not takes one argument")
			}
			v, err := r.evalCondition(args[0], visiting)
			return !v, err
		case "Fn::And", "Fn::Or":
			and := fn == "Fn::And"
			for _, a := range args {
				v, err := r.evalCondition(a, visiting)
				if err != nil {
					return false, err
				}
				if and && !v {
					return false, nil
				}
				if !and && v {
					return true, nil
				}
			}
			return and, nil
		}
		return false, fmt.Errorf("unsupported condition function %s", fn)
	}
	return false, nil
}

// resolveValue resolves every intrinsic function in v.
func (r *resolver) resolveValue(v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 1 {
			for k, arg := range t {
				if k == "Ref" || strings.HasPrefix(k, "Fn::") {
					return r.intrinsic(k, arg)
				}
			}
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			rv, err := r.resolveValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if isNoValue(rv) {
				continue
			}
			out[k] = rv
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			rv, err := r.resolveValue(e)
			if err != nil {
				return nil, err
			}
			if isNoValue(rv) {
				continue
			}
			out = append(out, rv)
		}
		return out, nil
	}
	return v, nil
}

func (r *resolver) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		name, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("!Ref: %v is not a name", arg)
		}
		return r.ref(name)
	case "Fn::GetAtt":
		args, err := r.resolveArgs(fn, arg, 2)
		if err != nil {
			return nil, err
		}
		key := scalarString(args[0]) + "." + scalarString(args[1])
		if v, ok := r.opts.Attributes[key]; ok {
			return v, nil
		}
		if _, ok := r.t.section("Resources")[scalarString(args[0])]; !ok {
			return nil, fmt.Errorf("Fn::GetAtt %s: no such resource", key)
		}
		r.unresolved[key] = true
		return key, nil
	case "Fn::Sub":
		return r.sub(arg)
	case "Fn::FindInMap":
		args, err := r.resolveArgs(fn, arg, 3)
		if err != nil {
			return nil, err
		}
		m, ok := r.t.section("Mappings")[scalarString(args[0])].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("Fn::FindInMap: no mapping %s", scalarString(args[0]))
		}
		top, ok := m[scalarString(args[1])].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("Fn::FindInMap: mapping %s has no key %s", scalarString(args[0]), scalarString(args[1]))
		}
		v, ok := top[scalarString(args[2])]
		if !ok {
			return nil, fmt.Errorf("Fn::FindInMap: mapping %s.%s has no key %s", scalarString(args[0]),
				scalarString(args[1]), scalarString(args[2]))
		}
		return r.resolveValue(v)
	case "Fn::Join":
		args, err := r.resolveArgs(fn, arg, 2)
		if err != nil {
			return nil, err
		}
		list, ok := args[1].([]any)
		if !ok {
			return nil, errors.New("Fn::Join: the second argument is not a list")
		}
		parts := make([]string, len(list))
		for i, e := range list {
			parts[i] = scalarString(e)
		}
		return strings.Join(parts, scalarString(args[0])), nil
	case "Fn::Select":
		args, err := r.resolveArgs(fn, arg, 2)
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(scalarString(args[0]))
		list, ok := args[1].([]any)
		if err != nil || !ok || i < 0 || i >= len(list) {
			return nil, fmt.Errorf("Fn::Select: bad index %v", args[0])
		}
		return list[i], nil
	case "Fn::Split":
		args, err := r.resolveArgs(fn, arg, 2)
		if err != nil {
			return nil, err
		}
		var out []any
		for _, s := range strings.Split(scalarString(args[1]), scalarString(args[0])) {
			out = append(out, s)
		}
		return out, nil
	case "Fn::If":
		list, ok := arg.([]any)
		if !ok || len(list) != 3 {
			return nil, errors.New("Fn::If takes three arguments")
		}
		cond, err := r.condition(scalarString(list[0]), map[string]bool{})
		if err != nil {
			return nil, err
		}
		if cond {
			return r.resolveValue(list[1])
		}
		return r.resolveValue(list[2])
	}
	return nil, fmt.Errorf("unsupported intrinsic function %s", fn)
}

func (r *resolver) resolveArgs(fn string, arg any, n int) ([]any, error) {
	list, ok := arg.([]any)
	if !ok || len(list) != n {
		return nil, fmt.Errorf("%s takes %d arguments", fn, n)
	}
	out := make([]any, n)
	for i, a := range list {
		v, err := r.resolveValue(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn, err)
		}
		out[i] = v
	}
	return out, nil
}

func (r *resolver) ref(name string) (any, error) {
	switch name {
	case "AWS::Region":
		return r.opts.Region, nil
	case "AWS::AccountId":
		return r.opts.AccountID, nil
	case "AWS::StackName":
		return r.opts.StackName, nil
	case "AWS::StackId":
		return fmt.Sprintf("arn:aws:cloudformation:%s:%s:stack/%s/00000000-0000-0000-0000-000000000000",
			r.opts.Region, r.opts.AccountID, r.opts.StackName), nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::NoValue":
		return noValue{}, nil
	}
	if v, ok := r.params[name]; ok {
		return v, nil
	}
	if v, ok := r.opts.Resources[name]; ok {
		return v, nil
	}
	if _, ok := r.t.section("Resources")[name]; ok {
		r.unresolved[name] = true
		return name, nil
	}
	return nil, fmt.Errorf("!Ref %s: no such parameter or resource", name)
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

func (r *resolver) sub(arg any) (any, error) {
	var format string
	vars := map[string]any{}
	switch t := arg.(type) {
	case string:
		format = t
	case []any:
		if len(t) != 2 {
			return nil, errors.New("Fn::Sub takes a string or [string, variables]")
		}
		format, _ = t[0].(string)
		m, _ := t[1].(map[string]any)
		for k, v := range m {
			rv, err := r.resolveValue(v)
			if err != nil {
				return nil, fmt.Errorf("Fn::Sub %s: %w", k, err)
			}
			vars[k] = rv
		}
	default:
		return nil, errors.New("Fn::Sub takes a string or [string, variables]")
	}
	var firstErr error
	out := subVar.ReplaceAllStringFunc(format, func(m string) string {
		name := m[2 : len(m)-1]
		if strings.HasPrefix(name, "!") { // ${!Literal} stays as ${Literal}
			return "${" + name[1:] + "}"
		}
		if v, ok := vars[name]; ok {
			return scalarString(v)
		}
		var v any
		var err error
		if res, attr, found := strings.Cut(name, "."); found && !strings.HasPrefix(name, "AWS::") {
			v, err = r.intrinsic("Fn::GetAtt", []any{res, attr})
		} else {
			v, err = r.ref(name)
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return m
		}
		return scalarString(v)
	})
	if firstErr != nil {
		return nil, fmt.Errorf("Fn::Sub: %w", firstErr)
	}
	return out, nil
}

// Parameter reads a parameter's effective value (its default, or an override in opts).
func (t *Template) Parameter(name string, opts *ResolveOptions) (string, error) {
	r, err := t.newResolver(opts)
	if err != nil {
		return "", err
	}
	v, ok := r.params[name]
	if !ok {
		return "", fmt.Errorf("no parameter %s", name)
	}
	return scalarString(v), nil
}

// AllowedValues lists a parameter's AllowedValues (nil when it has none).
func (t *Template) AllowedValues(name string) []string {
	p, _ := t.section("Parameters")[name].(map[string]any)
	list, _ := p["AllowedValues"].([]any)
	var out []string
	for _, v := range list {
		out = append(out, scalarString(v))
	}
	return out
}

// Resource resolves one resource's properties (with Globals merged for SAM functions). It returns the
// resource type and the resolved properties.
func (t *Template) Resource(logicalID string, opts *ResolveOptions) (string, map[string]any, error) {
	r, err := t.newResolver(opts)
	if err != nil {
		return "", nil, err
	}
	typ, props, err := r.resource(logicalID)
	return typ, props, err
}

// rawProps returns a resource's properties, unresolved, with SAM Globals merged into functions.
func (r *resolver) rawProps(logicalID string) (map[string]any, string) {
	res, ok := r.t.section("Resources")[logicalID].(map[string]any)
	if !ok {
		return nil, ""
	}
	typ, _ := res["Type"].(string)
	props, _ := res["Properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	if typ == "AWS::Serverless::Function" {
		props = mergeGlobals(r.t.globals("Function"), props)
	}
	return props, typ
}

func (r *resolver) resource(logicalID string) (string, map[string]any, error) {
	props, typ := r.rawProps(logicalID)
	if props == nil {
		return "", nil, fmt.Errorf("no resource %s", logicalID)
	}
	resolved, err := r.resolveValue(props)
	if err != nil {
		return "", nil, fmt.Errorf("resource %s: %w", logicalID, err)
	}
	return typ, resolved.(map[string]any), nil
}

func (t *Template) globals(kind string) map[string]any {
	g, _ := t.section("Globals")[kind].(map[string]any)
	return g
}

// mergeGlobals applies SAM's Globals rules: a property on the resource wins, maps (Environment
// Variables, Tags) are merged key by key, lists are concatenated.
func mergeGlobals(global, local map[string]any) map[string]any {
	if len(global) == 0 {
		return local
	}
	out := make(map[string]any, len(global)+len(local))
	for k, v := range global {
		out[k] = v
	}
	for k, v := range local {
		gv, ok := out[k]
		if !ok {
			out[k] = v
			continue
		}
		gm, gok := gv.(map[string]any)
		lm, lok := v.(map[string]any)
		gl, glok := gv.([]any)
		ll, llok := v.([]any)
		switch {
		case gok && lok && !isIntrinsic(gm) && !isIntrinsic(lm):
			out[k] = mergeGlobals(gm, lm)
		case glok && llok:
			out[k] = append(append([]any{}, gl...), ll...)
		default:
			out[k] = v
		}
	}
	return out
}

func isIntrinsic(m map[string]any) bool {
	if len(m) != 1 {
		return false
	}
	for k := range m {
		return k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::")
	}
	return false
}

// parameterDefinition returns a parameter's Type and its definition.
func (t *Template) parameterDefinition(name string) (string, map[string]any, error) {
	p, ok := t.section("Parameters")[name].(map[string]any)
	if !ok {
		return "", nil, fmt.Errorf("no parameter %s", name)
	}
	typ, _ := p["Type"].(string)
	return typ, p, nil
}

// Condition evaluates one of the template's Conditions with opts (parameter overrides).
func (t *Template) Condition(name string, opts *ResolveOptions) (bool, error) {
	r, err := t.newResolver(opts)
	if err != nil {
		return false, err
	}
	return r.condition(name, map[string]bool{})
}

// ResourceCondition returns the Condition a resource is created under ("" for none).
func (t *Template) ResourceCondition(logicalID string) string {
	res, _ := t.section("Resources")[logicalID].(map[string]any)
	c, _ := res["Condition"].(string)
	return c
}
