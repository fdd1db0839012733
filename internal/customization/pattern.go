package customization

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1 patterns, written for the sandbox: gopher-lua's matcher recurses once per subject
// character and cannot be stopped, so a pattern such as ".-.-.-.-x" on a long string would
// run past any deadline. This one counts every step as work (the call's time budget stops
// it) and bounds its recursion by the pattern's nesting, as Lua 5.2 does.

const (
	maxCaptures     = 32
	maxPatternDepth = 200
	capUnfinished   = -1
	capPosition     = -2
	patternSpecials = "^$*+?.([%-"
)

type capture struct{ init, len int }

type matcher struct {
	v     *vm
	L     *lua.LState
	src   string
	pat   string
	level int
	depth int
	caps  [maxCaptures]capture
}

func (m *matcher) fail(format string, args ...any) {
	m.L.RaiseError("malformed pattern (%s)", fmt.Sprintf(format, args...))
}

// classEnd returns the index just after the single-character class at p.
func (m *matcher) classEnd(p int) int {
	c := m.pat[p]
	p++
	switch c {
	case '%':
		if p >= len(m.pat) {
			m.fail("ends with '%%'")
		}
		return p + 1
	case '[':
		if p < len(m.pat) && m.pat[p] == '^' {
			p++
		}
		for { // the first character is part of the set even when it is ']'
			if p >= len(m.pat) {
				m.fail("missing ']'")
			}
			c := m.pat[p]
			p++
			if c == '%' {
				if p >= len(m.pat) {
					m.fail("missing ']'")
				}
				p++
			}
			if p < len(m.pat) && m.pat[p] == ']' {
				return p + 1
			}
		}
	}
	return p
}

