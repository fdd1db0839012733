package memlimit

import (
	"runtime/debug"
	"testing"
)

func TestSoft(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	for _, tc := range []struct {
		name    string
		flag    string
		vars    map[string]string
		want    int64
		from    string
		wantErr bool
	}{
		{name: "nothing set", want: 0},
		{name: "container limit", vars: map[string]string{EnvContainerLimit: "536870912"}, want: 536870912 / 100 * 90, from: "90% of $FLOTILLA_CONTAINER_MEMORY_LIMIT"},
		{name: "container limit as a quantity", vars: map[string]string{EnvContainerLimit: "512Mi"}, want: 536870912 / 100 * 90, from: "90% of $FLOTILLA_CONTAINER_MEMORY_LIMIT"},
		{name: "GOMEMLIMIT wins over the container limit", vars: map[string]string{EnvContainerLimit: "536870912", "GOMEMLIMIT": "300MiB"}, want: 0, from: "GOMEMLIMIT"},
		{name: "the flag wins over both", flag: "400Mi", vars: map[string]string{EnvContainerLimit: "536870912", "GOMEMLIMIT": "300MiB"}, want: 400 << 20, from: "--memory-limit"},
		{name: "the flag turns it off", flag: "0", vars: map[string]string{EnvContainerLimit: "536870912"}, want: 0, from: "--memory-limit"},
		{name: "bad flag", flag: "lots", wantErr: true},
		{name: "negative flag", flag: "-1Mi", wantErr: true},
		{name: "bad variable", vars: map[string]string{EnvContainerLimit: "lots"}, wantErr: true},
		{name: "zero variable", vars: map[string]string{EnvContainerLimit: "0"}, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from, err := Soft(tc.flag, env(tc.vars))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want || (!tc.wantErr && from != tc.from) {
				t.Errorf("got %d from %q, want %d from %q", got, from, tc.want, tc.from)
			}
		})
	}
}

func TestSet(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })

	limit, from, err := Set("", func(k string) string { return map[string]string{EnvContainerLimit: "256Mi"}[k] })
	if err != nil || limit != 256<<20/100*Percent || from != "90% of $"+EnvContainerLimit {
		t.Fatalf("Set = %d, %q, %v; want %d from the container's limit", limit, from, err, 256<<20/100*Percent)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Fatalf("runtime's soft limit %d, want %d", got, limit)
	}
	// Nothing to derive a limit from: the runtime's own is left as it is.
	if limit, _, err := Set("", func(string) string { return "" }); err != nil || limit != 0 {
		t.Fatalf("Set with nothing set = %d, %v; want 0", limit, err)
	}
	if got := debug.SetMemoryLimit(-1); got != 256<<20/100*Percent {
		t.Fatalf("runtime's soft limit changed to %d with nothing set", got)
	}
	if _, _, err := Set("lots", func(string) string { return "" }); err == nil {
		t.Fatal("a bad flag value: want an error")
	}
}
