package overrides

import (
	"fmt"
	"strconv"
	"strings"
)

// pointer is a parsed JSON pointer (RFC 6901): its reference tokens, unescaped.
type pointer struct {
	raw    string
	tokens []string
}

// parsePointer parses a JSON pointer. The empty pointer refers to the whole document; any
// other must start with '/'. '~' may only be followed by '0' or '1'.
func parsePointer(s string) (pointer, error) {
	if s == "" {
		return pointer{raw: s}, nil
	}
	if s[0] != '/' {
		return pointer{}, fmt.Errorf("path %q: a JSON pointer must start with '/'", s)
	}
	parts := strings.Split(s[1:], "/")
	for i, p := range parts {
		for j := 0; j < len(p); j++ {
			if p[j] == '~' && (j+1 == len(p) || (p[j+1] != '0' && p[j+1] != '1')) {
				return pointer{}, fmt.Errorf("path %q: '~' must be followed by '0' or '1'", s)
			}
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return pointer{raw: s, tokens: parts}, nil
}

// String returns the pointer as written.
func (p pointer) String() string { return p.raw }

// get returns the value the pointer refers to in doc, a tree of map[string]any and []any.
func (p pointer) get(doc any) (any, error) {
	cur := doc
	for i, tok := range p.tokens {
		next, err := child(cur, tok)
		if err != nil {
			return nil, fmt.Errorf("path %s: %s: %w", p.raw, p.prefix(i), err)
		}
		cur = next
	}
	return cur, nil
}

// replace sets the existing value the pointer refers to. It never creates a location.
func (p pointer) replace(doc any, v any) error {
	if len(p.tokens) == 0 {
		return fmt.Errorf("path %q: cannot replace the whole object", p.raw)
	}
	last := len(p.tokens) - 1
	parent, err := pointer{raw: p.raw, tokens: p.tokens[:last]}.get(doc)
	if err != nil {
		return err
	}
	if _, err := child(parent, p.tokens[last]); err != nil {
		return fmt.Errorf("path %s: %s: %w", p.raw, p.prefix(last), err)
	}
	switch c := parent.(type) {
	case map[string]any:
		c[p.tokens[last]] = v
	case []any:
		i, _ := arrayIndex(p.tokens[last], len(c)) // child checked it
		c[i] = v
	}
	return nil
}

// prefix returns the pointer up to, not including, token i: where the lookup failed.
func (p pointer) prefix(i int) string {
	if i == 0 {
		return "document root"
	}
	var b strings.Builder
	for _, t := range p.tokens[:i] {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// child returns the member tok of an object, or the element tok of an array.
func child(cur any, tok string) (any, error) {
	switch c := cur.(type) {
	case map[string]any:
		v, ok := c[tok]
		if !ok {
			return nil, fmt.Errorf("has no field %q", tok)
		}
		return v, nil
	case []any:
		i, err := arrayIndex(tok, len(c))
		if err != nil {
			return nil, err
		}
		return c[i], nil
	default:
		return nil, fmt.Errorf("is %s, not an object or array", typeName(cur))
	}
}

// arrayIndex parses an RFC 6901 array index: decimal digits, no leading zero, in range.
func arrayIndex(tok string, n int) (int, error) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') || strings.TrimLeft(tok, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not an array index", tok)
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i >= n {
		return 0, fmt.Errorf("index %s is out of range (length %d)", tok, n)
	}
	return i, nil
}

// typeName names the JSON type of a value from an unstructured object.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int32, int64, float32, float64:
		return "a number"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
