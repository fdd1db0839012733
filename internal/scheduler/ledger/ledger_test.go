package ledger

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
)

var cpu = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}

// replicas returns the held replicas by cluster.
func replicas(h map[string][]estimate.Held) map[string][]int32 {
	out := map[string][]int32{}
	for c, list := range h {
		for _, e := range list {
			out[c] = append(out[c], e.Replicas)
		}
	}
	return out
}

func TestLedger(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	type step struct {
		name   string
		do     func(l *Ledger)
		now    time.Duration
		pods   map[string]int64
		want   map[string][]int32
		length int
	}
	steps := []step{
		{name: "a placement is held", do: func(l *Ledger) { l.Hold(at(0), "ns/a", "m1", 3, cpu, 10) },
			pods: map[string]int64{"m1": 10}, want: map[string][]int32{"m1": {3}}, length: 1},
		{name: "nothing held for no new replicas", do: func(l *Ledger) { l.Hold(at(0), "ns/z", "m1", 0, cpu, 10) },
			pods: map[string]int64{"m1": 10}, want: map[string][]int32{"m1": {3}}, length: 1},
		{name: "a second one on the same cluster, and one on a cluster that counts no pods", do: func(l *Ledger) {
			l.Hold(at(time.Second), "ns/b", "m1", 2, cpu, 10)
			l.Hold(at(time.Second), "ns/b", "m2", 1, cpu, Unreported)
		}, now: time.Second, pods: map[string]int64{"m1": 10}, want: map[string][]int32{"m1": {3, 2}, "m2": {1}}, length: 3},
		{name: "partly reported: the first is released", now: 2 * time.Second, pods: map[string]int64{"m1": 13},
			want: map[string][]int32{"m1": {2}, "m2": {1}}, length: 2},
		{name: "all reported", now: 3 * time.Second, pods: map[string]int64{"m1": 15},
			want: map[string][]int32{"m2": {1}}, length: 1},
		{name: "forgotten with its binding", do: func(l *Ledger) { l.Forget("ns/b") }, now: 3 * time.Second,
			want: map[string][]int32{}, length: 0},
		{name: "held until the TTL", do: func(l *Ledger) { l.Hold(at(10*time.Second), "ns/c", "m3", 4, cpu, 0) },
			now: 10*time.Second + DefaultTTL - time.Nanosecond, pods: map[string]int64{"m3": 2}, want: map[string][]int32{"m3": {4}}, length: 1},
		{name: "released at the TTL", now: 10*time.Second + DefaultTTL, pods: map[string]int64{"m3": 2}, want: map[string][]int32{}, length: 0},
	}
	l := New(0)
	for _, s := range steps {
		if s.do != nil {
			s.do(l)
		}
		got := replicas(l.Held(at(s.now), s.pods))
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s: held (-want +got):\n%s", s.name, diff)
		}
		if l.Len() != s.length {
			t.Errorf("%s: Len() = %d, want %d", s.name, l.Len(), s.length)
		}
	}
}
