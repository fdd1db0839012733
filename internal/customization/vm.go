package customization

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// ErrTimeBudget and ErrMemoryBudget are wrapped by the errors of scripts that ran over their
// budget (errors.Is).
var (
	ErrTimeBudget   = errors.New("the script ran over its time budget")
	ErrMemoryBudget = errors.New("the script ran over its memory budget")
)

// closed is returned by budget.Done once the call is over its time.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// checkEvery is how many instructions (or units of work in Go helpers) pass between two
// looks at the clock.
const checkEvery = 64

// minWork is how much work (instructions, units of work in Go helpers) a call must have done
// to be stopped for time: the budget is wall-clock time, and a call that a GC pause or CPU
// throttling kept waiting past its deadline is not failed for time it did not use. A loop
// does this much in well under a millisecond.
const minWork = 1024

// budget is what one call may spend. It is the context of the Lua state: gopher-lua asks
// Done before every instruction, so Done counts instructions and looks at the clock every
// checkEvery of them. Go helpers that loop report their work with work, and what they
// allocate with charge. Both limits are sticky: once over, every later instruction or
// allocation fails again, so a script cannot catch the error with pcall and carry on, and
// the call fails even if the script returns normally.
type budget struct {
	L         *lua.LState
	timeout   time.Duration
	deadline  time.Time
	ticks     uint64
	nextCheck uint64
	used      int64
	limit     int64
	timedOut  bool
	overMem   bool
	memWhy    string
}

func (b *budget) reset(timeout time.Duration, limit int64) {
	b.timeout, b.limit = timeout, limit
	b.deadline = time.Now().Add(timeout)
	b.ticks, b.nextCheck, b.used = 0, checkEvery, 0
	b.timedOut, b.overMem, b.memWhy = false, false, ""
}

// Deadline, Done, Err and Value make budget a context.Context.
func (b *budget) Deadline() (time.Time, bool) { return b.deadline, true }

func (b *budget) Done() <-chan struct{} {
	if b.timedOut {
		return closed
	}
	b.ticks++
	if b.ticks >= b.nextCheck && b.late() {
		return closed
	}
	return nil
}

func (b *budget) Err() error {
	if b.timedOut {
		return fmt.Errorf("%w of %v", ErrTimeBudget, b.timeout)
	}
	return nil
}

func (b *budget) Value(any) any { return nil }

// late looks at the clock.
func (b *budget) late() bool {
	b.nextCheck = b.ticks + checkEvery
	if b.ticks < minWork || time.Now().Before(b.deadline) {
		return false
	}
	b.timedOut = true
	return true
}

// work accounts n units of work done by a Go helper (a pattern step, a comparison, a
// copied element) and raises a Lua error when the call is over its time.
func (b *budget) work(n int) {
	if n > 0 {
		b.ticks += uint64(n)
	}
	if b.timedOut || (b.ticks >= b.nextCheck && b.late()) {
		b.L.RaiseError("%v", b.Err())
	}
}

// charge accounts n bytes allocated on the script's behalf and raises a Lua error when the
// call is over its memory budget.
func (b *budget) charge(n int64) {
	if n < 0 || b.used+n > b.limit || b.overMem {
		b.over(fmt.Sprintf("more than %d bytes allocated", b.limit))
	}
	b.used += n
}

// over marks the call as over its memory budget and raises a Lua error saying why.
func (b *budget) over(why string) {
	if !b.overMem {
		b.overMem, b.memWhy = true, why
	}
	b.L.RaiseError("%v (%s)", ErrMemoryBudget, b.memWhy)
}

// err is the budget's verdict after a call: nil when it stayed within both limits.
func (b *budget) err() error {
	switch {
	case b.timedOut:
		return b.Err()
	case b.overMem:
		return fmt.Errorf("%w (%s)", ErrMemoryBudget, b.memWhy)
	}
	return nil
}

// registryGrowStep is how many slots Lua's value stack grows by at a time. gopher-lua's
// default, 32, copies the whole stack every 32 pushes: filling 65536 slots would copy a GiB.
const registryGrowStep = 8192

