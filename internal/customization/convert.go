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
// An empty table is ambiguous in Lua. It comes back as an empty list when it was made from
// a Go list ([] stays []), as an empty object when it was made from a Go map ({} stays {}),
// and otherwise, when the script made it:
//   - as the value of an object's field, it is left out, like a field marked omitempty
//     (status.conditions = {} when there are none does not become "conditions": {} where a
//     list is expected);
//   - as a list element or the whole result, it is an empty object.
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

// fromLua converts a Lua value to Go, following the rules above.
func (v *vm) fromLua(lv lua.LValue) (any, error) {
	c := fromLuaConverter{v: v, budget: v.lim.maxElements}
	x, _, err := c.convert(lv, "", 0, false)
	return x, err
}

type fromLuaConverter struct {
	v      *vm
	budget int
}

// convert returns the Go value of lv at path, and whether to leave it out (a script-made
// empty table as an object's field).
func (c *fromLuaConverter) convert(lv lua.LValue, path string, depth int, field bool) (any, bool, error) {
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
		return c.table(t, path, depth, field)
	}
	return nil, false, fmt.Errorf("%sa %s cannot be converted", at(path), lv.Type().String())
}

func (c *fromLuaConverter) table(t *lua.LTable, path string, depth int, field bool) (any, bool, error) {
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
		list := make([]any, nums)
		for i := range list {
			x, _, err := c.convert(t.RawGetInt(i+1), path+"["+strconv.Itoa(i+1)+"]", depth+1, false)
			if err != nil {
				return nil, false, err
			}
			list[i] = x
		}
		return list, false, nil
	case strs == 0 && t.Metatable != c.v.objMT && field:
		return nil, true, nil
	}
	obj := make(map[string]any, strs)
	keys := make([]string, 0, strs)
	t.ForEach(func(k, _ lua.LValue) { keys = append(keys, string(k.(lua.LString))) })
	sort.Strings(keys) // the same error for the same table every time
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		x, omit, err := c.convert(t.RawGetString(k), p, depth+1, true)
		if err != nil {
			return nil, false, err
		}
		if !omit {
			obj[k] = x
		}
	}
	return obj, false, nil
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
