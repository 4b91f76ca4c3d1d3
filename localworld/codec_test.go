package localworld

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zone tests need zones on any machine

	"github.com/oklog/ulid/v2"
	"github.com/skeinflow/skein/world"
)

// filler makes random values of any of the records' field types, with the
// cases where the binary form and JSON could part: strings JSON escapes or
// replaces, IDs of the World's form and near misses, payloads with spaces
// and escapes, invalid ones, times at their edges and with zone offsets.
type filler struct {
	r     *rand.Rand
	depth *int // pointers followed: recursive types (an error's cause) end
}

func newFiller(r *rand.Rand) filler { return filler{r: r, depth: new(int)} }

func (f filler) pick(n int) int { return f.r.IntN(n) }

func (f filler) id() string {
	prefix := idPrefixes[f.pick(len(idPrefixes))]
	var u ulid.ULID
	for i := range u {
		u[i] = byte(f.r.Uint32())
	}
	s := u.String()
	switch f.pick(6) {
	case 0:
		return prefix + strings.ToLower(s) // not canonical: stored as a string
	case 1:
		return prefix + s[:25] // too short
	case 2:
		return "x" + prefix + s
	}
	return prefix + s
}

func (f filler) str() string {
	switch f.pick(8) {
	case 0:
		return ""
	case 1, 2:
		return f.id()
	case 3:
		return "a<b>&c\u2028\u2029 \"q\" \\ \t é 日本"
	case 4:
		if f.pick(4) == 0 {
			return "bad \xff utf-8"
		}
		return "plain"
	}
	return strings.Repeat("s", f.pick(300))
}

func (f filler) raw() json.RawMessage {
	switch f.pick(9) {
	case 0:
		return nil
	case 1:
		return json.RawMessage{}
	case 2:
		return json.RawMessage(`null`)
	case 3:
		return json.RawMessage(` { "a" : [1, 2.5e3, true, null], "h": "<x>&\u2028" } `)
	case 4:
		if f.pick(6) == 0 {
			return json.RawMessage(`{"unterminated": `)
		}
		return json.RawMessage(`"plain"`)
	case 5:
		return json.RawMessage(`"` + strings.Repeat("p", f.pick(2000)) + `"`)
	}
	return json.RawMessage(`{"n":` + strings.Repeat("1", 1+f.pick(15)) + `}`)
}

func (f filler) time() time.Time {
	switch f.pick(10) {
	case 0:
		return time.Time{}
	case 1:
		return time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)
	case 2:
		return time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	case 3:
		return time.Date(1677, 1, 1, 0, 0, 0, 5, time.UTC)
	case 4:
		return time.Date(2026, 11, 30, 9, 0, 0, 0, time.FixedZone("x", 3600))
	case 5:
		return time.Date(2026, 11, 30, 9, 0, 0, 0, time.FixedZone("UTC0", 0))
	case 6:
		switch f.pick(6) {
		case 0:
			return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		case 1:
			return time.Time{}.In(time.FixedZone("P", 3600)) // the zero instant, elsewhere
		case 2:
			return time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("S", 3601)) // seconds JSON drops
		case 3:
			return time.Date(3000, 1, 2, 3, 4, 5, 6, time.FixedZone("", -(5*3600+1800)))
		case 4:
			return time.Unix(1_700_000_000+int64(f.pick(1e8)), 7).In(time.Local) // a clock's time (TZ)
		}
	}
	return time.Unix(1_700_000_000+int64(f.pick(1e8)), int64(f.pick(1e9))).UTC()
}