func matchClass(c byte, cl byte) bool {
	var res bool
	switch cl | 0x20 {
	case 'a':
		res = isAlpha(c)
	case 'c':
		res = c < 32 || c == 127
	case 'd':
		res = c >= '0' && c <= '9'
	case 'l':
		res = c >= 'a' && c <= 'z'
	case 'p':
		res = isPunct(c)
	case 's':
		res = c == ' ' || (c >= '\t' && c <= '\r')
	case 'u':
		res = c >= 'A' && c <= 'Z'
	case 'w':
		res = isAlpha(c) || (c >= '0' && c <= '9')
	case 'x':
		res = (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'f')
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if cl >= 'A' && cl <= 'Z' {
		return !res
	}
	return res
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isPunct(c byte) bool {
	return c > 32 && c < 127 && !isAlpha(c) && !(c >= '0' && c <= '9')
}

// matchBracket reports whether c is in the set [ ... ] from p (at '[') to ec (at ']').
func (m *matcher) matchBracket(c byte, p, ec int) bool {
	sig := true
	p++
	if m.pat[p] == '^' {
		sig = false
		p++
	}
	for ; p < ec; p++ {
		switch {
		case m.pat[p] == '%' && p+1 < ec:
			p++
			if matchClass(c, m.pat[p]) {
				return sig
			}
		case p+2 < ec && m.pat[p+1] == '-':
			if m.pat[p] <= c && c <= m.pat[p+2] {
				return sig
			}
			p += 2
		case m.pat[p] == c:
			return sig
		}
	}
	return !sig
}

// single reports whether subject position s matches the class from p to ep.
func (m *matcher) single(s, p, ep int) bool {
	if s >= len(m.src) {
		return false
	}
	c := m.src[s]
	switch m.pat[p] {
	case '.':
		return true
	case '%':
		return matchClass(c, m.pat[p+1])
	case '[':
		return m.matchBracket(c, p, ep-1)
	}
	return m.pat[p] == c
}

// match matches the pattern from p against the subject from s; it returns the end of the
// match, or -1.
func (m *matcher) match(s, p int) int {
	m.depth++
	if m.depth > maxPatternDepth {
		m.L.RaiseError("pattern too complex")
	}
	defer func() { m.depth-- }()
	for {
		m.v.b.work(1)
		if p >= len(m.pat) {
			return s
		}
		switch m.pat[p] {
		case '(':
			if p+1 < len(m.pat) && m.pat[p+1] == ')' {
				return m.startCapture(s, p+2, capPosition)
			}
			return m.startCapture(s, p+1, capUnfinished)
		case ')':
			return m.endCapture(s, p+1)
		case '%':
			if p+1 < len(m.pat) {
				switch c := m.pat[p+1]; {
				case c == 'b':
					s = m.balance(s, p+2)
					if s == -1 {
						return -1
					}
					p += 4
					continue
				case c == 'f':
					p += 2
					if p >= len(m.pat) || m.pat[p] != '[' {
						m.fail("missing '[' after '%%f'")
					}
					ep := m.classEnd(p)
					var prev, cur byte
					if s > 0 {
						prev = m.src[s-1]
					}
					if s < len(m.src) {
						cur = m.src[s]
					}
					if m.matchBracket(prev, p, ep-1) || !m.matchBracket(cur, p, ep-1) {
						return -1
					}
					p = ep
					continue
				case c >= '0' && c <= '9':
					s = m.backref(s, c)
					if s == -1 {
						return -1
					}
					p += 2
					continue
				}
			}
		case '$':
			if p+1 == len(m.pat) {
				if s == len(m.src) {
					return s
				}
				return -1
			}
		}
		ep := m.classEnd(p)
		ok := m.single(s, p, ep)
		if ep < len(m.pat) {
			switch m.pat[ep] {
			case '?':
				if ok {
					if r := m.match(s+1, ep+1); r != -1 {
						return r
					}
				}
				p = ep + 1
				continue
			case '*':
				return m.maxExpand(s, p, ep)
			case '+':
				if !ok {
					return -1
				}
				return m.maxExpand(s+1, p, ep)
			case '-':
				return m.minExpand(s, p, ep)
			}
		}
		if !ok {
			return -1
		}
		s++
		p = ep
	}
}

func (m *matcher) maxExpand(s, p, ep int) int {
	i := 0
	for m.single(s+i, p, ep) {
		i++
		m.v.b.work(1)
	}
	for ; i >= 0; i-- {
		if r := m.match(s+i, ep+1); r != -1 {
			return r
		}
	}
	return -1
}

func (m *matcher) minExpand(s, p, ep int) int {
	for {
		if r := m.match(s, ep+1); r != -1 {
			return r
		}
		if !m.single(s, p, ep) {
			return -1
		}
		s++
	}
}

func (m *matcher) startCapture(s, p, what int) int {
	if m.level >= maxCaptures {
		m.L.RaiseError("too many captures")
	}
	m.caps[m.level] = capture{s, what}
	m.level++
	r := m.match(s, p)
	if r == -1 {
		m.level--
	}
	return r
}

func (m *matcher) endCapture(s, p int) int {
	l := -1
	for i := m.level - 1; i >= 0; i-- {
		if m.caps[i].len == capUnfinished {
			l = i
			break
		}
	}
	if l < 0 {
		m.fail("invalid pattern capture")
	}
	m.caps[l].len = s - m.caps[l].init
	r := m.match(s, p)
	if r == -1 {
		m.caps[l].len = capUnfinished
	}
	return r
}

func (m *matcher) balance(s, p int) int {
	if p+1 >= len(m.pat) {
		m.fail("missing arguments to '%%b'")
	}
	if s >= len(m.src) || m.src[s] != m.pat[p] {
		return -1
	}
	b, e := m.pat[p], m.pat[p+1]
	depth := 1
	for i := s + 1; i < len(m.src); i++ {
		m.v.b.work(1)
		switch m.src[i] {
		case e:
			depth--
			if depth == 0 {
				return i + 1
			}
		case b:
			depth++
		}
	}
	return -1
}

func (m *matcher) backref(s int, c byte) int {
	l := int(c - '1')
	if l < 0 || l >= m.level || m.caps[l].len == capUnfinished {
		m.L.RaiseError("invalid capture index %%%d", l+1)
	}
	n := m.caps[l].len
	if n == capPosition {
		return -1 // as in Lua, a position never matches
	}
	if len(m.src)-s >= n && m.src[m.caps[l].init:m.caps[l].init+n] == m.src[s:s+n] {
		m.v.b.work(n)
		return s + n
	}
	return -1
}

// capture returns capture i of a match from s to e (the whole match when the pattern has
// no captures and i is 0).
func (m *matcher) capture(i, s, e int) lua.LValue {
	if i >= m.level {
		if i == 0 {
			return m.str(m.src[s:e])
		}
		m.L.RaiseError("invalid capture index")
	}
	c := m.caps[i]
	switch c.len {
	case capUnfinished:
		m.L.RaiseError("unfinished capture")
	case capPosition:
		return lua.LNumber(c.init + 1)
	}
	return m.str(m.src[c.init : c.init+c.len])
}

// pushCaptures pushes the captures of a match (or the whole match) and returns how many.
func (m *matcher) pushCaptures(s, e int, whole bool) int {
	n := m.level
	if n == 0 && whole {
		n = 1
	}
	for i := 0; i < n; i++ {
		m.L.Push(m.capture(i, s, e))
	}
	return n
}

func (m *matcher) str(s string) lua.LString {
	m.v.b.charge(int64(len(s)) + costString)
	return lua.LString(s)
}

// startAt converts Lua's init argument (1-based, negative from the end) to an index within
// 0..len(s), as Lua 5.1 does.
func startAt(init, n int) int {
	if init < 0 {
		init = n + init + 1
	}
	init--
	return min(max(init, 0), n)
}

func (v *vm) strFind(L *lua.LState) int  { return v.find(L, true) }
func (v *vm) strMatch(L *lua.LState) int { return v.find(L, false) }

func (v *vm) find(L *lua.LState, find bool) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	init := startAt(L.OptInt(3, 1), len(src))
	if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(pat, patternSpecials)) {
		v.b.work((len(src) - init) / 64)
		if i := strings.Index(src[init:], pat); i >= 0 {
			L.Push(lua.LNumber(init + i + 1))
			L.Push(lua.LNumber(init + i + len(pat)))
			return 2
		}
		L.Push(lua.LNil)
		return 1
	}
	m := &matcher{v: v, L: L, src: src}
	anchor := strings.HasPrefix(pat, "^")
	if anchor {
		pat = pat[1:]
	}
	m.pat = pat
	for s := init; s <= len(src); s++ {
		m.level = 0
		if e := m.match(s, 0); e != -1 {
			if find {
				L.Push(lua.LNumber(s + 1))
				L.Push(lua.LNumber(e))
				return m.pushCaptures(-1, -1, false) + 2
			}
			return m.pushCaptures(s, e, true)
		}
		if anchor {
			break
		}
	}
	L.Push(lua.LNil)
	return 1
}

