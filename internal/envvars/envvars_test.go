package envvars

import (
	"reflect"
	"testing"
)

// TestReadEachOnce checks that Read asks for every variable once, and puts
// each value in a field of its own.
func TestReadEachOnce(t *testing.T) {
	asked := map[string]int{}
	v := Read(func(name string) string {
		asked[name]++
		return " " + name + "\t"
	})
	for name, n := range asked {
		if n != 1 {
			t.Errorf("Read asked for %s %d times, want once", name, n)
		}
	}
	seen := map[string]string{}
	var walk func(prefix string, rv reflect.Value)
	walk = func(prefix string, rv reflect.Value) {
		for i := 0; i < rv.NumField(); i++ {
			f, name := rv.Field(i), prefix+rv.Type().Field(i).Name
			if f.Kind() == reflect.Struct {
				walk(name+".", f)
				continue
			}
			s := f.String()
			if asked[s] != 1 {
				t.Errorf("Vars.%s = %q: not a variable's trimmed value", name, s)
			}
			if other, dup := seen[s]; dup {
				t.Errorf("Vars.%s and Vars.%s both hold %s", other, name, s)
			}
			seen[s] = name
		}
	}
	walk("", reflect.ValueOf(v))
	if len(seen) != len(asked) {
		t.Errorf("Vars has %d fields, Read asked for %d variables", len(seen), len(asked))
	}
	if v.Table != Table || v.OTel.TracesEndpoint != "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" || v.FunctionName != FunctionName {
		t.Errorf("Read = %+v", v)
	}
}

func TestEndpoints(t *testing.T) {
	for _, c := range []struct {
		env      map[string]string
		emulator bool
		dynamo   string
		s3       string
	}{
		{nil, false, "", ""},
		{map[string]string{EndpointURL: "http://all"}, true, "http://all", "http://all"},
		{map[string]string{EndpointDynamoDB: "http://ddb"}, true, "http://ddb", ""},
		{map[string]string{EndpointS3: "http://s3", EndpointURL: "http://all"}, true, "http://all", "http://s3"},
		{map[string]string{EndpointSQS: "http://sqs"}, false, "", ""},
	} {
		v := Read(func(k string) string { return c.env[k] })
		if got := v.EmulatorEndpoint(); got != c.emulator {
			t.Errorf("%v: EmulatorEndpoint = %v, want %v", c.env, got, c.emulator)
		}
		if got := v.ServiceEndpoint("DYNAMODB"); got != c.dynamo {
			t.Errorf("%v: ServiceEndpoint(DYNAMODB) = %q, want %q", c.env, got, c.dynamo)
		}
		if got := v.ServiceEndpoint("S3"); got != c.s3 {
			t.Errorf("%v: ServiceEndpoint(S3) = %q, want %q", c.env, got, c.s3)
		}
	}
}
