// Package golden compares generated files with what the code renders: tests call Check, and
// UPDATE_GOLDEN=1 rewrites the files.
package golden

import (
	"bytes"
	"os"
	"testing"
)

// Check fails t unless the file at path holds exactly want; with UPDATE_GOLDEN set it first
// writes want there. regenerate is the command that rewrites it, for the failure message.
func Check(t testing.TB, path string, want []byte, regenerate string) {
	t.Helper()
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("%s is stale: run %s", path, regenerate)
	}
}
