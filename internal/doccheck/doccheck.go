// Package doccheck keeps the markdown documentation from rotting. It parses a document into
// its headings (with the anchors GitHub gives them), links, inline code spans and fenced
// blocks, and checks a set of documents: every relative link and #anchor resolves, every
// repository path named in code exists, every shell block of the getting-started page and the
// guides says whether the docs test runs it, and every block included from a file
// (<!-- include: PATH --> before it) is a current copy of that file. It is pure: it reads files
// through an fs.FS, and hack/doccheck runs it over the repository (make verify).
package doccheck

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Block is a fenced code block.
type Block struct {
	// Lang is the first word of the info string ("sh", "yaml"), Words the others ("test").
	Lang  string
	Words []string
	// Text is the block's content, each line ending in a newline, without the fence's
	// indentation.
	Text string
	// Line is the line of the opening fence, from 1.
	Line int
	// Include is the repository path of an <!-- include: PATH --> comment right before it.
	Include string
}

// Has reports whether the block's info string has word after its language.
func (b Block) Has(word string) bool { return slices.Contains(b.Words, word) }

// Link is a link's target, as written.
type Link struct {
	Target string
	Line   int
}

// Span is an inline code span's text.
type Span struct {
	Text string
	Line int
}

// Doc is a parsed markdown document.
type Doc struct {
	Path    string
	Anchors map[string]bool
	Links   []Link
	Spans   []Span
	Blocks  []Block
}

var (
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$`)
	includeRE = regexp.MustCompile(`^\s*<!--\s*include:\s*(\S+)\s*-->\s*$`)
	// [text](target) or [text](target "title"), images too; the text may hold brackets one deep.
	linkRE = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// [label]: target
	refLinkRE = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	anchorRE  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// fence reports whether line opens or closes a fence, with its indentation, marker and info.
func fence(line string) (indent int, marker, info string, ok bool) {
	trimmed := strings.TrimLeft(line, " ")
	indent = len(line) - len(trimmed)
	for _, m := range []string{"```", "~~~"} {
		if strings.HasPrefix(trimmed, m) {
			n := len(trimmed) - len(strings.TrimLeft(trimmed, m[:1]))
			return indent, trimmed[:n], strings.TrimSpace(trimmed[n:]), true
		}
	}
	return 0, "", "", false
}

// Parse reads a markdown document. It never fails: what it cannot read as markdown is text.
func Parse(name string, src []byte) *Doc {
	d := &Doc{Path: name, Anchors: map[string]bool{}}
	seen := map[string]int{}
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	include := ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if indent, marker, info, ok := fence(line); ok {
			b := Block{Line: i + 1, Include: include}
			include = ""
			if f := strings.Fields(info); len(f) > 0 {
				b.Lang, b.Words = f[0], f[1:]
			}
			var text strings.Builder
			for i++; i < len(lines); i++ {
				if _, m, rest, ok := fence(lines[i]); ok && strings.HasPrefix(m, marker) && rest == "" {
					break
				}
				l := lines[i]
				if strings.HasPrefix(l, strings.Repeat(" ", indent)) {
					l = l[indent:]
				} else {
					l = strings.TrimLeft(l, " ")
				}
				text.WriteString(l + "\n")
			}
			b.Text = text.String()
			d.Blocks = append(d.Blocks, b)
			continue
		}
		if m := includeRE.FindStringSubmatch(line); m != nil {
			include = m[1]
			continue
		}
		if strings.TrimSpace(line) != "" {
			include = ""
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			a := Anchor(m[2])
			if n := seen[a]; n > 0 {
				d.Anchors[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				d.Anchors[a] = true
			}
			seen[a]++
		}
		for _, m := range anchorRE.FindAllStringSubmatch(line, -1) {
			d.Anchors[m[1]] = true
		}
		text := d.spans(line, i+1)
		if m := refLinkRE.FindStringSubmatch(text); m != nil {
			d.Links = append(d.Links, Link{Target: m[1], Line: i + 1})
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			d.Links = append(d.Links, Link{Target: m[1], Line: i + 1})
		}
	}
	return d
}

