package customization

import (
	"testing"
)

// TestPatterns: the sandbox's string.find, match, gmatch and gsub follow Lua 5.1.
func TestPatterns(t *testing.T) {
	for _, body := range []string{
		// find
		`local s, e = string.find("hello world", "wor") return s == 7 and e == 9`,
		`local s, e = string.find("hello", "l+") return s == 3 and e == 4`,
		`return string.find("hello", "xyz") == nil`,
		`local s, e = string.find("a.b", ".", 1, true) return s == 2 and e == 2`,
		`local s, e = string.find("a+b", "+", 1, true) return s == 2 and e == 2`,
		`local s, e = string.find("a.b", "%.") return s == 2 and e == 2`,
		`return string.find("abc", "b", -1) == nil and string.find("abc", "c", -1) == 3`,
		`return string.find("abc", "a", 10) == nil and string.find("abc", "", 10) == 4`,
		`local s, e, k, v = string.find("key=value", "(%w+)=(%w+)") return s == 1 and e == 9 and k == "key" and v == "value"`,
		`return string.find("abc", "^b") == nil and string.find("abc", "^a") == 1 and string.find("abc", "c$") == 3`,
		`return string.find("a$b", "$b") == 2`,
		`local s, e = string.find("", "") return s == 1 and e == 0`,
		// match
		`return string.match("  trim me  ", "^%s*(.-)%s*$") == "trim me"`,
		`local y, m, d = string.match("2024-01-15", "(%d+)-(%d+)-(%d+)") return y == "2024" and m == "01" and d == "15"`,
		`local a, b = string.match("hello", "()ll()") return a == 3 and b == 5`,
		`return string.match("THE (quick) fox", "%((%a+)%)") == "quick"`,
		`return string.match("f(a(b)c)d", "%b()") == "(a(b)c)"`,
		`return string.match("abcabc", "(abc)%1") == "abc" and string.match("abcabd", "(abc)%1") == nil`,
		`return string.match("x1 Y_", "%u") == "Y" and string.match("x1 Y_", "%l+") == "x" and string.match("x1 Y_", "[%a_]+", 3) == "Y_"`,
		`return string.match("xxabcabd", "[a-c]+") == "abcab" and string.match("a]b", "[]]") == "]" and string.match("a-b", "[a-]+") == "a-"`,
		`return string.match("a%b", "%%") == "%" and string.match("tab\there", "%c") == "\t" and string.match("F00d", "%x+") == "F00d"`,
		`return string.match("hello world", "%S+$") == "world" and string.match("a,b;c", "[^,;]+$") == "c"`,
		`return string.match("v1.2.3", "^v(%d+)%.(%d+)") == "1" and string.match("10Gi", "^(%d+)(%a*)$") == "10"`,
		`return string.match("aaa", "a-b") == nil and string.match("aaab", "a-b") == "aaab" and string.match("ab", "a?b") == "ab" and string.match("b", "a?b") == "b"`,
		`return string.match("key = value", "(%w+)%s*=%s*(%w+)") == "key"`,
		`return string.match("one", "(o)(n)(e)") == "o" and select("#", string.match("one", "(o)(n)(e)")) == 3`,
		`return string.match("hello", ".-") == "" and string.match("hello", ".*") == "hello"`,
		`return string.match("\0x", "%z") == "\0"`,
		// frontier and gsub
		`local s, n = string.gsub("THE (quick) fox", "%f[%a]%a+", "W") return s == "W (W) W" and n == 3`,
		`local s, n = string.gsub("hello world", "o", "0") return s == "hell0 w0rld" and n == 2`,
		`local s, n = string.gsub("hello", "", "-") return s == "-h-e-l-l-o-" and n == 6`,
		`local s, n = string.gsub("hello", "l*", "x") return s == "xhxexxox" and n == 5`,
		`return (string.gsub("abc", "%w", "%0%0")) == "aabbcc" and (string.gsub("abc", "b", "%%")) == "a%c"`,
		`return (string.gsub("hello world", "(%w+) (%w+)", "%2 %1")) == "world hello"`,
		`local s, n = string.gsub("$name is $age", "%$(%w+)", {name = "Bob", age = 42}) return s == "Bob is 42" and n == 2`,
		`local s, n = string.gsub("1 2 3", "%d", function(d) return d * 2 end) return s == "2 4 6" and n == 3`,
		`return (string.gsub("abc", "%w", function(c) if c == "b" then return false end return "x" end)) == "xbx"`,
		`return (string.gsub("abc", "%w", {a = "1"})) == "1bc"`,
		`local s, n = string.gsub("aaa", "a", "b", 2) return s == "bba" and n == 2`,
		`local s, n = string.gsub("hello", "^h", "H") return s == "Hello" and n == 1`,
		`local s, n = string.gsub("hello", "^l", "L") return s == "hello" and n == 0`,
		`return (string.gsub("a.b.c", "%.", "/")) == "a/b/c" and (string.gsub("abc", ".", {})) == "abc"`,
		`local ok, e = pcall(string.gsub, "abc", "%w", function() return {} end) return not ok and string.find(e, "invalid replacement value %(a table%)") ~= nil`,
		// gmatch
		`local t = {} for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do t[#t + 1] = k .. v end return table.concat(t, ",") == "a1,b2"`,
		`local n = 0 for w in ("abc"):gmatch("") do n = n + 1 end return n == 4`,
		`local t = {} for w in string.gmatch("one two  three", "%a+") do t[#t + 1] = w end return #t == 3 and t[3] == "three"`,
		`local t = {} for p in string.gmatch("abc", "()") do t[#t + 1] = p end return table.concat(t, ",") == "1,2,3,4"`,
		`local n = 0 for w in string.gmatch("^a^a", "^a") do n = n + 1 end return n == 2`,
		// errors
		`local ok, e = pcall(string.find, "a", "[a") return not ok and string.find(e, "missing ']'", 1, true) ~= nil`,
		`local ok, e = pcall(string.find, "a", "%") return not ok and string.find(e, "ends with '%'", 1, true) ~= nil`,
		`local ok, e = pcall(string.find, "a", "(a") return not ok and string.find(e, "unfinished capture", 1, true) ~= nil`,
		`local ok, e = pcall(string.match, "a", "a)") return not ok and string.find(e, "invalid pattern capture", 1, true) ~= nil`,
		`local ok, e = pcall(string.match, "a", "%1") return not ok and string.find(e, "invalid capture index", 1, true) ~= nil`,
		`local ok, e = pcall(string.find, "a", "%b") return not ok and string.find(e, "missing arguments to '%b'", 1, true) ~= nil`,
		`local ok, e = pcall(string.find, "a", "%f") return not ok and string.find(e, "missing '[' after '%f'", 1, true) ~= nil`,
		`local ok, e = pcall(string.gsub, "a", "a", true) return not ok`,
	} {
		check(t, body)
	}
}

