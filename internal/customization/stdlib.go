package customization

import (
	"sort"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Allocation charges, in bytes, of what scripts make: estimates of gopher-lua's sizes, as
// measured with Go 1.26. An empty table is about 100 bytes, and its first list element
// makes an array of 32 slots (512 bytes); a list element is a 16-byte slot, doubled as the
// array grows; a field (any key but a list index) is an entry in a Go map, another in the
// table's key order and a key slot, about 100 bytes.
const (
	costTable   = 256 // the table and its first slots
	costElement = 32  // a list element (an index within 1..#t+1)
	costField   = 128 // any other new key
	costNilSlot = 16  // a nil gopher-lua fills in when an index skips ahead
	costClosure = 256
	costString  = 32
)

// costOfKey is the charge of a new key k in a table whose list has n elements.
func costOfKey(k lua.LValue, n int) int64 {
	if i, ok := k.(lua.LNumber); ok && i >= 1 && i <= lua.LNumber(n+1) && i == lua.LNumber(int64(i)) {
		return costElement
	}
	return costField
}

// buildSandbox picks the functions of the stock libraries that scripts may use, wraps those
// that allocate or loop so that they stay within the call's budget, and adds Flotilla's.
//
// Left out: dofile, loadfile, load, loadstring (no code from elsewhere), require except for
// "kube", module, getfenv, setfenv (no reaching other functions' globals), getmetatable,
// setmetatable, rawget, rawset, rawequal, newproxy (no metatables: the budget accounts
// table writes, which metatables and raw writes would bypass), collectgarbage, gcinfo,
// string.dump, math.randomseed, and the os, io, debug, package, coroutine and channel
// libraries. print discards its arguments.
func (v *vm) buildSandbox(stock *lua.LTable) {
	L := v.L
	get := func(t *lua.LTable, name string) lua.LValue { return t.RawGetString(name) }
	gfn := func(t *lua.LTable, name string) lua.LGFunction {
		return t.RawGetString(name).(*lua.LFunction).GFunction
	}
	fn := func(f lua.LGFunction) lua.LValue { return L.NewFunction(f) }
	charged := func(f lua.LGFunction) lua.LValue {
		return L.NewFunction(func(L *lua.LState) int {
			n := f(L)
			if n > 0 {
				if s, ok := L.Get(-n).(lua.LString); ok {
					v.b.charge(int64(len(s)) + costString)
					v.b.work(len(s) / 64)
				}
			}
			return n
		})
	}

	v.base = []entry{
		{"_VERSION", lua.LString(lua.LuaVersion)},
		{"print", fn(func(*lua.LState) int { return 0 })},
		{"pcall", fn(v.pcall)},
		{"require", fn(v.require)},
		{"tostring", charged(gfn(stock, "tostring"))},
	}
	for _, name := range []string{"assert", "error", "ipairs", "next", "pairs", "select", "tonumber", "type", "unpack", "xpcall"} {
		v.base = append(v.base, entry{name, get(stock, name)})
	}

	str := stock.RawGetString("string").(*lua.LTable)
	strByte := gfn(str, "byte")
	stringLib := library{name: "string", entries: []entry{
		{"byte", fn(func(L *lua.LState) int {
			n := strByte(L)
			v.b.work(n)
			return n
		})},
		{"len", get(str, "len")},
		{"char", charged(gfn(str, "char"))},
		{"lower", charged(gfn(str, "lower"))},
		{"upper", charged(gfn(str, "upper"))},
		{"reverse", charged(gfn(str, "reverse"))},
		{"sub", charged(gfn(str, "sub"))},
		{"rep", fn(v.strRep)},
		{"format", fn(v.strFormat)},
		{"find", fn(v.strFind)},
		{"match", fn(v.strMatch)},
		{"gmatch", fn(v.strGmatch)},
		{"gfind", fn(v.strGmatch)},
		{"gsub", fn(v.strGsub)},
	}}
	tbl := stock.RawGetString("table").(*lua.LTable)
	tableLib := library{name: "table", entries: []entry{
		{"getn", get(tbl, "getn")},
		{"maxn", get(tbl, "maxn")},
		{"remove", get(tbl, "remove")},
		{"insert", fn(v.tableInsert)},
		{"concat", fn(v.tableConcat)},
		{"sort", fn(v.tableSort)},
	}}
	math := stock.RawGetString("math").(*lua.LTable)
	mathLib := library{name: "math"}
	math.ForEach(func(k, val lua.LValue) {
		if name, ok := k.(lua.LString); ok && name != "randomseed" {
			mathLib.entries = append(mathLib.entries, entry{string(name), val})
		}
	})
	sort.Slice(mathLib.entries, func(i, j int) bool { return mathLib.entries[i].name < mathLib.entries[j].name })
	osLib := library{name: "os", entries: []entry{
		{"date", fn(v.osDate)},
		{"time", fn(v.osTime)},
	}}
	v.libs = []library{stringLib, tableLib, mathLib, osLib}

	v.kube = []entry{
		{"accuratePodRequirements", fn(v.kubeAccuratePodRequirements)},
		{"getPodDependencies", fn(v.kubeGetPodDependencies)},
		{"resourceAdd", fn(v.kubeResourceAdd)},
		{"getResourceQuantity", fn(v.kubeGetResourceQuantity)},
	}
	v.handler = L.NewFunction(func(*lua.LState) int { return 1 })
	v.trampoline = L.NewFunction(v.trampolineFn)
	v.helpers = []lua.LValue{fn(v.concat), fn(v.set), fn(v.newTable), fn(v.newClosure)}
}

// require gives the kube library, afresh each time, and nothing else.
func (v *vm) require(L *lua.LState) int {
	name := L.CheckString(1)
	if name != "kube" {
		L.RaiseError("module %q is not available: only \"kube\" can be required", name)
	}
	v.b.charge(costTable + int64(len(v.kube))*costField)
	t := L.CreateTable(0, len(v.kube))
	for _, e := range v.kube {
		t.RawSetString(e.name, e.value)
	}
	L.Push(t)
	return 1
}

// checkString raises an error when a string of n bytes would be longer than the limit.
func (v *vm) checkString(n int64) {
	if n < 0 || n > int64(v.lim.maxString) {
		v.b.over(sizeWhy(n, v.lim.maxString))
	}
}

func sizeWhy(n int64, limit int) string {
	if n < 0 {
		return "a string longer than the limit of " + itoa(int64(limit)) + " bytes"
	}
	return "a string of " + itoa(n) + " bytes, above the limit of " + itoa(int64(limit))
}

// concat is the .. operator: scripts are rewritten to call it with the operands of a chain
// of concatenations. Like Lua's, it takes strings and numbers.
func (v *vm) concat(L *lua.LState) int {
	top := L.GetTop()
	var n int64
	for i := 1; i <= top; i++ {
		switch x := L.Get(i).(type) {
		case lua.LString:
			n += int64(len(x))
		case lua.LNumber:
			n += int64(len(x.String()))
		default:
			L.RaiseError("attempt to concatenate a %s value", x.Type().String())
		}
	}
	v.checkString(n)
	v.b.charge(n + costString)
	v.b.work(int(n / 64))
	var sb strings.Builder
	sb.Grow(int(n))
	for i := 1; i <= top; i++ {
		sb.WriteString(lua.LVAsString(L.Get(i)))
	}
	L.Push(lua.LString(sb.String()))
	return 1
}

// set is t[k] = v: scripts are rewritten to call it for every assignment to a table field,
// so that the budget sees tables grow. There are no metatables in the sandbox, so it is a
// raw set, with Lua's errors.
func (v *vm) set(L *lua.LState) int {
	v.setField(L, L.Get(1), L.Get(2), L.Get(3))
	return 0
}

func (v *vm) setField(L *lua.LState, t, k, val lua.LValue) {
	tb, ok := t.(*lua.LTable)
	if !ok {
		L.RaiseError("attempt to index a %s value", t.Type().String())
	}
	switch key := k.(type) {
	case *lua.LNilType:
		L.RaiseError("table index is nil")
	case lua.LNumber:
		if key != key {
			L.RaiseError("table index is NaN")
		}
	}
	if tb.RawGet(k) != lua.LNil {
		tb.RawSet(k, val)
		return
	}
	if val == lua.LNil {
		return // a field that is not there is already nil
	}
	n := tb.Len()
	var gap int64
	if i, ok := k.(lua.LNumber); ok && i >= 1 && i < lua.LNumber(lua.MaxArrayIndex) && i == lua.LNumber(int64(i)) {
		// gopher-lua fills the array part up to the index with nils.
		gap = max(int64(i)-int64(n)-1, 0)
	}
	v.b.charge(costOfKey(k, n) + gap*costNilSlot)
	v.b.work(int(gap))
	tb.RawSet(k, val)
}

// newTable charges a table that a constructor made, and sets the constructor's fields with
// computed or numeric keys (passed as key, value pairs), which rewriting moved out of the
// constructor so that they go through set.
func (v *vm) newTable(L *lua.LState) int {
	tb := L.CheckTable(1)
	n, cost := tb.Len(), int64(costTable)
	tb.ForEach(func(k, _ lua.LValue) { cost += costOfKey(k, n) })
	v.b.charge(cost)
	top := L.GetTop()
	for i := 2; i+1 <= top; i += 2 {
		v.setField(L, tb, L.Get(i), L.Get(i+1))
	}
	L.SetTop(0)
	L.Push(tb)
	return 1
}

// newClosure charges a function that a script made (closures hold their upvalues alive).
func (v *vm) newClosure(L *lua.LState) int {
	f := L.CheckFunction(1)
	v.b.charge(costClosure)
	L.SetTop(0)
	L.Push(f)
	return 1
}

// strRep is string.rep(s, n [, sep]) within the string limit.
func (v *vm) strRep(L *lua.LState) int {
	s := L.CheckString(1)
	count := float64(L.CheckNumber(2))
	sep := L.OptString(3, "")
	if count < 1 || len(s)+len(sep) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	size := count*float64(len(s)) + (count-1)*float64(len(sep))
	if size > float64(v.lim.maxString) {
		v.b.over("string.rep: " + sizeWhy(int64(min(size, 1<<62)), v.lim.maxString))
	}
	n := int(count)
	total := int64(n*len(s) + (n-1)*len(sep))
	v.b.charge(total + costString)
	v.b.work(int(total / 64))
	var sb strings.Builder
	sb.Grow(int(total))
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteString(sep)
		}
		sb.WriteString(s)
	}
	L.Push(lua.LString(sb.String()))
	return 1
}

