package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AWS cron expressions, as EventBridge Scheduler writes them:
//
//	cron(minute hour day-of-month month day-of-week year)
//
// They differ from the five-field form in three ways: the sixth field is
// the year (1970-2199, "*" for every year); day-of-week counts from 1 for
// Sunday to 7 for Saturday (or SUN-SAT); and one of the two day fields must
// be "?" while the other restricts, since the two are not combined. AWS's
// L, W and # (last day, nearest weekday, n-th weekday) are not supported
// and are refused with a *ParseError, so an expression that parses here
// fires at the same times as on AWS.

const (
	minYear = 1970
	maxYear = 2199
)

// fAWSDow is AWS's day-of-week field: 1 (Sunday) to 7 (Saturday).
var fAWSDow = field{name: "day-of-week", min: 1, max: 7, names: weekdays}

// yearSet holds the years an AWS cron expression allows.
type yearSet [(maxYear - minYear + 64) / 64]uint64

func (y *yearSet) add(year int) { y[(year-minYear)/64] |= 1 << ((year - minYear) % 64) }
func (y *yearSet) has(year int) bool {
	return year >= minYear && year <= maxYear && y[(year-minYear)/64]&(1<<((year-minYear)%64)) != 0
}
func (e *Expr) yearAllowed(year int) bool { return e.years == nil || e.years.has(year) }

// nextYear returns the first year after year that the expression allows,
// or 0 when none does.
func (e *Expr) nextYear(year int) int {
	for y := max(year+1, minYear); y <= maxYear; y++ {
		if e.yearAllowed(y) {
			return y
		}
	}
	return 0
}

func parseAWSCron(expr, inner string, loc *time.Location) (*Expr, error) {
	inner, ok := strings.CutSuffix(strings.TrimSpace(inner), ")")
	fs := strings.Fields(inner)
	if !ok || len(fs) != 6 {
		return nil, newParseError(expr, "", fmt.Sprintf("cron(...) wants 6 fields (minute hour day-of-month month day-of-week year), have %d", len(fs)))
	}
	if awsSpecial(fs[2]) || awsSpecial(fs[4]) {
		return nil, newParseError(expr, "", "AWS's L, W and # are not supported: list the days instead")
	}
	domAny, dowAny := fs[2] == "?", fs[4] == "?"
	if domAny == dowAny {
		return nil, newParseError(expr, "", `cron(...) wants "?" in exactly one of day-of-month and day-of-week`)
	}
	e := &Expr{src: expr, loc: loc}
	var err error
	sets := []*uint64{&e.minute, &e.hour, &e.dom, &e.month, &e.dow}
	for i, f := range []field{fMinute, fHour, fDom, fMonth, fAWSDow} {
		if *sets[i], err = f.parse(expr, fs[i]); err != nil {
			return nil, err
		}
	}
	e.dow >>= 1 // AWS's 1-7 (Sunday first) to 0-6
	e.domStar = domAny || fs[2] == "*"
	e.dowStar = dowAny || fs[4] == "*"
	if fs[5] != "*" {
		if e.years, err = parseYears(expr, fs[5]); err != nil {
			return nil, err
		}
	}
	if !e.possible() {
		return nil, newParseError(expr, "day-of-month", "no month has such a day")
	}
	return e, nil
}

// awsSpecial reports whether a day field uses AWS's L (last), W (nearest
// weekday) or # (n-th weekday of the month): "L", "LW", "5L", "15W", "3#2".
func awsSpecial(s string) bool {
	for part := range strings.SplitSeq(s, ",") {
		p := strings.ToUpper(part)
		digits := strings.TrimRight(p, "LW")
		if strings.Contains(p, "#") || p == "L" || p == "LW" ||
			(digits != p && digits != "" && strings.Trim(digits, "0123456789") == "") {
			return true
		}
	}
	return false
}

// parseYears parses the year field: values, ranges and steps as in the
// other fields, from 1970 to 2199.
func parseYears(expr, s string) (*yearSet, error) {
	var ys yearSet
	for part := range strings.SplitSeq(s, ",") {
		rng, stepStr, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepStr)
			if err != nil || n <= 0 {
				return nil, newParseError(expr, "year", fmt.Sprintf("step %q is not a positive number", stepStr))
			}
			step = n
		}
		lo, hi := minYear, maxYear
		if rng != "*" {
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = yearValue(a); err != nil {
				return nil, newParseError(expr, "year", err.Error())
			}
			hi = lo
			switch {
			case isRange:
				if hi, err = yearValue(b); err != nil {
					return nil, newParseError(expr, "year", err.Error())
				}
				if hi < lo {
					return nil, newParseError(expr, "year", fmt.Sprintf("range %s goes backwards", rng))
				}
			case hasStep:
				hi = maxYear
			}
		}
		for y := lo; y <= hi; y += step {
			ys.add(y)
		}
	}
	return &ys, nil
}

func yearValue(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < minYear || v > maxYear {
		return 0, fmt.Errorf("%d is out of range %d-%d", v, minYear, maxYear)
	}
	return v, nil
}
