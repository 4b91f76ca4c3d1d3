package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Expr is a parsed schedule expression: a cron expression, whose firing
// times are wall-clock times in its Location, or a fixed rate.
type Expr struct {
	src string
	loc *time.Location
	// every > 0: a fixed rate, firing at the multiples of every since the
	// Unix epoch; the fields are unused.
	every time.Duration
	// A cron expression: the allowed values of each field as bit sets.
	minute, hour, dom, month, dow uint64
	// domStar, dowStar: the day-of-month or day-of-week field is "*" (or
	// "?"), for the rule on combining the two.
	domStar, dowStar bool
	// years: the years an AWS cron expression allows (bit y-minYear), nil
	// for every year.
	years *yearSet
}

// ParseError reports an expression that does not parse: the expression,
// the field (empty for the expression as a whole) and what is wrong.
type ParseError struct {
	Expr   string
	Field  string
	Reason string
}

// newParseError returns a *ParseError.
func newParseError(expr, field, reason string) *ParseError {
	return &ParseError{Expr: expr, Field: field, Reason: reason}
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("schedule: expression %q: %s", e.Expr, e.Reason)
	}
	return fmt.Sprintf("schedule: expression %q: %s field: %s", e.Expr, e.Field, e.Reason)
}

// String returns the expression as it was given.
func (e *Expr) String() string { return e.src }

// Location returns the time zone of a cron expression's wall-clock times.
func (e *Expr) Location() *time.Location { return e.loc }

// descriptors are the cron shorthands.
var descriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// field describes one cron field.
type field struct {
	name     string
	min, max int
	names    []string // names of the values from min on (months, weekdays)
	// sundayTwice: max is Sunday again (cron's day-of-week 7), which "*"
	// leaves out.
	sundayTwice bool
}

var (
	fMinute = field{name: "minute", min: 0, max: 59}
	fHour   = field{name: "hour", min: 0, max: 23}
	fDom    = field{name: "day-of-month", min: 1, max: 31}
	fMonth  = field{name: "month", min: 1, max: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}}
	// Day of week: 0 and 7 are both Sunday.
	fDow = field{name: "day-of-week", min: 0, max: 7, names: weekdays, sundayTwice: true}
	// weekdays are the day-of-week names from Sunday on.
	weekdays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

// Parse parses a schedule expression; loc is the time zone of a cron
// expression's wall-clock times (nil: UTC). See the package documentation
// for the syntax. An expression that does not parse is a *ParseError.
func Parse(expr string, loc *time.Location) (*Expr, error) {
	if loc == nil {
		loc = time.UTC
	}
	s := strings.TrimSpace(expr)
	if s == "" {
		return nil, newParseError(expr, "", "empty expression")
	}
	if d, ok := strings.CutPrefix(s, "@every"); ok {
		return parseEvery(expr, strings.TrimSpace(d), loc)
	}
	if inner, ok := strings.CutPrefix(s, "rate("); ok {
		return parseRate(expr, inner, loc)
	}
	if inner, ok := strings.CutPrefix(s, "cron("); ok {
		return parseAWSCron(expr, inner, loc)
	}
	if strings.HasPrefix(s, "@") {
		d, ok := descriptors[strings.ToLower(s)]
		if !ok {
			return nil, newParseError(expr, "", "unknown descriptor "+strconv.Quote(s))
		}
		s = d
	}
	fs := strings.Fields(s)
	if len(fs) != 5 {
		return nil, newParseError(expr, "", fmt.Sprintf("want 5 fields (minute hour day-of-month month day-of-week), have %d", len(fs)))
	}
	e := &Expr{src: expr, loc: loc}
	var err error
	sets := []*uint64{&e.minute, &e.hour, &e.dom, &e.month, &e.dow}
	for i, f := range []field{fMinute, fHour, fDom, fMonth, fDow} {
		if *sets[i], err = f.parse(expr, fs[i]); err != nil {
			return nil, err
		}
	}
	if e.dow&(1<<7) != 0 {
		e.dow |= 1 // 7 is Sunday too
	}
	e.domStar = fs[2] == "*" || fs[2] == "?"
	e.dowStar = fs[4] == "*" || fs[4] == "?"
	if !e.possible() {
		return nil, newParseError(expr, "day-of-month", "no month has such a day")
	}
	return e, nil
}