// entry is a named value of the sandbox.
type entry struct {
	name  string
	value lua.LValue
}

// library is a table of the sandbox (string, table, math): its entries, and the table
// scripts see.
type library struct {
	name    string
	entries []entry
	table   *lua.LTable
}

// vm is a Lua state with Flotilla's sandbox, used by one call at a time.
type vm struct {
	L          *lua.LState
	b          budget
	lim        *limits
	listMT     *lua.LTable // marks the tables made from Go lists
	objMT      *lua.LTable // marks the tables made from Go maps
	base       []entry
	libs       []library
	envMT      *lua.LTable // the metatable of every call's globals: __index, the sandbox
	kube       []entry
	helpers    []lua.LValue   // the hidden functions rewritten scripts call; see rewrite.go
	handler    *lua.LFunction // the error handler of protected calls: see pcall
	trampoline *lua.LFunction // see protected
	nret       int            // results the trampoline's call returns
	innerErr   error          // the error the trampoline's call returned
	broken     bool           // a call failed in a way that may leave the state unusable
}

// newVM makes a Lua state with only the sandbox's functions reachable.
func newVM(lim *limits) (v *vm, err error) {
	// Not MinimizeStackMemory: gopher-lua's growing call stack dereferences a freed
	// segment when errors are caught at its full depth (a nil-pointer panic per error, and a
	// call running for twice its deadline).
	L := lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    lim.callStackSize,
		RegistrySize:     lim.registrySize,
		RegistryMaxSize:  lim.registryMaxSize,
		RegistryGrowStep: registryGrowStep,
	})
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("making a Lua state: %v", r)
		}
		if err != nil {
			L.Close()
		}
	}()
	for _, open := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		if err := L.CallByParam(lua.P{Fn: L.NewFunction(open.fn), Protect: true}, lua.LString(open.name)); err != nil {
			return nil, err
		}
	}
	v = &vm{L: L, lim: lim, listMT: L.NewTable(), objMT: L.NewTable()}
	v.b.L = L
	stock := L.G.Global
	v.buildSandbox(stock)

	// Nothing of the stock libraries stays reachable: the globals the state was opened with
	// are dropped (every call gets its own, see env), and strings index the sandbox's own
	// string library.
	sandbox := L.CreateTable(0, len(v.base)+len(v.libs))
	for _, e := range v.base {
		sandbox.RawSetString(e.name, e.value)
	}
	for i := range v.libs {
		l := &v.libs[i]
		l.table = L.CreateTable(0, len(l.entries))
		for _, e := range l.entries {
			l.table.RawSetString(e.name, e.value)
		}
		sandbox.RawSetString(l.name, l.table)
	}
	v.envMT = L.CreateTable(0, 1)
	v.envMT.RawSetString("__index", sandbox)
	empty := L.NewTable()
	L.G.Global, L.Env = empty, empty
	L.G.Registry.RawSetString("_LOADED", L.NewTable())
	stringMT := L.NewTable()
	stringMT.RawSetString("__index", v.libs[0].table)
	L.SetMetatable(lua.LString(""), stringMT)
	L.SetContext(&v.b)
	return v, nil
}

func (v *vm) close() { v.L.Close() }

// env makes the globals of one call: a table of its own, which inherits the sandbox's
// functions and libraries (its metatable's __index, which scripts cannot reach). So
// nothing a call does to its globals outlives it; what it does to a library table is seen
// by intact, and the state is then not reused.
func (v *vm) env() *lua.LTable {
	env := v.L.CreateTable(0, 2)
	env.Metatable = v.envMT
	env.RawSetString("_G", env)
	return env
}

// intact reports whether the library tables are as the sandbox made them.
func (v *vm) intact() bool {
	for _, l := range v.libs {
		n := 0
		l.table.ForEach(func(lua.LValue, lua.LValue) { n++ })
		if n != len(l.entries) {
			return false
		}
		for _, e := range l.entries {
			if l.table.RawGetString(e.name) != e.value {
				return false
			}
		}
	}
	return true
}