// fill sets v (settable) to a random value of its type.
func (f filler) fill(v reflect.Value) {
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(f.time()))
		return
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.Set(reflect.ValueOf(f.raw()))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(f.str())
	case reflect.Bool:
		v.SetBool(f.pick(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt([]int64{0, 1, -1, 300, -70000, 1 << 40, -1 << 62}[f.pick(7)])
	case reflect.Uint, reflect.Uint64, reflect.Uint32, reflect.Uint8:
		v.SetUint(uint64(f.pick(1 << 20)))
	case reflect.Float64:
		v.SetFloat(float64(f.pick(1000)) / 7)
	case reflect.Pointer:
		if *f.depth < 3 && f.pick(3) > 0 {
			*f.depth++
			p := reflect.New(v.Type().Elem())
			f.fill(p.Elem())
			v.Set(p)
			*f.depth--
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	case reflect.Map:
		if n := f.pick(4); n > 0 {
			m := reflect.MakeMap(v.Type())
			for range n {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				f.fill(k)
				f.fill(e)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Slice:
		if n := f.pick(4); n > 0 {
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				f.fill(s.Index(i))
			}
			v.Set(s)
		} else if f.pick(2) == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		}
	}
}

// randomRecord is a random record of kind (0: event, 1: step, 2: run) as
// putEncoded is given it, and a pointer of the type decode fills.
func randomRecord(f filler, kind int) (rec, out any, b bucketID) {
	switch kind {
	case 0:
		var ev world.Event
		f.fill(reflect.ValueOf(&ev).Elem())
		data, _ := world.NewEventData(eventTypes[f.pick(len(eventTypes))])
		f.fill(reflect.ValueOf(data).Elem())
		if f.pick(20) > 0 {
			ev.Data = data
		}
		return storedEventOf(&ev), new(world.Event), bEvents
	case 1:
		st := new(world.Step)
		f.fill(reflect.ValueOf(st).Elem())
		return st, new(world.Step), bSteps
	}
	run := new(world.Run)
	f.fill(reflect.ValueOf(run).Elem())
	return run, new(world.Run), bRuns
}

// TestCodecMatchesJSON: a binary record decodes to exactly what its JSON
// decodes to, every field of every record kind (filled by reflection, so a
// field added to world.Event, world.Step or world.Run and not to the codec
// fails here), and a record JSON refuses to encode is refused by the
// binary form too (then stored as JSON, which reports the error).
func TestCodecMatchesJSON(t *testing.T) {
	t.Parallel()
	f := newFiller(rand.New(rand.NewPCG(22, 3)))
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	var binary, fallback [3]int
	for i := range 6000 {
		kind := i % 3
		rec, viaBin, b := randomRecord(f, kind)
		js, jerr := encode(rec)
		bin, berr := appendBinary(nil, rec, e)
		if berr != nil {
			if !errors.Is(berr, errNotBinary) {
				t.Fatalf("record %d: %v, want errNotBinary", i, berr)
			}
			fallback[kind]++
			continue
		}
		if jerr != nil {
			t.Fatalf("record %d (%T): the binary form holds what JSON refuses (%v)", i, rec, jerr)
		}
		binary[kind]++
		viaJSON := reflect.New(reflect.TypeOf(viaBin).Elem()).Interface()
		jerr, berr = decode(b, nil, js, viaJSON), decode(b, nil, bin, viaBin)
		if (jerr == nil) != (berr == nil) {
			t.Fatalf("record %d: decoded from JSON: %v, from the binary form: %v", i, jerr, berr)
		}
		if jerr != nil {
			continue // both refused (an event without data), as corrupt
		}
		if !reflect.DeepEqual(viaJSON, viaBin) {
			t.Fatalf("record %d decodes differently\nJSON   %+v\nbinary %+v", i, viaJSON, viaBin)
		}
	}
	for kind := range 3 {
		if binary[kind] < 100 || fallback[kind] < 100 {
			t.Errorf("kind %d: %d binary, %d JSON: want both tried", kind, binary[kind], fallback[kind])
		}
	}
}

// TestCodecTablesFixed: the tables a binary record names IDs' prefixes and
// event types by are part of the format: changing an entry's place reads
// records written before as other data.
func TestCodecTablesFixed(t *testing.T) {
	t.Parallel()
	want := "run_created run_started run_completed run_failed run_cancelled run_held step_created step_started " +
		"step_completed step_failed step_retrying hook_created hook_conflict hook_received hook_disposed wait_created " +
		"wait_completed attribute_set comp_started comp_retry_scheduled comp_succeeded comp_failed run_deactivated run_cleaned_up"
	var got []string
	for _, et := range eventTypes {
		got = append(got, string(et))
	}
	if strings.Join(got, " ") != want {
		t.Errorf("event types %v", got)
	}
	if p := strings.Join(idPrefixes[:], " "); p != "wrun_ step_ hook_ wait_ evnt_ msg_" {
		t.Errorf("ID prefixes %q", p)
	}
}

// TestCodecTruncatedIsCorrupt: a binary record cut short or with bytes
// after its end does not decode: ErrCorrupt and world.ErrCorrupt.
func TestCodecTruncatedIsCorrupt(t *testing.T) {
	t.Parallel()
	f := newFiller(rand.New(rand.NewPCG(5, 5)))
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	for i := 0; i < 300; {
		rec, out, b := randomRecord(f, i%3)
		bin, err := appendBinary(nil, rec, e)
		if err != nil {
			continue
		}
		i++
		cut := 1 + f.pick(len(bin)-1)
		if b == bEvents && bin[cut-1] != 0 && json.Valid(bin[cut:]) {
			continue // the data of an event is the rest: a cut there may be a shorter valid payload
		}
		for _, bad := range [][]byte{bin[:cut], append(bin[:len(bin):len(bin)], 0)} {
			if b == bEvents && len(bad) > len(bin) {
				continue // trailing bytes after an event's data are its data
			}
			err := decode(b, []byte("k"), bad, out)
			if !errors.Is(err, ErrCorrupt) || !errors.Is(err, world.ErrCorrupt) {
				t.Fatalf("%T cut at %d of %d: %v, want ErrCorrupt", rec, len(bad), len(bin), err)
			}
		}
	}
}

// FuzzDecodeBinary: no bytes make decode panic, and what does not decode
// is ErrCorrupt.
func FuzzDecodeBinary(f *testing.F) {
	fl := newFiller(rand.New(rand.NewPCG(9, 9)))
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	for i := range 30 {
		rec, _, _ := randomRecord(fl, i%3)
		if bin, err := appendBinary(nil, rec, e); err == nil {
			f.Add(uint8(i%3), bin[1:])
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		v := append([]byte{codecV1}, data...)
		outs := []any{new(world.Event), new(world.Step), new(world.Run)}
		b := []bucketID{bEvents, bSteps, bRuns}[kind%3]
		if err := decode(b, []byte("k"), v, outs[kind%3]); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%v, want ErrCorrupt", err)
		}
	})
}

