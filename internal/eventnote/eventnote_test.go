package eventnote_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flotilla-io/flotilla/internal/eventnote"
)

func TestTruncate(t *testing.T) {
	long := strings.Repeat("x", 3000)
	// "界" is three bytes: after the "x", a cut at MaxLength-4 would split one.
	wide := "x" + strings.Repeat("界", 400)
	for _, tc := range []struct {
		name, note string
		want       string
	}{
		{"short", "member3 is not ready", "member3 is not ready"},
		{"exactly the limit", long[:eventnote.MaxLength], long[:eventnote.MaxLength]},
		{"one byte over", long[:eventnote.MaxLength+1], long[:eventnote.MaxLength-len(" …")] + " …"},
		{"multi-byte characters", wide, wide[:1+3*339] + " …"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := eventnote.Truncate(tc.note)
			if got != tc.want {
				t.Fatalf("Truncate(%d bytes) = %d bytes %q..., want %d bytes", len(tc.note), len(got), got[:min(len(got), 20)], len(tc.want))
			}
		})
	}
}

// FuzzTruncate: whatever the note, the result fits the events API, is a prefix of the note
// (or the note itself), and a valid UTF-8 note stays valid.
func FuzzTruncate(f *testing.F) {
	f.Add("member3 is not ready")
	f.Add(strings.Repeat("é", 1000))
	f.Add(strings.Repeat("界", 400) + "x")
	f.Add(strings.Repeat("a", 1023) + "😀")
	f.Fuzz(func(t *testing.T, note string) {
		got := eventnote.Truncate(note)
		if len(got) > eventnote.MaxLength {
			t.Fatalf("%d bytes, over the limit", len(got))
		}
		if got == note {
			if len(note) > eventnote.MaxLength {
				t.Fatalf("a %d-byte note was kept whole", len(note))
			}
			return
		}
		if !strings.HasSuffix(got, " …") || !strings.HasPrefix(note, strings.TrimSuffix(got, " …")) {
			t.Fatalf("%q is not a prefix of the note with an ellipsis", got)
		}
		if utf8.ValidString(note) && !utf8.ValidString(got) {
			t.Fatalf("a valid note became invalid UTF-8: %q", got)
		}
	})
}