// call runs one script: its chunk, in fresh globals, then the function it defines, with
// args (made by the caller in this state after begin). It returns nret results.
func (v *vm) call(s *script, args []lua.LValue, nret int) ([]lua.LValue, error) {
	chunk := v.L.NewFunctionFromProto(s.proto)
	env := v.env()
	chunk.Env = env
	if _, err := v.protected(chunk, 0, v.helpers...); err != nil {
		return nil, err
	}
	fn, ok := env.RawGetString(s.fn).(*lua.LFunction)
	if !ok {
		return nil, fmt.Errorf("the script does not define function %s", s.fn)
	}
	rets, err := v.protected(fn, nret, args...)
	if err == nil && !v.intact() {
		v.broken = true // a script changed a library: this call saw it, no other will
	}
	return rets, err
}

// protected calls fn in two layers of protection. The inner call has an error handler that
// returns the error as it is, because without one gopher-lua writes a stack traceback with
// a line for every tail call the failed frame made, which a script can make millions of.
// The outer call has no handler, because gopher-lua's handler path cannot itself handle an
// error when the value stack is full (it panics out of the protected call).
func (v *vm) protected(fn *lua.LFunction, nret int, args ...lua.LValue) ([]lua.LValue, error) {
	L := v.L
	v.nret, v.innerErr = nret, nil
	err := L.CallByParam(lua.P{Fn: v.trampoline, NRet: nret, Protect: true}, append([]lua.LValue{fn}, args...)...)
	if err == nil {
		err = v.innerErr
	}
	if err != nil {
		return nil, v.failed(err)
	}
	if err := v.b.err(); err != nil {
		v.broken = true
		return nil, err
	}
	rets := make([]lua.LValue, nret)
	for i := range rets {
		rets[i] = L.Get(i - nret)
	}
	L.SetTop(0)
	return rets, nil
}

// trampoline is the outer layer of protected: it calls the function below its arguments
// with the error handler, and keeps the error rather than raising it again.
func (v *vm) trampolineFn(L *lua.LState) int {
	if err := L.PCall(L.GetTop()-1, v.nret, v.handler); err != nil {
		v.innerErr = err
		return 0
	}
	return v.nret
}

// begin starts the budget of a call.
func (v *vm) begin() {
	v.L.SetTop(0)
	v.b.reset(v.lim.timeout, v.lim.memory)
}

// failed turns the error of a protected Lua call into the call's error. A budget overrun
// wins over whatever the script made of it; the state is not reused after a failure.
func (v *vm) failed(err error) error {
	v.broken = true
	if berr := v.b.err(); berr != nil {
		return berr
	}
	msg := err.Error()
	var aerr *lua.ApiError
	if errors.As(err, &aerr) && aerr.Object != nil {
		msg = aerr.Object.String()
	}
	if strings.Contains(msg, "stack overflow") {
		return fmt.Errorf("stack overflow: calls nested more than %d deep", v.lim.callStackSize)
	}
	return errors.New(luaMessage(msg))
}

// pcall is Lua's pcall, but with an error handler that returns the error as it is:
// gopher-lua's own pcall writes a stack traceback for every error it catches, with a line
// for every tail call the failed frame made, which a script could make millions of.
func (v *vm) pcall(L *lua.LState) int {
	L.CheckAny(1)
	v.b.work(checkEvery) // a caught error can be costly (a Go panic through nested calls): look at the clock
	if err := L.PCall(L.GetTop()-1, lua.MultRet, v.handler); err != nil {
		L.Push(lua.LFalse)
		var aerr *lua.ApiError
		if errors.As(err, &aerr) {
			L.Push(aerr.Object)
		} else {
			L.Push(lua.LString(err.Error()))
		}
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// chunkName names every compiled script, so that Lua's positions ("script:12:") can be
// told from the rest of a message and rewritten as "line 12:".
const chunkName = "script"

var positionRE = regexp.MustCompile(chunkName + `:(\d+):`)

func luaMessage(msg string) string {
	return positionRE.ReplaceAllString(msg, "line $1:")
}
