package customization

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	lua "github.com/yuin/gopher-lua"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// roundTrip converts x to Lua and back in a fresh state.
func roundTrip(t testing.TB, o Options, x any) (any, error) {
	t.Helper()
	v, err := newVM(o.limits())
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	v.begin()
	lv, err := v.toLua(x)
	if err != nil {
		return nil, err
	}
	return v.fromLua(lv)
}

func TestConvert(t *testing.T) {
	deep := func(n int) any {
		var x any = "leaf"
		for i := 0; i < n; i++ {
			x = map[string]any{"d": x}
		}
		return x
	}
	tests := []struct {
		name    string
		in      any
		want    any // nil: the same as in
		wantErr string
	}{
		{name: "an object of every type", in: map[string]any{
			"s": "x", "b": true, "i": int64(-3), "f": 2.5, "big": int64(1) << 60, "n": []any{int64(1), "two", false, map[string]any{"k": "v"}},
			"nested": map[string]any{"list": []any{[]any{int64(1)}, []any{}}},
		}},
		{name: "empty list and empty object keep their kind", in: map[string]any{"l": []any{}, "o": map[string]any{}, "in": []any{map[string]any{}, []any{}}}},
		{name: "null fields are left out", in: map[string]any{"a": nil, "b": int64(1)}, want: map[string]any{"b": int64(1)}},
		{name: "whole floats come back as integers", in: map[string]any{"f": 2.0, "g": -0.0, "h": 1e15}, want: map[string]any{"f": int64(2), "g": int64(0), "h": int64(1e15)}},
		{name: "integers beyond 2^53 lose precision", in: map[string]any{"i": int64(1)<<53 + 1}, want: map[string]any{"i": int64(1) << 53}},
		{name: "floats beyond int64 stay floats", in: map[string]any{"f": 1e300}},
		{name: "typed values", in: map[string]any{"ss": []string{"a"}, "ms": map[string]string{"k": "v"}, "i32": int32(7), "u": uint16(3), "f32": float32(0.5), "num": json.Number("12")},
			want: map[string]any{"ss": []any{"a"}, "ms": map[string]any{"k": "v"}, "i32": int64(7), "u": int64(3), "f32": 0.5, "num": int64(12)}},
		{name: "a list holding null", in: map[string]any{"l": []any{int64(1), nil}}, wantErr: "l: [1]: a list cannot hold null"},
		{name: "NaN", in: map[string]any{"x": math.NaN()}, wantErr: "x: NaN is not a JSON number"},
		{name: "infinity", in: []any{math.Inf(-1)}, wantErr: "[0]: -Inf is not a JSON number"},
		{name: "too deep", in: deep(150), wantErr: "nested more than 100 levels deep"},
		{name: "deep enough", in: deep(99)},
		{name: "too many elements", in: filled(100001), wantErr: "more than 100000 elements"},
		{name: "a channel", in: map[string]any{"c": make(chan int)}, wantErr: "unsupported type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := roundTrip(t, Options{}, tc.in)
			if tc.wantErr != "" {
				wantErr(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == nil {
				want = tc.in
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}

	if _, err := roundTrip(t, Options{MaxDepth: 5}, deep(6)); err == nil || !strings.Contains(err.Error(), "more than 5 levels") {
		t.Errorf("MaxDepth 5: %v", err)
	}
	if _, err := roundTrip(t, Options{MaxElements: 10}, filled(10)); err == nil {
		t.Error("MaxElements 10: a list of 10 (11 values) passed")
	}
}

func filled(n int) []any {
	l := make([]any, n)
	for i := range l {
		l[i] = int64(i)
	}
	return l
}

// normalized is what a JSON value should come back as from Lua, or ok false when it cannot
// go to Lua (a null in a list).
func normalized(x any) (any, bool) {
	switch t := x.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, v := range t {
			if v == nil {
				continue
			}
			n, ok := normalized(v)
			if !ok {
				return nil, false
			}
			out[k] = n
		}
		return out, true
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			if v == nil {
				return nil, false
			}
			n, ok := normalized(v)
			if !ok {
				return nil, false
			}
			out[i] = n
		}
		return out, true
	case int64:
		n, _ := number(lua.LNumber(t))
		return n, true
	case float64:
		n, _ := number(lua.LNumber(t))
		return n, true
	}
	return x, true
}

// FuzzConvert: any JSON object converts to Lua and back to what JSON would have, or fails
// with an error, never a panic.
func FuzzConvert(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a":[]}`, `{"a":{}}`, `{"a":[1,2.5,"x",true,null]}`, `{"a":null}`,
		`{"n":9007199254740993,"f":1e308,"g":-0.0,"h":1.0}`, `{"a":{"b":{"c":[[[]]]}}}`, `[1,2]`, `"s"`,
		`{"k\u0000":"\u00ff","":""}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var x any
		if err := utiljson.Unmarshal([]byte(text), &x); err != nil {
			return
		}
		obj := map[string]any{"v": x}
		got, err := roundTrip(t, Options{}, obj)
		want, ok := normalized(obj)
		if !ok {
			if err == nil {
				t.Fatalf("%s: converted a list holding null", text)
			}
			return
		}
		if err != nil {
			if strings.Contains(err.Error(), "levels deep") || strings.Contains(err.Error(), "elements") {
				return
			}
			t.Fatalf("%s: %v", text, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: round trip (-want +got):\n%s", text, diff)
		}
	})
}