// spans records the line's inline code spans and returns the line with them blanked out, so
// that a link written inside code is not taken for a link.
func (d *Doc) spans(line string, n int) string {
	var out strings.Builder
	for {
		start := strings.IndexByte(line, '`')
		if start < 0 {
			out.WriteString(line)
			return out.String()
		}
		ticks := len(line[start:]) - len(strings.TrimLeft(line[start:], "`"))
		end := strings.Index(line[start+ticks:], strings.Repeat("`", ticks))
		if end < 0 {
			out.WriteString(line)
			return out.String()
		}
		code := line[start+ticks : start+ticks+end]
		d.Spans = append(d.Spans, Span{Text: strings.TrimSpace(code), Line: n})
		out.WriteString(line[:start])
		out.WriteString(strings.Repeat(" ", 2*ticks+end))
		line = line[start+2*ticks+end:]
	}
}

// Anchor returns the anchor GitHub gives a heading: lower case, markup and punctuation
// dropped, spaces made hyphens. Duplicates get -1, -2, ... (Parse adds those).
func Anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Problem is something wrong in a document.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// RunMarkers are the words one of which every shell block of a page with runnable blocks must
// carry: test (the docs test runs it), demo (only on the demo's fleet), manual (the reader runs
// it elsewhere, on clusters of their own).
var RunMarkers = []string{"test", "demo", "manual"}

// shellLangs are the info strings of shell blocks.
var shellLangs = []string{"sh", "bash", "shell", "console"}

// IsShell reports whether b is a shell block.
func (b Block) IsShell() bool { return slices.Contains(shellLangs, b.Lang) }

// HasRunnableBlocks reports whether the document at name is one whose shell blocks must say
// whether they run: the getting-started page and the guides.
func HasRunnableBlocks(name string) bool {
	return name == "docs/getting-started.md" || strings.HasPrefix(name, "docs/guides/")
}

// repoPathRE matches a path into the repository's own top-level directories.
var repoPathRE = regexp.MustCompile(`^(?:api|cmd|config|controllers|docs|hack|internal|test|charts|bundle)/[A-Za-z0-9_./-]*$`)

// RepoPaths returns the repository paths named in text: words that start with one of the
// repository's top-level directories and hold no placeholder (<name>, {a,b}, *, $VAR).
func RepoPaths(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("\"'`(),;=[]|", r)
	}) {
		if strings.Contains(w, "...") || strings.Contains(w, "//") {
			continue
		}
		w = strings.TrimRight(w, ".:")
		if i := strings.LastIndexByte(w, '/'); i >= 0 {
			// A Go identifier after a package path (internal/shard.Assignment) names the package.
			if j := strings.IndexByte(w[i:], '.'); j > 0 && i+j+1 < len(w) && unicode.IsUpper(rune(w[i+j+1])) {
				w = w[:i+j]
			}
		}
		if repoPathRE.MatchString(w) {
			out = append(out, w)
		}
	}
	return out
}

// Check checks the documents named by files (slash paths under fsys's root, the repository).
func Check(fsys fs.FS, files []string) []Problem {
	c := &checker{fsys: fsys, docs: map[string]*Doc{}}
	for _, f := range files {
		c.check(f)
	}
	return c.problems
}

type checker struct {
	fsys     fs.FS
	docs     map[string]*Doc
	problems []Problem
}

func (c *checker) doc(name string) (*Doc, error) {
	if d, ok := c.docs[name]; ok {
		return d, nil
	}
	src, err := fs.ReadFile(c.fsys, name)
	if err != nil {
		return nil, err
	}
	d := Parse(name, src)
	c.docs[name] = d
	return d, nil
}

