package schedule

import "time"

// searchYears bounds the search for a cron expression's next firing: every
// valid expression fires within it (29 February on a given weekday: 28
// years at most, but the day-of-month and day-of-week fields combine with
// "or", so such an expression fires every week).
const searchYears = 9

// Next returns the expression's first firing time strictly after after.
//
// A fixed rate fires at the multiples of its interval since the Unix epoch
// (00:00:00 UTC, 1 January 1970), so every process computes the same times
// however late it starts: "@every 5m" fires at :00, :05, :10 and so on.
//
// A cron expression fires at the wall-clock times it names in its
// Location. On a daylight-saving change, a wall-clock time that does not
// exist that day (the hour skipped in spring) does not fire that day, and
// a wall-clock time that occurs twice (the hour repeated in autumn) fires
// once, at its first occurrence. Next returns the zero time for an
// expression that never fires again (an AWS cron expression whose years
// have all passed).
func (e *Expr) Next(after time.Time) time.Time {
	if e.every > 0 {
		secs := int64(e.every / time.Second)
		u := after.Unix()
		k := u / secs
		if u%secs != 0 && u < 0 {
			k-- // floor
		}
		return time.Unix((k+1)*secs, 0).In(e.loc)
	}
	w := after.In(e.loc)
	// c walks civil (wall-clock) minutes, held in a UTC time for the
	// calendar arithmetic.
	c := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute()+1, 0, 0, time.UTC)
	end := c.AddDate(searchYears, 0, 0)
	for c.Before(end) {
		switch {
		case !e.yearAllowed(c.Year()):
			y := e.nextYear(c.Year())
			if y == 0 {
				return time.Time{}
			}
			c = time.Date(y, time.January, 1, 0, 0, 0, 0, time.UTC)
			end = c.AddDate(searchYears, 0, 0)
			continue
		case e.month&(1<<int(c.Month())) == 0:
			c = time.Date(c.Year(), c.Month()+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		case !e.dayMatches(c):
			c = time.Date(c.Year(), c.Month(), c.Day()+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		for h := c.Hour(); h < 24; h++ {
			if e.hour&(1<<h) == 0 {
				continue
			}
			m0 := 0
			if h == c.Hour() {
				m0 = c.Minute()
			}
			for m := m0; m < 60; m++ {
				if e.minute&(1<<m) == 0 {
					continue
				}
				civil := time.Date(c.Year(), c.Month(), c.Day(), h, m, 0, 0, time.UTC)
				if t, ok := e.resolve(civil, after); ok {
					return t
				}
			}
		}
		c = time.Date(c.Year(), c.Month(), c.Day()+1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// dayMatches applies the day fields to the civil day of c: when both are
// restricted a day matching either fires (as cron has it), otherwise the
// restricted one decides.
func (e *Expr) dayMatches(c time.Time) bool {
	dom := e.dom&(1<<c.Day()) != 0
	dow := e.dow&(1<<int(c.Weekday())) != 0
	switch {
	case e.domStar && e.dowStar:
		return true
	case e.domStar:
		return dow
	case e.dowStar:
		return dom
	}
	return dom || dow
}

// resolve returns the earliest instant after after whose wall-clock time in
// the expression's Location is civil, if any: none in a daylight-saving
// gap; the first of two in a repeated hour.
func (e *Expr) resolve(civil, after time.Time) (time.Time, bool) {
	var best time.Time
	for _, probe := range []time.Duration{-24 * time.Hour, 24 * time.Hour} {
		_, off := civil.Add(probe).In(e.loc).Zone()
		t := time.Unix(civil.Unix()-int64(off), 0).In(e.loc)
		if !sameWall(t, civil) || !t.After(after) {
			continue
		}
		if best.IsZero() || t.Before(best) {
			best = t
		}
	}
	return best, !best.IsZero()
}

func sameWall(t, civil time.Time) bool {
	y, mo, d := t.Date()
	cy, cmo, cd := civil.Date()
	return y == cy && mo == cmo && d == cd && t.Hour() == civil.Hour() && t.Minute() == civil.Minute()
}
