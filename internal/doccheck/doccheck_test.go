package doccheck

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestAnchor(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Getting started", "getting-started"},
		{"5. Fail over", "5-fail-over"},
		{"What `join` gives the control plane", "what-join-gives-the-control-plane"},
		{"Coming from Karmada's API", "coming-from-karmadas-api"},
		{"What it does not do (yet)", "what-it-does-not-do-yet"},
		{"Accepted and kept, not acted on yet", "accepted-and-kept-not-acted-on-yet"},
		{"flags_and-more", "flags_and-more"},
		{"Überblick", "überblick"},
		{"", ""},
	} {
		if got := Anchor(tc.heading); got != tc.want {
			t.Errorf("Anchor(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

const sample = "# Title\n" +
	"\n" +
	"See [concepts](concepts.md#the-objects), [here](#title) and `[not a link](x.md)`.\n" +
	"[ref]: other.md\n" +
	"## Title\n" +
	"<a name=\"custom\"></a>\n" +
	"\n" +
	"```sh test\n" +
	"kubectl apply -f test/x.yaml\n" +
	"```\n" +
	"<!-- include: test/x.yaml -->\n" +
	"```yaml\n" +
	"a: 1\n" +
	"```\n" +
	"- item\n" +
	"  ```yaml fragment\n" +
	"  b: 2\n" +
	"  ```\n" +
	"```\n" +
	"# not a heading\n" +
	"```\n"

func TestParse(t *testing.T) {
	d := Parse("docs/a.md", []byte(sample))
	if diff := cmp.Diff(map[string]bool{"title": true, "title-1": true, "custom": true}, d.Anchors); diff != "" {
		t.Errorf("anchors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Link{{"concepts.md#the-objects", 3}, {"#title", 3}, {"other.md", 4}}, d.Links); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Span{{"[not a link](x.md)", 3}}, d.Spans); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	want := []Block{
		{Lang: "sh", Words: []string{"test"}, Text: "kubectl apply -f test/x.yaml\n", Line: 8},
		{Lang: "yaml", Words: []string{}, Text: "a: 1\n", Line: 12, Include: "test/x.yaml"},
		{Lang: "yaml", Words: []string{"fragment"}, Text: "b: 2\n", Line: 16},
		{Text: "# not a heading\n", Line: 19},
	}
	if diff := cmp.Diff(want, d.Blocks, cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	if !d.Blocks[0].Has("test") || d.Blocks[1].Has("test") || !d.Blocks[0].IsShell() {
		t.Error("Has or IsShell is wrong")
	}
}

func TestRepoPaths(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"kubectl apply -f test/testdata/x.yaml", []string{"test/testdata/x.yaml"}},
		{"see internal/scheduler/doc.go.", []string{"internal/scheduler/doc.go"}},
		{"api/<group>/<version>/ controllers/{a,b} $FLEET/member1 config/*.yaml", nil},
		{"https://github.com/x/y//config/default?ref=v1 config/default", []string{"config/default"}},
		{"(docs/install.md), `cmd/agent`", []string{"docs/install.md", "cmd/agent"}},
		{"internal/... and bin/manager and testdata/x", nil},
		{"internal/shard.Assignment and internal/x/doc.go", []string{"internal/shard", "internal/x/doc.go"}},
	} {
		if diff := cmp.Diff(tc.want, RepoPaths(tc.text)); diff != "" {
			t.Errorf("RepoPaths(%q) (-want +got):\n%s", tc.text, diff)
		}
	}
}

func TestCheck(t *testing.T) {
	fsys := fstest.MapFS{
		"README.md":               {Data: []byte("[docs](docs/README.md) [gone](docs/gone.md) [bad anchor](docs/guides/g.md#nope) [ok](docs/guides/g.md#how) [out](../x.md) [web](https://example.com/x.md) [abs](/docs/README.md)\n")},
		"docs/README.md":          {Data: []byte("# Docs\n[self](#docs) [missing](#none) [dir](guides/) `config/samples/x.yaml` `config/missing.yaml`\n")},
		"docs/guides/g.md":        {Data: []byte("# How\n```sh\nls\n```\n```sh test\nkubectl apply -f test/gone.yaml\n```\n<!-- include: config/samples/x.yaml -->\n```yaml\nold: 1\n```\n")},
		"docs/getting-started.md": {Data: []byte("```bash demo\nmake demo\n```\n```console\n$ x\n```\n")},
		"config/samples/x.yaml":   {Data: []byte("new: 1\n")},
	}
	var got []string
	for _, p := range Check(fsys, []string{"README.md", "docs/README.md", "docs/guides/g.md", "docs/getting-started.md"}) {
		got = append(got, p.String())
	}
	want := []string{
		"README.md:1: link docs/gone.md: docs/gone.md does not exist",
		"README.md:1: link docs/guides/g.md#nope: docs/guides/g.md has no heading with anchor #nope",
		"README.md:1: link ../x.md leaves the repository",
		"README.md:1: link /docs/README.md: use a path relative to this file",
		"docs/README.md:2: link #none: docs/README.md has no heading with anchor #none",
		"docs/README.md:2: `config/missing.yaml` names config/missing.yaml, which is not in the repository",
		"docs/guides/g.md:2: shell block without a run marker: write ```sh test (the docs test runs it), ```sh demo or ```sh manual",
		"docs/guides/g.md:5: the sh block names test/gone.yaml, which is not in the repository",
		"docs/guides/g.md:9: the block is not a current copy of config/samples/x.yaml: run make docs",
		"docs/getting-started.md:4: shell block without a run marker: write ```console test (the docs test runs it), ```console demo or ```console manual",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestRefresh(t *testing.T) {
	files := map[string]string{"a.yaml": "x: 1\ny: 2\n", "b.yaml": "no newline"}
	read := func(p string) ([]byte, error) {
		s, ok := files[p]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
	for _, tc := range []struct{ name, src, want, err string }{
		{"replaces", "a\n<!-- include: a.yaml -->\n\n```yaml\nold\n```\nb\n", "a\n<!-- include: a.yaml -->\n\n```yaml\nx: 1\ny: 2\n```\nb\n", ""},
		{"empty block", "<!-- include: b.yaml -->\n```yaml\n```\n", "<!-- include: b.yaml -->\n```yaml\nno newline\n```\n", ""},
		{"untouched", "```yaml\nold\n```\n", "```yaml\nold\n```\n", ""},
		{"no block", "<!-- include: a.yaml -->\ntext\n", "", "not followed by a fenced block"},
		{"unclosed", "<!-- include: a.yaml -->\n```yaml\nold\n", "", "not closed"},
		{"missing file", "<!-- include: c.yaml -->\n```yaml\n```\n", "", "file does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Refresh([]byte(tc.src), read)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// A refreshed document checks clean and refreshes to itself.
			again, err := Refresh(got, read)
			if err != nil || string(again) != string(got) {
				t.Errorf("refresh is not idempotent: %v\n%s", err, again)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("```\nunclosed"))
	f.Add([]byte("<!-- include: x -->\n```"))
	f.Add([]byte("``a`` ` [x](y \"t\") [r]: <z>"))
	f.Fuzz(func(t *testing.T, src []byte) {
		d := Parse("docs/x.md", src)
		for _, b := range d.Blocks {
			_ = RepoPaths(b.Text)
		}
		_, _ = Refresh(src, func(string) ([]byte, error) { return []byte("a: 1"), nil })
		_ = Check(fstest.MapFS{"docs/x.md": {Data: src}}, []string{"docs/x.md"})
	})
}