// TestFormat: the sandbox's string.format follows Lua 5.1.
func TestFormat(t *testing.T) {
	for _, body := range []string{
		`return string.format("%5.2f|%-5d|%05d|%x|%X|%o|%e|%g|%g|%c|%%|%s|%10.3s|", 3.14159, 42, 42, 255, 255, 8, 12345.678, 0.0001, 1e14, 65, "hi", "abcdef") == " 3.14|42   |00042|ff|FF|10|1.234568e+04|0.0001|1e+14|A|%|hi|       abc|"`,
		`return string.format("%d %i %u", 3.7, -2, 5) == "3 -2 5"`,
		`return string.format("%+d % d %#x %#o", 5, 5, 255, 8) == "+5  5 0xff 010"`,
		`return string.format("%g %g %.3g", 0.1, 1/3, 2/3) == "0.1 0.333333 0.667"`,
		`return string.format("%s %s %s", 1, 2.5, true) == "1 2.5 true"`,
		`return string.format("%q", 'a\nb"c\\') == '"a\\\nb\\"c\\\\"'`,
		`return string.format("%q", "\r\0") == '"\\r\\000"'`,
		`return string.format("no verbs") == "no verbs" and string.format("%-3s|", "a") == "a  |" and string.format("%.0s|", "abc") == "|"`,
		`local ok, e = pcall(string.format, "%123d", 1) return not ok and string.find(e, "width or precision too long") ~= nil`,
		`local ok, e = pcall(string.format, "%.123f", 1) return not ok and string.find(e, "width or precision too long") ~= nil`,
		`local ok, e = pcall(string.format, "%y", 1) return not ok and string.find(e, "invalid option") ~= nil`,
		`local ok, e = pcall(string.format, "%d") return not ok and string.find(e, "no value") ~= nil`,
		`local ok, e = pcall(string.format, "%d", "x") return not ok`,
		`local ok, e = pcall(string.format, "%------d", 1) return not ok and string.find(e, "repeated flags") ~= nil`,
		`local ok, e = pcall(string.format, "%") return not ok`,
	} {
		check(t, body)
	}
}