// tableInsert is table.insert(t, [pos,] value); pos must be within 1..#t+1.
func (v *vm) tableInsert(L *lua.LState) int {
	tb := L.CheckTable(1)
	n := tb.Len()
	var pos int
	var val lua.LValue
	switch L.GetTop() {
	case 2:
		pos, val = n+1, L.Get(2)
	case 3:
		p := L.CheckNumber(2)
		if p < 1 || p > lua.LNumber(n+1) || p != lua.LNumber(int64(p)) {
			L.ArgError(2, "position out of bounds")
		}
		pos, val = int(p), L.Get(3)
	default:
		L.RaiseError("wrong number of arguments to 'insert'")
	}
	v.b.charge(costElement)
	if pos == n+1 {
		tb.RawSetInt(pos, val)
		return 0
	}
	v.b.work(n - pos)
	tb.Insert(pos, val)
	return 0
}

// tableConcat is table.concat(t [, sep [, i [, j]]]) within the string limit.
func (v *vm) tableConcat(L *lua.LState) int {
	tb := L.CheckTable(1)
	sep := L.OptString(2, "")
	i := L.OptInt64(3, 1)
	j := L.OptInt64(4, int64(tb.Len()))
	if i > j {
		L.Push(lua.LString(""))
		return 1
	}
	var n int64
	for k := i; k <= j; k++ {
		switch x := tb.RawGetInt(int(k)).(type) {
		case lua.LString:
			n += int64(len(x))
		case lua.LNumber:
			n += int64(len(x.String()))
		default:
			L.RaiseError("invalid value (at index %d) in table for 'concat'", k)
		}
		if k < j {
			n += int64(len(sep))
		}
		if n > int64(v.lim.maxString) {
			v.b.over("table.concat: " + sizeWhy(n, v.lim.maxString))
		}
		v.b.work(1)
	}
	v.b.charge(n + costString)
	var sb strings.Builder
	sb.Grow(int(n))
	for k := i; k <= j; k++ {
		sb.WriteString(lua.LVAsString(tb.RawGetInt(int(k))))
		if k < j {
			sb.WriteString(sep)
		}
	}
	L.Push(lua.LString(sb.String()))
	return 1
}