func (c *checker) add(file string, line int, format string, args ...any) {
	c.problems = append(c.problems, Problem{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) exists(p string) bool {
	_, err := fs.Stat(c.fsys, p)
	return err == nil
}

func (c *checker) check(name string) {
	d, err := c.doc(name)
	if err != nil {
		c.add(name, 0, "cannot read: %v", err)
		return
	}
	for _, l := range d.Links {
		c.checkLink(d, l)
	}
	for _, s := range d.Spans {
		for _, p := range RepoPaths(s.Text) {
			if !c.exists(strings.TrimSuffix(p, "/")) {
				c.add(name, s.Line, "%s names %s, which is not in the repository", "`"+s.Text+"`", p)
			}
		}
	}
	for _, b := range d.Blocks {
		for _, p := range RepoPaths(b.Text) {
			if !c.exists(strings.TrimSuffix(p, "/")) {
				c.add(name, b.Line, "the %s block names %s, which is not in the repository", b.Lang, p)
			}
		}
		if HasRunnableBlocks(name) && b.IsShell() && !slices.ContainsFunc(b.Words, func(w string) bool { return slices.Contains(RunMarkers, w) }) {
			c.add(name, b.Line, "shell block without a run marker: write ```%s test (the docs test runs it), ```%s demo or ```%s manual", b.Lang, b.Lang, b.Lang)
		}
		if b.Include != "" {
			want, err := fs.ReadFile(c.fsys, b.Include)
			switch {
			case err != nil:
				c.add(name, b.Line, "included file %s: %v", b.Include, err)
			case withNewline(string(want)) != b.Text:
				c.add(name, b.Line, "the block is not a current copy of %s: run make docs", b.Include)
			}
		}
	}
}

func (c *checker) checkLink(d *Doc, l Link) {
	t := l.Target
	if t == "" || strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
		return
	}
	file, anchor, _ := strings.Cut(t, "#")
	target := d.Path
	if file != "" {
		if strings.HasPrefix(file, "/") {
			c.add(d.Path, l.Line, "link %s: use a path relative to this file", t)
			return
		}
		target = path.Join(path.Dir(d.Path), file)
		if target == ".." || strings.HasPrefix(target, "../") {
			c.add(d.Path, l.Line, "link %s leaves the repository", t)
			return
		}
		if !c.exists(target) {
			c.add(d.Path, l.Line, "link %s: %s does not exist", t, target)
			return
		}
	}
	if anchor == "" || !strings.HasSuffix(target, ".md") {
		return
	}
	td, err := c.doc(target)
	if err != nil {
		c.add(d.Path, l.Line, "link %s: %v", t, err)
		return
	}
	if !td.Anchors[anchor] {
		c.add(d.Path, l.Line, "link %s: %s has no heading with anchor #%s", t, target, anchor)
	}
}

// Refresh rewrites every block that follows an <!-- include: PATH --> comment with the
// current content of PATH, read by read.
func Refresh(src []byte, read func(path string) ([]byte, error)) ([]byte, error) {
	lines := strings.SplitAfter(string(src), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); i++ {
		out.WriteString(lines[i])
		m := includeRE.FindStringSubmatch(strings.TrimRight(lines[i], "\n"))
		if m == nil {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			out.WriteString(lines[j])
			j++
		}
		if j == len(lines) {
			return nil, fmt.Errorf("line %d: include of %s is not followed by a fenced block", i+1, m[1])
		}
		_, marker, _, ok := fence(strings.TrimRight(lines[j], "\n"))
		if !ok {
			return nil, fmt.Errorf("line %d: include of %s is not followed by a fenced block", i+1, m[1])
		}
		k := j + 1
		for k < len(lines) {
			if _, mk, rest, ok := fence(strings.TrimRight(lines[k], "\n")); ok && strings.HasPrefix(mk, marker) && rest == "" {
				break
			}
			k++
		}
		if k == len(lines) {
			return nil, fmt.Errorf("line %d: the block included from %s is not closed", j+1, m[1])
		}
		content, err := read(m[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		c := withNewline(string(content))
		out.WriteString(lines[j])
		out.WriteString(c)
		out.WriteString(lines[k])
		i = k
	}
	return []byte(out.String()), nil
}

// withNewline ends non-empty text with a newline, as a block's text does.
func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}