// possible reports whether some month has one of the days of a restricted
// day-of-month field (31 April never comes).
func (e *Expr) possible() bool {
	if e.domStar || !e.dowStar {
		return true
	}
	maxDay := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if e.month&(1<<m) == 0 {
			continue
		}
		for d := 1; d <= maxDay[m]; d++ {
			if e.dom&(1<<d) != 0 {
				return true
			}
		}
	}
	return false
}

func parseEvery(expr, d string, loc *time.Location) (*Expr, error) {
	every, err := time.ParseDuration(d)
	if err != nil {
		return nil, newParseError(expr, "", "@every wants a duration such as 5m or 1h30m: "+strconv.Quote(d))
	}
	return newRate(expr, every, loc)
}

func parseRate(expr, inner string, loc *time.Location) (*Expr, error) {
	inner, ok := strings.CutSuffix(strings.TrimSpace(inner), ")")
	fs := strings.Fields(inner)
	if !ok || len(fs) != 2 {
		return nil, newParseError(expr, "", "rate wants rate(<n> <unit>), e.g. rate(5 minutes)")
	}
	n, err := strconv.Atoi(fs[0])
	if err != nil || n <= 0 {
		return nil, newParseError(expr, "", "rate wants a positive whole number, not "+strconv.Quote(fs[0]))
	}
	units := map[string]time.Duration{
		"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour, "hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	}
	unit, ok := units[fs[1]]
	if !ok {
		return nil, newParseError(expr, "", "rate unit must be minute(s), hour(s) or day(s), not "+strconv.Quote(fs[1]))
	}
	if (n == 1) != !strings.HasSuffix(fs[1], "s") {
		return nil, newParseError(expr, "", fmt.Sprintf("rate: write %d %s", n, plural(fs[1], n)))
	}
	return newRate(expr, time.Duration(n)*unit, loc)
}

func plural(unit string, n int) string {
	unit = strings.TrimSuffix(unit, "s")
	if n == 1 {
		return unit
	}
	return unit + "s"
}

func newRate(expr string, every time.Duration, loc *time.Location) (*Expr, error) {
	switch {
	case every < time.Second:
		return nil, newParseError(expr, "", fmt.Sprintf("the rate must be at least 1s, not %s", every))
	case every%time.Second != 0:
		return nil, newParseError(expr, "", fmt.Sprintf("the rate must be whole seconds, not %s", every))
	}
	return &Expr{src: expr, loc: loc, every: every}, nil
}

// parse returns the values a field allows as a bit set.
func (f field) parse(expr, s string) (uint64, error) {
	var set uint64
	for part := range strings.SplitSeq(s, ",") {
		bits, err := f.parsePart(part)
		if err != nil {
			return 0, newParseError(expr, f.name, err.Error())
		}
		set |= bits
	}
	return set, nil
}

// parsePart parses one element of a list: *, ?, n, a-b, each optionally
// followed by /step.
func (f field) parsePart(s string) (uint64, error) {
	rng, stepStr, hasStep := strings.Cut(s, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepStr)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("step %q is not a positive number", stepStr)
		}
		step = n
	}
	lo, hi := f.min, f.max
	if f.sundayTwice {
		hi = f.max - 1 // * covers Sunday once
	}
	switch {
	case rng == "*" || (rng == "?" && (f.name == fDom.name || f.name == fDow.name)):
	case rng == "":
		return 0, fmt.Errorf("empty value")
	default:
		a, b, isRange := strings.Cut(rng, "-")
		var err error
		if lo, err = f.value(a); err != nil {
			return 0, err
		}
		hi = lo
		switch {
		case isRange:
			if hi, err = f.value(b); err != nil {
				return 0, err
			}
			if hi < lo {
				return 0, fmt.Errorf("range %s goes backwards", rng)
			}
		case hasStep:
			hi = f.max // a/n: from a to the end
		}
	}
	var set uint64
	for v := lo; v <= hi; v += step {
		set |= 1 << v
	}
	return set, nil
}

// value parses one number or name of the field.
func (f field) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < f.min || v > f.max {
		return 0, fmt.Errorf("%d is out of range %d-%d", v, f.min, f.max)
	}
	return v, nil
}
