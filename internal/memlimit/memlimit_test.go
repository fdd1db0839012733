package memlimit

import "testing"

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
