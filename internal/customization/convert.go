package customization

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// Go to Lua and back.
//
// Go values are those of unstructured objects (decoded JSON): maps with string keys, lists,
// strings, booleans, nil, int64 and float64 (other integer and float types, and anything
// else encoding/json can encode, are accepted too). Maps become tables marked as objects,
// lists tables marked as lists (the marks are metatables the sandbox cannot see or change).
// Numbers become Lua numbers, which are float64: integers beyond ±2^53 lose precision. NaN
// and ±Inf are errors either way.
//
// Lua values come back as: nil; bool; a number that is a whole number within int64 as
// int64, any other as float64; a string; a table as a list when its keys are exactly 1..n,
// as an object when its keys are all strings. A table mixing both kinds of keys, a list
// with holes, other key types (booleans, fractions, tables) and values that are functions
// are errors naming the path.
//
// A field assigned nil is not in the table, so it is absent from the result, never null.
//
// An empty table is ambiguous in Lua. Karmada's engine encodes every table to JSON, an empty
// one as [], then looks each empty value of the result up by its path (fields joined by ".",
// list indexes left out) in the call's objects, its references: where they hold an empty
// object it becomes {}, where an empty list it stays [], and where neither it is removed.
// Flotilla does the same, except that it knows the tables made from Go values:
//   - a table made from a Go list or map that is empty now comes back as what it was made
//     from ([] stays [], {} stays {}, also when the script moved or emptied it);
//   - a script-made empty table within the result follows Karmada's rule: {} where the
//     references hold an empty object at its path, [] where they hold an empty list
//     (an empty object winning over an empty list), and otherwise it is left out, as an
//     object's field and as a list element alike (status.conditions = {} when there are
//     none does not become "conditions": {} where a list is expected);
//   - the whole result, when empty, is an empty object (or, where a list is expected, an
//     empty list).
//
// A table left out is left out after its parent was made: {y = {}} is an empty object when
// nothing is at y's path, as in Karmada. The references are those Karmada passes: Retain's
// desired and observed objects, ReviseReplica's object; none for the other operations.
//
// Both directions stop at limits.maxDepth levels of nesting and limits.maxElements values.

// toLua converts a Go value to Lua, marking tables; it fails on NaN, infinities, too deep or
// too large values and types JSON cannot encode.
func (v *vm) toLua(x any) (lua.LValue, error) {
	c := toLuaConverter{v: v, budget: v.lim.maxElements}
	return c.convert(x, 0)
}

type toLuaConverter struct {
	v      *vm
	budget int
}

func (c *toLuaConverter) convert(x any, depth int) (lua.LValue, error) {
	c.budget--
	if c.budget < 0 {
		return nil, fmt.Errorf("the value has more than %d elements", c.v.lim.maxElements)
	}
	if depth > c.v.lim.maxDepth {
		return nil, fmt.Errorf("the value is nested more than %d levels deep", c.v.lim.maxDepth)
	}
	L := c.v.L
	switch t := x.(type) {
	case nil:
		return lua.LNil, nil
	case string:
		return lua.LString(t), nil
	case bool:
		return lua.LBool(t), nil
	case int64:
		return lua.LNumber(t), nil
	case int:
		return lua.LNumber(t), nil
	case int32:
		return lua.LNumber(t), nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", t)
		}
		return lua.LNumber(t), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return nil, fmt.Errorf("number %q: %w", t, err)
		}
		return c.convert(f, depth)
	case map[string]any:
		tb := L.CreateTable(0, len(t))
		tb.Metatable = c.v.objMT
		for k, e := range t {
			lv, err := c.convert(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if lv != lua.LNil {
				tb.RawSetString(k, lv)
			}
		}
		return tb, nil
	case []any:
		tb := L.CreateTable(len(t), 0)
		tb.Metatable = c.v.listMT
		for i, e := range t {
			lv, err := c.convert(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			if lv == lua.LNil {
				return nil, fmt.Errorf("[%d]: a list cannot hold null in Lua", i)
			}
			tb.RawSetInt(i+1, lv)
		}
		return tb, nil
	}
	// Anything else (typed slices and maps, other numbers, structs): as JSON would see it.
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return lua.LNumber(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return lua.LNumber(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return c.convert(rv.Float(), depth)
	}
	raw, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, err
	}
	c.budget++
	return c.convert(generic, depth)
}

// fromLua converts a Lua value to Go, following the rules above. refs are the call's
// objects, whose empty lists and objects tell what a script-made empty table is.
func (v *vm) fromLua(lv lua.LValue, refs ...any) (any, error) {
	// Finding the references' empty values is not timed, as converting them to Lua was not:
	// both are bounded by MaxElements per object.
	c := fromLuaConverter{v: v, budget: v.lim.maxElements, empty: emptyShapesOf(v.lim.maxElements, refs...)}
	x, _, err := c.convert(lv, "", "", 0)
	return x, err
}

type fromLuaConverter struct {
	v      *vm
	budget int
	empty  emptyShapes
}

