package customization

import (
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// The os library of the sandbox: os.time and os.date, which Karmada's sandbox allows, and
// nothing else of os (no clock, getenv, execute, exit, remove, rename, tmpname).
//
//   - os.time() is the current time in seconds since the epoch; os.time(t) the time of the
//     date table t (year, month and day required; hour defaults to 12, min and sec to 0;
//     isdst is ignored), in the controller's local time zone, out-of-range fields
//     normalized (month 13 is January of the next year), as C's mktime does.
//   - os.date([format [, time]]) formats time (default: now) with C's strftime conversions
//     (default format "%c", in the C locale); a format starting with "!" is in UTC, else in
//     the local time zone; "*t" (or "!*t") gives a date table {year, month, day, hour, min,
//     sec, wday, yday, isdst}. An unknown conversion is copied as it is.
//
// The controller's time zone is normally UTC (its image has no other).

// now and location are the clock and the local time zone; tests replace them.
var (
	now      = time.Now
	location = func() *time.Location { return time.Local }
)

// maxDateField bounds each field of a date table, so that the arithmetic cannot overflow.
const maxDateField = 1 << 40

func (v *vm) osTime(L *lua.LState) int {
	if L.GetTop() == 0 || L.Get(1) == lua.LNil {
		L.Push(lua.LNumber(now().Unix()))
		return 1
	}
	t := L.CheckTable(1)
	field := func(name string, def int64) int64 {
		var f float64
		switch x := t.RawGetString(name).(type) {
		case lua.LNumber:
			f = float64(x)
		case lua.LString:
			n, err := strconv.ParseFloat(strings.TrimSpace(string(x)), 64)
			if err != nil {
				return fieldDefault(L, name, def)
			}
			f = n
		default:
			return fieldDefault(L, name, def)
		}
		if f != f || f > maxDateField || f < -maxDateField {
			L.RaiseError("field '%s' is out of range in date table", name)
		}
		return int64(f)
	}
	year, month, day := field("year", -1), field("month", -1), field("day", -1)
	hour, minute, sec := field("hour", 12), field("min", 0), field("sec", 0)
	if year > 1e9 || year < -1e9 {
		L.RaiseError("field 'year' is out of range in date table")
	}
	// time.Date carries fields past the ends of their ranges, as mktime does, and applies
	// the local offset at the result.
	d := time.Date(int(year), time.Month(month), int(day), int(hour), int(minute), int(sec), 0, location())
	L.Push(lua.LNumber(d.Unix()))
	return 1
}

func fieldDefault(L *lua.LState, name string, def int64) int64 {
	if def < 0 {
		L.RaiseError("field '%s' missing in date table", name)
	}
	return def
}

func (v *vm) osDate(L *lua.LState) int {
	format := L.OptString(1, "%c")
	when := now()
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		n := float64(L.CheckNumber(2))
		if n != n || n > 1<<53 || n < -(1<<53) {
			L.ArgError(2, "time out of range")
		}
		when = time.Unix(int64(n), 0)
	}
	if strings.HasPrefix(format, "!") {
		format = format[1:]
		when = when.UTC()
	} else {
		when = when.In(location())
	}
	if strings.HasPrefix(format, "*t") {
		v.b.charge(costTable + 9*costField)
		t := L.CreateTable(0, 9)
		for _, f := range dateTable(when) {
			t.RawSetString(f.name, f.value)
		}
		L.Push(t)
		return 1
	}
	v.b.work(len(format) / 8)
	if int64(len(format))*maxConversion > int64(v.lim.maxString) {
		v.checkString(int64(len(format)) * maxConversion)
	}
	s := strftime(format, when)
	v.b.charge(int64(len(s)) + costString)
	L.Push(lua.LString(s))
	return 1
}

// dateTable is the "*t" table of t.
func dateTable(t time.Time) []entry {
	return []entry{
		{"year", lua.LNumber(t.Year())},
		{"month", lua.LNumber(t.Month())},
		{"day", lua.LNumber(t.Day())},
		{"hour", lua.LNumber(t.Hour())},
		{"min", lua.LNumber(t.Minute())},
		{"sec", lua.LNumber(t.Second())},
		{"wday", lua.LNumber(t.Weekday() + 1)},
		{"yday", lua.LNumber(t.YearDay())},
		{"isdst", lua.LFalse},
	}
}

// maxConversion is the longest output of one conversion of strftime, the zone name's
// bounded too.
const maxConversion = 32

// strftime formats t as C's strftime does in the C locale, for the conversions of C89 and
// a few of C99 and POSIX (%e %D %F %T %R %h %n %t %z %C %g %G %u %V %s). An unknown conversion, and a
// % ending the format, are copied as they are. The output is at most maxConversion bytes
// per byte of format.
func strftime(format string, t time.Time) string {
	var b strings.Builder
	pad := func(n, width int) {
		s := strconv.Itoa(n)
		for i := len(s); i < width; i++ {
			b.WriteByte('0')
		}
		b.WriteString(s)
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'c':
			b.WriteString(strftime("%a %b %e %H:%M:%S %Y", t))
		case 'C':
			pad(t.Year()/100, 2)
		case 'd':
			pad(t.Day(), 2)
		case 'D', 'x':
			b.WriteString(strftime("%m/%d/%y", t))
		case 'e':
			if t.Day() < 10 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Itoa(t.Day()))
		case 'F':
			b.WriteString(strftime("%Y-%m-%d", t))
		case 'g':
			y, _ := t.ISOWeek()
			pad(((y%100)+100)%100, 2)
		case 'G':
			y, _ := t.ISOWeek()
			b.WriteString(strconv.Itoa(y))
		case 'H':
			pad(t.Hour(), 2)
		case 'I':
			pad((t.Hour()+11)%12+1, 2)
		case 'j':
			pad(t.YearDay(), 3)
		case 'm':
			pad(int(t.Month()), 2)
		case 'M':
			pad(t.Minute(), 2)
		case 'n':
			b.WriteByte('\n')
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'R':
			b.WriteString(strftime("%H:%M", t))
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'S':
			pad(t.Second(), 2)
		case 't':
			b.WriteByte('\t')
		case 'T', 'X':
			b.WriteString(strftime("%H:%M:%S", t))
		case 'u':
			b.WriteString(strconv.Itoa((int(t.Weekday())+6)%7 + 1))
		case 'U':
			pad((t.YearDay()+6-int(t.Weekday()))/7, 2)
		case 'V':
			_, w := t.ISOWeek()
			pad(w, 2)
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday())))
		case 'W':
			pad((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2)
		case 'y':
			pad(((t.Year()%100)+100)%100, 2)
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'z':
			_, off := t.Zone()
			sign := byte('+')
			if off < 0 {
				sign, off = '-', -off
			}
			b.WriteByte(sign)
			pad(off/3600, 2)
			pad(off%3600/60, 2)
		case 'Z':
			name, _ := t.Zone()
			if len(name) > maxConversion {
				name = name[:maxConversion]
			}
			b.WriteString(name)
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
