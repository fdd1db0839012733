// Package customization runs the Lua scripts of ResourceInterpreterCustomizations, safely.
//
// A Store holds the customizations in use (Apply, Remove) and is the interpreter's
// Customizations: Lookup gives, for a kind, the script of each operation, taken from the
// first customization by name that scripts it. Scripts are Karmada's: Lua 5.1 as gopher-lua
// runs it, one global function per operation (GetReplicas, ReviseReplica, Retain,
// ReflectStatus, AggregateStatus, InterpretHealth, GetDependencies, GetComponents), and
// Karmada's kube library through require("kube") (kube.go: accuratePodRequirements,
// getPodDependencies, resourceAdd, getResourceQuantity).
//
// # Compiling
//
// Apply parses every script, checks that it defines its function, rewrites it (rewrite.go)
// and compiles it once to a gopher-lua FunctionProto; errors name the operation and the
// line. Each call then runs the compiled chunk in a Lua state taken from the
// customization's pool, with globals of its own, then calls the function. The globals
// inherit the sandbox's functions and libraries (so pairs(_G) lists only what the script
// set, and assigning nil to a sandbox function does not hide it); nothing a call leaves in
// its globals is seen by the next. A call that changes a library table (string.upper = f)
// sees its change, and its state is then closed rather than reused.
//
// # Sandbox
//
// Scripts see the base functions assert, error, ipairs, next, pairs, pcall, print (which
// discards its arguments), select, tonumber, tostring, type, unpack, xpcall, _G, _VERSION
// and require (for "kube" only), the string, table and math libraries (without
// string.dump and math.randomseed), and os.time and os.date (oslib.go), which Karmada's
// sandbox allows too. Nothing else: no other os function, no io, debug, package, coroutine or
// channel library, no loading of code (load, loadstring, dofile, loadfile, module), no
// environments (getfenv, setfenv), no metatables (getmetatable, setmetatable, rawget,
// rawset, rawequal, newproxy) and no collectgarbage. The functions of the stock libraries
// that loop over or allocate data of the script's choosing are replaced by the sandbox's
// own, which account their work and allocations: string.rep, string.format (Lua's format
// with Lua's limits, not Go's), string.find, match, gmatch and gsub (a Lua pattern matcher
// that counts its steps; gopher-lua's recurses once per character and cannot be stopped),
// table.insert, table.concat and table.sort.
//
// # Budgets
//
// Every call has a budget (Options), and fails with an error when it runs over, even when
// the script catches the error with pcall: the overrun is sticky.
//
//   - Time (Timeout, default 200ms): the call's deadline is checked every 64 Lua
//     instructions (gopher-lua asks its context before each one) and as the sandbox's Go
//     functions work, once the call has done some work (1024 instructions or steps: a call
//     that a GC pause or CPU throttling kept waiting is not failed for time it did not
//     use). An infinite loop stops at the deadline; an instruction is short, but a
//     few can take up to about a millisecond on the largest data the memory budget allows
//     (# of a table with a million trailing nils, table.remove from the front of a
//     million-element list), so a call can overrun its deadline by a few tens of
//     milliseconds in the worst case.
//   - Memory (MemoryBudget, default 16 MiB): scripts are rewritten so that every string
//     concatenation, table constructor, assignment to a table field and function closure
//     goes through a Go function that charges an estimate of what it allocates (a table 256
//     bytes, a new list element 32, any other new key 128, a nil gopher-lua fills in 16, a
//     closure 256, a string its length plus 32); so do table.insert, table.sort, the
//     string functions, tostring and the kube helpers. The charge is cumulative: garbage
//     counts too. What is bounded is therefore everything a script can keep: tables, their
//     fields, strings and closures (a loop inserting into a table forever, a linked list
//     grown forever, t[1e7] = x, which gopher-lua would fill with ten million nils). The
//     accounting is an estimate, not a measurement of Go's heap: it bounds a call's memory
//     to a small multiple of the budget, not to the byte (the budget tests measure what the
//     worst scripts make Go allocate, garbage included: up to about three times the
//     budget, for a list grown forever).
//   - Strings (MaxStringBytes, default 1 MiB): no string longer than this can be made, by
//     .., string.rep, string.format, string.gsub or table.concat (string.rep("x", 1e10)
//     and a string doubled in a loop fail at once).
//   - Stacks: calls nest at most CallStackSize deep (default 200; deep recursion is a
//     "stack overflow" error), and Lua's value stack holds at most RegistryMaxSize values
//     (default 65536, 1 MiB; unpack of a huge list fails). Patterns nest at most 200 deep.
//   - Conversions (MaxDepth, default 100 levels; MaxElements, default 100000 values):
//     arguments converted from Go and results converted back stop there with an error; a
//     table that contains itself fails on depth.
//
// Not bounded, or bounded only by time: the Lua numbers gopher-lua boxes while computing
// (garbage at once unless stored, and storing them is charged); error values and messages;
// the arguments converted from Go (bounded by MaxElements, and not timed); the work of the
// stock functions kept as they are, which is linear in data the budgets already bound
// (string.byte, sub, upper, lower, reverse, table.remove, unpack, select, next, #); and
// the number of calls running at once: every concurrent call has its own state and its
// own budget, so memory grows with the callers' concurrency (each state costs about 100
// KiB and 90µs to make, and each customization keeps IdleStates of them). The time budget is wall-clock
// time: a call starved of CPU by other work is stopped at its deadline having done less.
//
// Lua differences, all for the budgets: no metatables for scripts; the Lua 5.0 arg table
// of vararg functions is not made (use ...); table.insert's position must be within
// 1..#t+1; in a table constructor, fields with computed or numeric keys are set after the
// others; string.rep takes Lua 5.2's separator; %s of string.format takes any value.
//
// A state that failed is closed, not reused. Panics of gopher-lua or of the sandbox are
// recovered into errors. Every run-time failure (error, wrong result, budget) is returned
// to the caller and reported to Options.OnFailure.
//
// # Values
//
// convert.go has the rules between Go and Lua. In short: maps and lists become tables and
// come back as objects and lists; whole numbers come back as int64, others as float64; NaN
// and infinities are errors; a field assigned nil is absent (never null); an empty table
// comes back as what it was made from, and a script-made empty table follows Karmada's
// rule: {} or [] where the call's objects hold an empty object or list at the same path
// (list indexes left out), and otherwise left out. AggregateStatus gets nil statusItems when
// no member has reported, as in Karmada.
package customization
