package customization

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// runaway is how long a call may take, whatever its time budget, before a test calls it a
// script that was never stopped. It is far above every budget here: the budget is wall-clock
// time, so on a machine busy with other work a call that is stopped on time still returns
// late, and a bound near the budget fails there (TestBudgets failed at load average 24). What
// these tests catch is a budget that does not stop a script at all, or restarts after the
// script catches its error; the durations are logged.
const runaway = 10 * time.Second

// callWithin runs call, failing t if it has not returned within runaway, and returns how long
// it took.
func callWithin(t *testing.T, what string, call func()) time.Duration {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); call() }()
	select {
	case <-done:
		return time.Since(start)
	case <-time.After(runaway):
		t.Fatalf("%s still running after %v: the time budget did not stop it", what, runaway)
		return 0
	}
}

// TestBudgets: scripts that loop or allocate without bound are stopped with an error,
// having allocated a bounded amount of memory, and the store keeps working.
func TestBudgets(t *testing.T) {
	const timeout = 100 * time.Millisecond
	tests := []struct {
		name string
		src  string // the body of InterpretHealth(obj)
		// time: the error wraps ErrTimeBudget; memory: ErrMemoryBudget; else the error
		// says want. Only the time cases have a short time budget.
		memory, time bool
		want         string
	}{
		{name: "infinite loop", src: `while true do end`, time: true},
		{name: "infinite tail recursion", src: `local function f(n) return f(n + 1) end return f(1)`, time: true},
		{name: "a loop catching its own timeout", src: `while true do pcall(function() while true do end end) end`, time: true},
		{name: "xpcall with a handler that loops", src: `return xpcall(function() error("x") end, function(e) while true do end end)`, time: true},
		{name: "catching the timeout and returning", src: `local ok = pcall(function() while true do end end) return true`, time: true},
		{name: "a pattern that backtracks forever", src: `return string.find(string.rep("a", 20000), ".-.-.-.-.-b") ~= nil`, time: true},
		{name: "sorting with a comparator that loops", src: `local t = {3, 2, 1} table.sort(t, function(a, b) while true do end end)`, time: true},

		{name: "string.rep 1e10", src: `local s = string.rep("x", 1e10) return #s > 0`, memory: true},
		{name: "string.rep as a method", src: `local s = ("xy"):rep(1e9, ",") return #s > 0`, memory: true},
		{name: "doubling a string", src: `local s = "x" while true do s = s .. s end`, memory: true},
		{name: "concatenating a chain", src: `local s = string.rep("x", 400000) return #(s .. s .. s) > 0`, memory: true},
		{name: "string.format", src: `local s = string.rep("x", 600000) return #string.format("%s%s", s, s) > 0`, memory: true},
		{name: "string.format %q", src: `local s = string.rep("\"", 600000) return #string.format("%q", s) > 0`, memory: true},
		{name: "table.concat", src: `local t = {} for i = 1, 20 do t[i] = string.rep("x", 100000) end return #table.concat(t) > 0`, memory: true},
		{name: "string.gsub", src: `return #string.gsub(string.rep("x", 1000), "x", string.rep("y", 2000)) > 0`, memory: true},
		{name: "catching the string limit and returning", src: `pcall(string.rep, "x", 1e10) return true`, memory: true},
		{name: "a loop inserting into a table forever", src: `local t = {} while true do t[#t + 1] = "x" end`, memory: true},
		{name: "table.insert forever", src: `local t = {} local i = 0 while true do i = i + 1 table.insert(t, i) end`, memory: true},
		{name: "new string keys forever", src: `local t, i = {}, 0 while true do i = i + 1 t["k" .. i] = i end`, memory: true},
		{name: "a linked list grown forever", src: `local p while true do p = {next = p} end`, memory: true},
		{name: "a chain of closures", src: `local f while true do local g = f f = function() return g end end`, memory: true},
		{name: "a list of tables", src: `local t = {} while true do t[#t + 1] = {1, 2, 3, 4, 5, 6, 7, 8} end`, memory: true},
		{name: "one index far out", src: `local t = {} t[30000000] = 1 return true`, memory: true},
		{name: "one index far out, in a constructor", src: `local t = {[30000000] = 1} return true`, memory: true},
		{name: "one index far out, by table.insert", src: `local t = {} table.insert(t, 30000000, 1) return true`, want: "position out of bounds"},
		{name: "gmatch results kept forever", src: `local t, s = {}, string.rep("ab ", 1000) while true do for w in s:gmatch("%a+") do t[#t + 1] = w end end`, memory: true},

		{name: "deep recursion", src: `local function f(n) return 1 + f(n + 1) end return f(1) > 0`, want: "stack overflow: calls nested more than 200 deep"},
		{name: "deep recursion through pcall, retried forever", src: `local function f() pcall(f) f() end f() return true`, time: true},
		{name: "unpack of a huge list", src: `local t = {} for i = 1, 100000 do t[i] = i end return select("#", unpack(t)) > 0`, want: "registry overflow"},
		{name: "string.byte of a long string", src: `return select("#", string.byte(string.rep("x", 100000), 1, -1)) > 0`, want: "registry overflow"},
		{name: "a pattern nested too deep", src: `return string.find("x", string.rep("(", 300)) ~= nil`, want: "too many captures"},
		{name: "a pattern with too many items", src: `return string.find("aaa", string.rep("a*", 300)) ~= nil`, want: "pattern too complex"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f failures
			o := Options{Timeout: timeout, OnFailure: f.record}
			if !tc.time {
				o.Timeout = 10 * time.Second
			}
			c := health(t, o, "function InterpretHealth(obj)\n"+tc.src+"\nend")
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var err error
			took := callWithin(t, "the script", func() { _, err = c.InterpretHealth(app(nil, nil)) })
			runtime.ReadMemStats(&after)
			switch {
			case tc.time:
				if !errors.Is(err, ErrTimeBudget) {
					t.Fatalf("error %v; want the time budget's", err)
				}
				if took < timeout {
					t.Errorf("stopped after %v, before its budget of %v", took, timeout)
				}
			case tc.memory:
				if !errors.Is(err, ErrMemoryBudget) {
					t.Fatalf("error %v; want the memory budget's", err)
				}
			default:
				wantErr(t, err, tc.want)
			}
			if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 256<<20 {
				t.Errorf("the call allocated %d MiB", allocated>>20)
			}
			if len(f.list()) != 1 {
				t.Errorf("OnFailure got %d failures, want 1", len(f.list()))
			}
			// The customization still works (the failed state was dropped).
			c2 := health(t, Options{}, "function InterpretHealth(obj) return true end")
			if ok, err := c2.InterpretHealth(app(nil, nil)); !ok || err != nil {
				t.Errorf("afterwards: %v, %v", ok, err)
			}
			t.Logf("%v, %d KiB allocated: %v", took.Round(time.Millisecond), (after.TotalAlloc-before.TotalAlloc)>>10, err)
		})
	}
}

