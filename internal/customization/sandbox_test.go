package customization

import (
	"strings"
	"testing"

	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// check runs body as InterpretHealth and wants it to return true.
func check(t *testing.T, body string) {
	t.Helper()
	c := health(t, Options{}, "function InterpretHealth(obj)\n"+body+"\nend")
	ok, err := c.InterpretHealth(app(nil, nil))
	if err != nil || !ok {
		t.Errorf("%s\n=> %v, %v; want true", body, ok, err)
	}
}

// TestSandbox: only the sandbox's functions are reachable.
func TestSandbox(t *testing.T) {
	for _, name := range []string{
		"io", "debug", "kube", "package", "coroutine", "channel", "module", "dofile", "loadfile", "load",
		"loadstring", "getfenv", "setfenv", "getmetatable", "setmetatable", "rawget", "rawset", "rawequal",
		"newproxy", "collectgarbage", "gcinfo", "_printregs", "_GOPHER_LUA_VERSION",
		"string.dump", "math.randomseed",
		"os.clock", "os.difftime", "os.execute", "os.exit", "os.getenv", "os.remove", "os.rename",
		"os.setlocale", "os.tmpname",
	} {
		check(t, "return "+name+" == nil")
	}
	for _, name := range []string{
		"assert", "error", "ipairs", "next", "pairs", "pcall", "print", "select", "tonumber", "tostring",
		"type", "unpack", "xpcall", "require", "_G", "_VERSION",
		"string.byte", "string.char", "string.find", "string.format", "string.gmatch", "string.gsub",
		"string.len", "string.lower", "string.match", "string.rep", "string.reverse", "string.sub", "string.upper",
		"table.concat", "table.insert", "table.remove", "table.sort", "table.getn", "table.maxn",
		"os.time", "os.date",
		"math.floor", "math.ceil", "math.max", "math.min", "math.abs", "math.huge", "math.pi", "math.random", "math.fmod",
	} {
		check(t, "return "+name+" ~= nil")
	}
	check(t, `return _G == _G._G and _VERSION == "Lua 5.1"`)
	check(t, `print("ignored", {}) return print() == nil`)
	check(t, `local ok, err = pcall(require, "os") return not ok and string.find(err, "only \"kube\"") ~= nil`)
	check(t, `local ok, err = pcall(require, "string") return not ok`)
	check(t, `local kube = require("kube") return kube.resourceAdd ~= nil and require("kube") ~= kube`)
	check(t, `local n = 0 for k in pairs(os) do n = n + 1 end return n == 2`)
	check(t, `local kube, n = require("kube"), 0 for k in pairs(kube) do n = n + 1 end
return n == 4 and kube.accuratePodRequirements ~= nil and kube.getPodDependencies ~= nil and kube.resourceAdd ~= nil and kube.getResourceQuantity ~= nil`)
	// The hidden helpers cannot be named, and are not globals.
	for name := range map[string]bool{helperConcat: true, helperSet: true, helperTable: true, helperFunc: true} {
		check(t, `return _G["`+name+`"] == nil`)
	}
}

// TestCallsAreIsolated: nothing a call does to its globals or libraries is seen by the next
// call, in the same Lua state.
func TestCallsAreIsolated(t *testing.T) {
	c := health(t, Options{IdleStates: 1}, `
count = 0
local calls = 0
function InterpretHealth(obj)
  count = count + 1
  calls = calls + 1
  seen = (seen or 0) + 1
  local first = count == 1 and calls == 1 and seen == 1 and string.upper("a") == "A" and ("b"):upper() == "B"
  string.upper = nil
  table.insert = nil
  _G.print = nil
  math.floor = function() return 0 end
  return first
end`)
	for i := 0; i < 3; i++ {
		if ok, err := c.InterpretHealth(app(nil, nil)); !ok || err != nil {
			t.Fatalf("call %d: %v, %v; a call saw what an earlier one did", i, ok, err)
		}
	}
}

// TestLuaSemantics: rewritten scripts behave as Lua does.
func TestLuaSemantics(t *testing.T) {
	for _, body := range []string{
		// assignments
		`local t = {} t.a, t.b = 1, 2 return t.a == 1 and t.b == 2`,
		`local t = {1, 2} t[1], t[2] = t[2], t[1] return t[1] == 2 and t[2] == 1`,
		`local a, b = {}, {} a.x, b.y = (function() return 1, 2 end)() return a.x == 1 and b.y == 2`,
		`local t = {} t.x, t.y, t.z = 1 return t.x == 1 and t.y == nil and t.z == nil`,
		`local t = {} x, t.y = 1, 2 return x == 1 and t.y == 2`,
		`local t = {} local i = 1 i, t[i] = i + 1, 20 return i == 2 and t[1] == 20 and t[2] == nil`,
		`local t = {a = {b = {}}} t.a.b.c = 5 return t.a.b.c == 5`,
		`local t = {} t[1.5] = "x" t[-1] = "y" t[true] = "z" return t[1.5] == "x" and t[-1] == "y" and t[true] == "z"`,
		`local t = {a = 1} t.a = nil return next(t) == nil`,
		`local t = {} t[1000] = nil return next(t) == nil`,
		`local t = {} for i = 1, 10 do t[#t + 1] = i end return #t == 10 and t[10] == 10`,
		`local t = {} t[3] = "c" t[1] = "a" t[2] = "b" return table.concat(t) == "abc"`,
		`local ok, e = pcall(function() local t = {} t[nil] = 1 end) return not ok and string.find(e, "table index is nil") ~= nil`,
		`local ok, e = pcall(function() local t = {} t[0/0] = 1 end) return not ok and string.find(e, "table index is NaN") ~= nil`,
		`local ok, e = pcall(function() local s = 5 s.x = 1 end) return not ok and string.find(e, "attempt to index a number value") ~= nil`,
		// constructors
		`local t = {1, 2, 3, n = 3, ["k"] = "v"} return #t == 3 and t.n == 3 and t.k == "v"`,
		`local k = "key" local t = {[k] = 1, [k .. 2] = 2, [10] = "ten"} return t.key == 1 and t.key2 == 2 and t[10] == "ten"`,
		`local function g() return 1, 2, 3 end return #{g()} == 3 and #{g(), g()} == 4`,
		`local function g() return 1, 2, 3 end local t = {["x"] = g(), [2] = g()} return t.x == 1 and t[2] == 1 and t[3] == nil`,
		`local function f(...) local t = {...} return #t end return f(1, 2, 3) == 3 and f() == 0`,
		`local function f(...) return {[1] = ...} end return f(7, 8)[1] == 7 and f(7, 8)[2] == nil`,
		`return #{} == 0 and next({}) == nil`,
		// functions
		`local function fact(n) if n <= 1 then return 1 end return n * fact(n - 1) end return fact(5) == 120`,
		`local f = function(n) if n == 0 then return "done" end return f(n - 1) end return f(3) == "done"`,
		`function g(n) return n * 2 end return g(2) == 4`,
		`local o = {n = 1} function o:inc(k) self.n = self.n + k return self end return o:inc(2).n == 3 and o.n == 3`,
		`local o = {a = {}} function o.a.f(x) return x * 2 end return o.a.f(2) == 4`,
		`local function counter() local n = 0 return function() n = n + 1 return n end end local c = counter() c() return c() == 2`,
		`local function f(...) return select("#", ...) end return f(nil, nil) == 2 and f() == 0`,
		`local function f(...) return arg end return f(1, 2) == nil`,
		`local function f(a, ...) return a, ... end local x, y, z = f(1, 2, 3) return x == 1 and y == 2 and z == 3`,
		`return (function(...) return ... end)(4, 5) == 4`,
		// concatenation
		`return 1 .. 2 == "12" and "a" .. 1.5 == "a1.5" and "x" .. "y" .. "z" == "xyz"`,
		`return ("a" .. "b") .. ("c" .. "d") == "abcd" and "a" .. 1 + 2 == "a3" and #("ab" .. "c") == 3`,
		`local s = "" for i = 1, 3 do s = s .. i .. "," end return s == "1,2,3,"`,
		`local ok, e = pcall(function() return "a" .. nil end) return not ok and string.find(e, "attempt to concatenate a nil value") ~= nil`,
		`local ok, e = pcall(function() return "a" .. {} end) return not ok and string.find(e, "table") ~= nil`,
		// control flow
		`local i = 0 ::top:: i = i + 1 if i < 3 then goto top end return i == 3`,
		`local n = 0 repeat n = n + 1 until #{n} == 1 and n >= 2 return n == 2`,
		`local n = 0 while #{n} == 1 and n < 4 do n = n + 1 end return n == 4`,
		`local s = 0 for i = 10, 1, -(#{1, 2}) do s = s + i end return s == 30`,
		`local t = {} for k, v in pairs({a = 1, b = 2}) do t[#t + 1] = k .. v end table.sort(t) return table.concat(t, ",") == "a1,b2"`,
		`local s = 0 for _, v in ipairs({1, 2, 3, nil, 5}) do s = s + v end return s == 6`,
		`if #{} == 0 then return true elseif {} then return false else return false end`,
		`do local t = {} t.x = 1 end return true`,
		// errors
		`local ok, e = pcall(error, {code = 7}) return not ok and e.code == 7`,
		`local ok, e = pcall(error, "boom", 0) return not ok and e == "boom"`,
		`local ok, e = xpcall(function() error("x") end, function(m) return "handled: " .. m end) return not ok and string.find(e, "handled") == 1`,
		`local ok, a, b = pcall(function() return 1, 2 end) return ok and a == 1 and b == 2`,
		`return string.find(select(2, pcall(assert, false, "msg")), "msg") ~= nil and pcall(assert, 1)`,
		// libraries
		`return tostring(12) == "12" and tostring(1.5) == "1.5" and tonumber("0x10") == 16 and tonumber("z", 36) == 35`,
		`return type(nil) == "nil" and type({}) == "table" and type(print) == "function"`,
		`local t = {5, 2, 8} table.sort(t) return t[1] == 2 and t[3] == 8`,
		`local t = {5, 2, 8} table.sort(t, function(a, b) return a > b end) return t[1] == 8 and t[3] == 2`,
		`local t = {"b", "a"} table.sort(t) return t[1] == "a"`,
		`local ok = pcall(table.sort, {1, "a", 2}) return not ok`,
		`local t = {1, 2} table.insert(t, 1, 0) table.insert(t, 3) return table.concat(t, ",") == "0,1,2,3"`,
		`local t = {1, 2, 3} return table.remove(t) == 3 and table.remove(t, 1) == 1 and #t == 1`,
		`return table.concat({1, "a", 2.5}, "-") == "1-a-2.5" and table.concat({}, ",") == "" and table.concat({1, 2, 3}, ",", 2, 3) == "2,3"`,
		`local ok, e = pcall(table.concat, {1, {}, 3}) return not ok and string.find(e, "invalid value %(at index 2%)") ~= nil`,
		`return string.rep("ab", 3) == "ababab" and string.rep("x", 0) == "" and string.rep("x", -1) == "" and string.rep("a", 3, ",") == "a,a,a"`,
		`return ("x"):rep(2) == "xx" and ("Hi"):upper() == "HI" and ("abc"):sub(2) == "bc" and ("abc"):len() == 3`,
		`return string.byte("A") == 65 and string.char(72, 105) == "Hi" and string.reverse("ab") == "ba"`,
		`return math.floor(2.7) == 2 and math.max(1, 5, 3) == 5 and math.huge > 1e300 and math.pi > 3.14`,
		`local r = math.random(1, 3) return r >= 1 and r <= 3`,
	} {
		check(t, body)
	}
}

// TestRuntimeErrorLines: errors name the line where they happened, also in helper functions
// and after rewriting.
func TestRuntimeErrorLines(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"function InterpretHealth(obj)\n  local t = {}\n  t.x.y = 1\nend", "line 3:"},
		{"local function helper(o)\n  return o.a.b\nend\nfunction InterpretHealth(obj)\n  return helper(obj)\nend", "line 2:"},
		{"function InterpretHealth(obj)\n\n\n  return nil .. 'x'\nend", "line 4: attempt to concatenate a nil value"},
		{"function InterpretHealth(obj)\n  local s = string.rep('x', 10)\n  return string.format('%d', s)\nend", "line 3:"},
		{"local x = nil\nlocal y = x.field\nfunction InterpretHealth(obj) return true end", "line 2:"},
	} {
		_, err := health(t, Options{}, tc.src).InterpretHealth(app(nil, nil))
		wantErr(t, err, tc.want)
		if strings.Contains(err.Error(), "stack traceback") || strings.Contains(err.Error(), "script:") {
			t.Errorf("error %q has a traceback or the chunk's name", err)
		}
	}
}