// convert returns the Go value of lv at path (for errors: "spec.list[2].name") and shape
// (for Karmada's rule: "spec.list.name", list indexes left out), and whether to leave it
// out (a script-made empty table that Karmada's rule drops).
func (c *fromLuaConverter) convert(lv lua.LValue, path, shape string, depth int) (any, bool, error) {
	c.budget--
	if c.budget < 0 {
		return nil, false, fmt.Errorf("%sthe result has more than %d elements", at(path), c.v.lim.maxElements)
	}
	if depth > c.v.lim.maxDepth {
		return nil, false, fmt.Errorf("%sthe result is nested more than %d levels deep", at(path), c.v.lim.maxDepth)
	}
	switch t := lv.(type) {
	case *lua.LNilType:
		return nil, false, nil
	case lua.LBool:
		return bool(t), false, nil
	case lua.LString:
		return string(t), false, nil
	case lua.LNumber:
		n, err := number(t)
		if err != nil {
			return nil, false, fmt.Errorf("%s%w", at(path), err)
		}
		return n, false, nil
	case *lua.LTable:
		return c.table(t, path, shape, depth)
	}
	return nil, false, fmt.Errorf("%sa %s cannot be converted", at(path), lv.Type().String())
}

func (c *fromLuaConverter) table(t *lua.LTable, path, shape string, depth int) (any, bool, error) {
	var nums, strs, maxIndex int
	var bad lua.LValue
	t.ForEach(func(k, _ lua.LValue) {
		switch key := k.(type) {
		case lua.LString:
			strs++
		case lua.LNumber:
			if key >= 1 && key == lua.LNumber(int64(key)) && key <= math.MaxInt32 {
				nums++
				maxIndex = max(maxIndex, int(key))
				return
			}
			bad = k
		default:
			bad = k
		}
	})
	switch {
	case bad != nil:
		return nil, false, fmt.Errorf("%sa table key %s (%s) cannot be converted: keys are strings or list indexes 1..n", at(path), bad.String(), bad.Type().String())
	case nums > 0 && strs > 0:
		return nil, false, fmt.Errorf("%sthe table mixes list items and object fields", at(path))
	case nums > 0 && maxIndex != nums:
		return nil, false, fmt.Errorf("%sthe list has a hole (index %d of %d is nil)", at(path), firstHole(t, maxIndex), maxIndex)
	case nums > 0 || (strs == 0 && t.Metatable == c.v.listMT):
		list := make([]any, 0, nums)
		for i := 1; i <= nums; i++ {
			x, omit, err := c.convert(t.RawGetInt(i), path+"["+strconv.Itoa(i)+"]", shape, depth+1)
			if err != nil {
				return nil, false, err
			}
			if !omit {
				list = append(list, x)
			}
		}
		return list, false, nil
	case strs == 0 && t.Metatable != c.v.objMT && depth > 0:
		// A script-made empty table within the result: Karmada's rule.
		switch {
		case c.empty.objects[shape]:
			return map[string]any{}, false, nil
		case c.empty.lists[shape]:
			return []any{}, false, nil
		}
		return nil, true, nil
	}
	obj := make(map[string]any, strs)
	keys := make([]string, 0, strs)
	t.ForEach(func(k, _ lua.LValue) { keys = append(keys, string(k.(lua.LString))) })
	sort.Strings(keys) // the same error for the same table every time
	for _, k := range keys {
		p, sh := k, k
		if path != "" {
			p = path + "." + k
		}
		if shape != "" {
			sh = shape + "." + k
		}
		x, omit, err := c.convert(t.RawGetString(k), p, sh, depth+1)
		if err != nil {
			return nil, false, err
		}
		if !omit {
			obj[k] = x
		}
	}
	return obj, false, nil
}

// emptyShapes are the shapes (fields joined by ".", list indexes left out) at which the
// call's objects hold an empty object or an empty list.
type emptyShapes struct {
	objects, lists map[string]bool
}

// emptyShapesOf finds the empty objects and lists of refs, visiting at most limit values
// of each (the arguments were converted to Lua within the same limit).
func emptyShapesOf(limit int, refs ...any) emptyShapes {
	e := emptyShapes{}
	var walk func(x any, shape string, budget *int)
	walk = func(x any, shape string, budget *int) {
		if *budget <= 0 {
			return
		}
		*budget--
		switch t := x.(type) {
		case map[string]any:
			if len(t) == 0 && shape != "" {
				e.objects = setShape(e.objects, shape)
				return
			}
			for k, v := range t {
				sh := k
				if shape != "" {
					sh = shape + "." + k
				}
				walk(v, sh, budget)
			}
		case []any:
			if len(t) == 0 && shape != "" {
				e.lists = setShape(e.lists, shape)
				return
			}
			for _, v := range t {
				walk(v, shape, budget)
			}
		}
	}
	for _, r := range refs {
		budget := limit
		walk(r, "", &budget)
	}
	return e
}

func setShape(m map[string]bool, shape string) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	m[shape] = true
	return m
}

func firstHole(t *lua.LTable, n int) int {
	for i := 1; i <= n; i++ {
		if t.RawGetInt(i) == lua.LNil {
			return i
		}
	}
	return n
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

// number converts a Lua number: whole numbers within int64 to int64, others to float64.
func number(n lua.LNumber) (any, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return nil, fmt.Errorf("%v is not a JSON number", f)
	case f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63:
		return int64(f), nil
	}
	return f, nil
}