// TestCodecZoneAsParse: a time with a zone offset reads back as time.Parse
// reads its RFC 3339 text (what JSON did): in the local zone when that has
// the offset at that instant, else in a nameless zone of the offset.
func TestCodecZoneAsParse(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{
		time.Date(2026, 1, 15, 12, 0, 0, 5, berlin),                    // +01:00, Berlin's offset then
		time.Date(2026, 7, 15, 12, 0, 0, 5, berlin),                    // +02:00, its summer offset
		time.Date(2026, 7, 15, 12, 0, 0, 5, time.FixedZone("X", 3600)), // +01:00 in July: not Berlin's
		time.Date(1500, 7, 15, 12, 0, 0, 5, time.FixedZone("", -7200)),
	} {
		_, off := at.Zone()
		want, err := time.ParseInLocation(time.RFC3339Nano, at.Format(time.RFC3339Nano), berlin)
		if err != nil {
			t.Fatal(err)
		}
		if got := inZone(at.UTC(), off, berlin); !reflect.DeepEqual(got, want) {
			t.Errorf("%v: read back as %v (%v), want %v (%v)", at, got, got.Location(), want, want.Location())
		}
	}
}

// TestCodecMatchesJSONInAZone runs TestCodecMatchesJSON again in a process
// whose local zone is not UTC (a clock's times carry its offset).
func TestCodecMatchesJSONInAZone(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCodecMatchesJSON$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "TZ=Europe/Berlin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("in zone Europe/Berlin: %v\n%s", err, out)
	}
}