// TestPathologicalScripts: scripts at the edges of the parser and the compiler compile or
// fail with an error, and run or fail with one; none panics.
func TestPathologicalScripts(t *testing.T) {
	const n = 5000
	for _, src := range []string{
		"return " + strings.Repeat("(", n) + "true" + strings.Repeat(")", n),
		"return " + strings.Repeat("{", n) + strings.Repeat("}", n) + " ~= nil",
		"return obj" + strings.Repeat(".a", n) + " == nil",
		"return " + strings.Repeat("f(", n) + strings.Repeat(")", n),
		"return 1" + strings.Repeat("+1", n) + " > 0",
		"return 'a'" + strings.Repeat("..'a'", 300) + " ~= ''",
		strings.Repeat("do ", n) + strings.Repeat("end ", n) + "return true",
		strings.Repeat("local a = function() ", 500) + strings.Repeat("end ", 500) + "return true",
		"local t = {" + strings.Repeat("1,", n) + "} return #t == " + "5000",
		"local t = {" + strings.Repeat("[1]=1,", n) + "} return t[1] == 1",
		strings.Repeat("local a = 1 ", 300) + "return true",
		"return f(" + strings.Repeat("1,", 300) + "1)",
		"obj.a" + strings.Repeat(",obj.a", 150) + " = 1 return true",
	} {
		src = "function InterpretHealth(obj)\n" + src + "\nend"
		store := NewStore(Options{})
		if err := store.Apply(newRIC("x", scripts{interpreter.OperationInterpretHealth: src})); err != nil {
			continue
		}
		c, _ := store.Lookup(gvkApp)
		_, _ = c.InterpretHealth(app(nil, nil))
	}
}