// TestBudgetDefaults: the default timeout (200ms) stops an infinite loop, not before, and a
// script doing real work well within the defaults passes.
func TestBudgetDefaults(t *testing.T) {
	c := health(t, Options{}, `function InterpretHealth(obj) while true do end end`)
	var err error
	took := callWithin(t, "an infinite loop", func() { _, err = c.InterpretHealth(app(nil, nil)) })
	if !errors.Is(err, ErrTimeBudget) || took < 200*time.Millisecond {
		t.Errorf("%v after %v; want the time budget's error, after the default 200ms", err, took)
	}
	t.Logf("stopped after %v", took.Round(time.Millisecond))

	c = health(t, Options{}, `function InterpretHealth(obj)
  local t = {}
  for i = 1, 5000 do
    t[#t + 1] = {index = i, name = "item-" .. i, tags = {"a", "b"}}
  end
  local names = {}
  for _, x in ipairs(t) do names[#names + 1] = x.name end
  table.sort(names)
  return #table.concat(names, ",") > 0 and string.format("%05d", #t) == "05000"
end`)
	if ok, err := c.InterpretHealth(app(nil, nil)); !ok || err != nil {
		t.Errorf("a script within the budgets: %v, %v", ok, err)
	}
}

// TestMemoryBudgetOption: the memory budget is the option's.
func TestMemoryBudgetOption(t *testing.T) {
	src := `function InterpretHealth(obj) local t = {} for i = 1, 10000 do t[i] = i end return true end`
	if ok, err := health(t, Options{}, src).InterpretHealth(app(nil, nil)); !ok || err != nil {
		t.Errorf("with the default budget: %v, %v", ok, err)
	}
	_, err := health(t, Options{MemoryBudget: 100 << 10}, src).InterpretHealth(app(nil, nil))
	if !errors.Is(err, ErrMemoryBudget) {
		t.Errorf("with a 100 KiB budget: %v; want the memory budget's error", err)
	}
	_, err = health(t, Options{MaxStringBytes: 10}, `function InterpretHealth(obj) return #("12345" .. "678901") end`).InterpretHealth(app(nil, nil))
	wantErr(t, err, "a string of 11 bytes, above the limit of 10")
}
