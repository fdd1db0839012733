package taintedit

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args    []string
		want    Changes
		wantErr string
	}{
		{[]string{"dedicated=gpu:NoSchedule"}, Changes{Add: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}}, ""},
		{[]string{"example.com/maintenance:NoExecute"}, Changes{Add: []corev1.Taint{{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoExecute}}}, ""},
		{[]string{"k=:PreferNoSchedule"}, Changes{Add: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}}}, ""},
		{[]string{"dedicated-"}, Changes{Remove: []Removal{{Key: "dedicated"}}}, ""},
		{[]string{"dedicated:NoSchedule-"}, Changes{Remove: []Removal{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}}, ""},
		{[]string{"dedicated=gpu:NoSchedule-"}, Changes{Remove: []Removal{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}}, ""},
		{[]string{"a=1:NoSchedule", "b-"}, Changes{Add: []corev1.Taint{{Key: "a", Value: "1", Effect: corev1.TaintEffectNoSchedule}}, Remove: []Removal{{Key: "b"}}}, ""},
		{[]string{"a:NoSchedule", "a:NoExecute"}, Changes{Add: []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "a", Effect: corev1.TaintEffectNoExecute}}}, ""},

		{nil, Changes{}, "at least one taint update is required"},
		{[]string{"dedicated=gpu"}, Changes{}, `invalid taint spec "dedicated=gpu": expected key[=value]:Effect`},
		{[]string{"dedicated"}, Changes{}, `invalid taint spec "dedicated"`},
		{[]string{"a:b:NoSchedule"}, Changes{}, `invalid taint spec "a:b:NoSchedule"`},
		{[]string{"a:NoSchedule:-"}, Changes{}, `invalid taint spec "a:NoSchedule:-"`},
		{[]string{"dedicated=gpu:Sometimes"}, Changes{}, `invalid taint effect "Sometimes"`},
		{[]string{"dedicated:"}, Changes{}, `invalid taint effect ""`},
		{[]string{"dedicated:Bogus-"}, Changes{}, `invalid taint effect "Bogus"`},
		{[]string{":NoSchedule"}, Changes{}, "the key is empty"},
		{[]string{"-"}, Changes{}, "the key is empty"},
		{[]string{"bad key:NoSchedule"}, Changes{}, `invalid key "bad key"`},
		{[]string{"k=bad value:NoSchedule"}, Changes{}, `invalid value "bad value"`},
		{[]string{"k=" + strings.Repeat("v", 64) + ":NoSchedule"}, Changes{}, "invalid value"},
		{[]string{"a=1:NoSchedule", "a=2:NoSchedule"}, Changes{}, "duplicated taints with the same key and effect"},
		{[]string{"a:NoSchedule", "a-"}, Changes{}, "cannot both add and remove taint a:NoSchedule"},
		{[]string{"a:NoSchedule", "a:NoSchedule-"}, Changes{}, "cannot both add and remove"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q) error = %v, want one containing %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.args, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tt.args, diff)
		}
	}
}

func TestApply(t *testing.T) {
	now := time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC)
	notReady := corev1.Taint{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
	gpu := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	cpu := corev1.Taint{Key: "dedicated", Value: "cpu", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name      string
		current   []corev1.Taint
		changes   Changes
		overwrite bool
		want      []corev1.Taint
		outcome   Outcome
		wantErr   string
	}{
		{"add keeps the others", []corev1.Taint{notReady}, Changes{Add: []corev1.Taint{gpu}}, false, []corev1.Taint{notReady, gpu}, Tainted, ""},
		{"add the same again", []corev1.Taint{gpu}, Changes{Add: []corev1.Taint{gpu}}, false, []corev1.Taint{gpu}, Unchanged, ""},
		{"another value without --overwrite", []corev1.Taint{gpu}, Changes{Add: []corev1.Taint{cpu}}, false, nil, "", "already has taint(s) dedicated:NoSchedule with other value(s) and --overwrite is false"},
		{"another value with --overwrite", []corev1.Taint{notReady, gpu}, Changes{Add: []corev1.Taint{cpu}}, true, []corev1.Taint{notReady, cpu}, Tainted, ""},
		{"remove by key removes every effect", []corev1.Taint{gpu, {Key: "dedicated", Effect: corev1.TaintEffectNoExecute}, notReady}, Changes{Remove: []Removal{{Key: "dedicated"}}}, false, []corev1.Taint{notReady}, Untainted, ""},
		{"remove by key and effect", []corev1.Taint{gpu, {Key: "dedicated", Effect: corev1.TaintEffectNoExecute}}, Changes{Remove: []Removal{{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}}}, false, []corev1.Taint{gpu}, Untainted, ""},
		{"remove a missing taint", []corev1.Taint{gpu}, Changes{Remove: []Removal{{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}}}, false, nil, "", `taint "dedicated:NoExecute" not found`},
		{"remove a missing taint, ignored", []corev1.Taint{gpu}, Changes{Remove: []Removal{{Key: "x"}}, IgnoreMissing: true}, false, []corev1.Taint{gpu}, Unchanged, ""},
		{"add and remove", []corev1.Taint{notReady}, Changes{Add: []corev1.Taint{gpu}, Remove: []Removal{{Key: notReady.Key}}}, false, []corev1.Taint{gpu}, Modified, ""},
		{"NoExecute gets TimeAdded", nil, Changes{Add: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute}}}, false,
			[]corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: now}}}, Tainted, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]corev1.Taint(nil), tt.current...)
			got, outcome, err := Apply(tt.current, tt.changes, tt.overwrite, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if outcome != tt.outcome {
				t.Errorf("outcome = %s, want %s", outcome, tt.outcome)
			}
			if diff := cmp.Diff(before, tt.current); diff != "" {
				t.Errorf("Apply modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

// FuzzParse: any arguments give taints or an error, never a panic, and what Parse accepts
// is well formed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a=b:NoSchedule", "a-", "a:NoExecute-", "example.com/k=v:PreferNoSchedule", ":", "-", "=:-", "a=b=c:NoSchedule", "a:b:c"} {
		f.Add(s, "b:NoSchedule")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		c, err := Parse([]string{a, b})
		if err != nil {
			return
		}
		for _, tn := range c.Add {
			if tn.Key == "" || (tn.Effect != corev1.TaintEffectNoSchedule && tn.Effect != corev1.TaintEffectPreferNoSchedule && tn.Effect != corev1.TaintEffectNoExecute) {
				t.Fatalf("Parse(%q, %q) accepted %+v", a, b, tn)
			}
		}
		for _, r := range c.Remove {
			if r.Key == "" {
				t.Fatalf("Parse(%q, %q) accepted a removal without a key", a, b)
			}
		}
		if _, _, err := Apply(nil, c, false, time.Time{}); err != nil && len(c.Remove) == 0 {
			t.Fatalf("Apply of %+v to no taints: %v", c, err)
		}
	})
}
