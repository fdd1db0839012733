package customization

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// strFormat is Lua 5.1's string.format, within the string limit. gopher-lua hands the
// format to Go's fmt.Sprintf, whose widths go up to a million and whose verbs are not Lua's;
// this follows Lua: flags "-+ #0", a width and a precision of at most two digits each, and
// the conversions c d i o u x X e E f g G q s. %s takes any value, as tostring shows it.
func (v *vm) strFormat(L *lua.LState) int {
	format := L.CheckString(1)
	arg := 1
	var out strings.Builder
	write := func(s string) {
		if out.Len()+len(s) > v.lim.maxString {
			v.b.over("string.format: " + sizeWhy(int64(out.Len()+len(s)), v.lim.maxString))
		}
		out.WriteString(s)
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			j := strings.IndexByte(format[i:], '%')
			if j < 0 {
				j = len(format) - i
			}
			write(format[i : i+j])
			i += j - 1
			continue
		}
		i++
		if i < len(format) && format[i] == '%' {
			write("%")
			continue
		}
		// a conversion: flags, width, precision, verb
		start := i
		for i < len(format) && strings.IndexByte("-+ #0", format[i]) >= 0 {
			i++
		}
		if i-start > 5 {
			L.RaiseError("invalid format (repeated flags)")
		}
		flags := format[start:i]
		digits := func() string {
			d := i
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i++
			}
			if i-d > 2 {
				L.RaiseError("invalid format (width or precision too long)")
			}
			return format[d:i]
		}
		width := digits()
		precision, hasPrecision := "", false
		if i < len(format) && format[i] == '.' {
			i++
			precision, hasPrecision = digits(), true
		}
		if i >= len(format) {
			L.RaiseError("invalid option '%%' to 'format'")
		}
		verb := format[i]
		arg++
		if arg > L.GetTop() && verb != '%' {
			L.ArgError(arg, "no value")
		}
		spec := "%" + flags + width
		if hasPrecision {
			spec += "." + precision
		}
		switch verb {
		case 'c':
			write(string([]byte{byte(int64(L.CheckNumber(arg)))}))
		case 'd', 'i':
			write(fmt.Sprintf(spec+"d", int64(L.CheckNumber(arg))))
		case 'o', 'x', 'X':
			write(fmt.Sprintf(spec+string(verb), uint64(int64(L.CheckNumber(arg)))))
		case 'u':
			write(fmt.Sprintf(spec+"d", uint64(int64(L.CheckNumber(arg)))))
		case 'e', 'E', 'f', 'g', 'G':
			if !hasPrecision {
				spec += ".6" // C's default; Go's %g would print every digit
			}
			write(fmt.Sprintf(spec+string(verb), float64(L.CheckNumber(arg))))
		case 'q':
			write(quote(L.CheckString(arg)))
		case 's':
			s := L.ToStringMeta(L.Get(arg)).String()
			if hasPrecision && len(precision) > 0 {
				if p := atoi(precision); p < len(s) {
					s = s[:p]
				}
			} else if hasPrecision {
				s = ""
			}
			if w := atoi(width); len(s) < w {
				pad := strings.Repeat(" ", w-len(s))
				if strings.Contains(flags, "-") {
					s += pad
				} else {
					s = pad + s
				}
			}
			write(s)
		default:
			L.RaiseError("invalid option '%%%c' to 'format'", verb)
		}
		v.b.work(1)
	}
	v.b.charge(int64(out.Len()) + costString)
	L.Push(lua.LString(out.String()))
	return 1
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// quote is %q: the string in double quotes, as Lua 5.1 writes it so that Lua can read it
// back.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\r':
			b.WriteString(`\r`)
		case 0:
			b.WriteString(`\000`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