// strGmatch is string.gmatch(s, pattern): an iterator over the matches. As in Lua 5.1, '^'
// does not anchor.
func (v *vm) strGmatch(L *lua.LState) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	pos := 0
	v.b.charge(costClosure)
	L.Push(L.NewFunction(func(L *lua.LState) int {
		m := &matcher{v: v, L: L, src: src, pat: pat}
		for s := pos; s <= len(src); s++ {
			m.level = 0
			if e := m.match(s, 0); e != -1 {
				pos = e
				if e == s {
					pos++ // an empty match: move on
				}
				return m.pushCaptures(s, e, true)
			}
		}
		pos = len(src) + 1
		return 0
	}))
	return 1
}

// strGsub is string.gsub(s, pattern, repl [, n]) within the string limit.
func (v *vm) strGsub(L *lua.LState) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	repl := L.Get(3)
	switch repl.(type) {
	case lua.LString, lua.LNumber, *lua.LTable, *lua.LFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	maxN := L.OptInt(4, len(src)+1)
	m := &matcher{v: v, L: L, src: src}
	anchor := strings.HasPrefix(pat, "^")
	if anchor {
		pat = pat[1:]
	}
	m.pat = pat
	var out strings.Builder
	write := func(s string) {
		if int64(out.Len())+int64(len(s)) > int64(v.lim.maxString) {
			v.b.over("string.gsub: " + sizeWhy(int64(out.Len())+int64(len(s)), v.lim.maxString))
		}
		v.b.work(len(s) / 64)
		out.WriteString(s)
	}
	s, n := 0, 0
	for n < maxN {
		m.level = 0
		e := m.match(s, 0)
		if e != -1 {
			n++
			write(v.replacement(m, repl, s, e))
		}
		switch {
		case e != -1 && e > s:
			s = e
		case s < len(src):
			write(src[s : s+1])
			s++
		default:
			s = len(src) + 1
		}
		if s > len(src) || anchor {
			break
		}
	}
	if s <= len(src) {
		write(src[s:])
	}
	v.b.charge(int64(out.Len()) + costString)
	L.Push(lua.LString(out.String()))
	L.Push(lua.LNumber(n))
	return 2
}

// replacement is what gsub puts in place of the match from s to e.
func (v *vm) replacement(m *matcher, repl lua.LValue, s, e int) string {
	L := m.L
	var val lua.LValue
	switch r := repl.(type) {
	case lua.LString, lua.LNumber:
		text := lua.LVAsString(r)
		var b strings.Builder
		for i := 0; i < len(text); i++ {
			c := text[i]
			if c != '%' || i+1 == len(text) {
				b.WriteByte(c)
				continue
			}
			i++
			switch d := text[i]; {
			case d == '0':
				b.WriteString(m.src[s:e])
			case d >= '1' && d <= '9':
				b.WriteString(lua.LVAsString(m.capture(int(d-'1'), s, e)))
			default:
				b.WriteByte(d)
			}
			if b.Len() > v.lim.maxString {
				v.b.over("string.gsub: " + sizeWhy(int64(b.Len()), v.lim.maxString))
			}
		}
		return b.String()
	case *lua.LTable:
		val = r.RawGet(m.capture(0, s, e))
	case *lua.LFunction:
		L.Push(r)
		L.Call(m.pushCaptures(s, e, true), 1)
		val = L.Get(-1)
		L.Pop(1)
	}
	switch x := val.(type) {
	case *lua.LNilType:
		return m.src[s:e]
	case lua.LBool:
		if !x {
			return m.src[s:e]
		}
	case lua.LString, lua.LNumber:
		return lua.LVAsString(x)
	}
	L.RaiseError("invalid replacement value (a %s)", val.Type().String())
	return ""
}