// tableSort is table.sort(t [, comp]), its comparisons counted as work.
func (v *vm) tableSort(L *lua.LState) int {
	tb := L.CheckTable(1)
	var comp *lua.LFunction
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		comp = L.CheckFunction(2)
	}
	n := tb.Len()
	v.b.charge(int64(n) * costNilSlot) // the copy it sorts
	vals := make([]lua.LValue, n)
	for i := range vals {
		vals[i] = tb.RawGetInt(i + 1)
	}
	v.b.work(n)
	sort.Sort(&sorter{v: v, L: L, comp: comp, vals: vals})
	for i, x := range vals {
		tb.RawSetInt(i+1, x)
	}
	return 0
}

type sorter struct {
	v    *vm
	L    *lua.LState
	comp *lua.LFunction
	vals []lua.LValue
}

func (s *sorter) Len() int      { return len(s.vals) }
func (s *sorter) Swap(i, j int) { s.vals[i], s.vals[j] = s.vals[j], s.vals[i] }
func (s *sorter) Less(i, j int) bool {
	s.v.b.work(1)
	a, b := s.vals[i], s.vals[j]
	if s.comp != nil {
		s.L.Push(s.comp)
		s.L.Push(a)
		s.L.Push(b)
		s.L.Call(2, 1)
		r := s.L.Get(-1)
		s.L.Pop(1)
		return lua.LVAsBool(r)
	}
	switch x := a.(type) {
	case lua.LNumber:
		if y, ok := b.(lua.LNumber); ok {
			return x < y
		}
	case lua.LString:
		if y, ok := b.(lua.LString); ok {
			return x < y
		}
	}
	s.L.RaiseError("attempt to compare %s with %s", a.Type().String(), b.Type().String())
	return false
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
