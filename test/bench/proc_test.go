package bench

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestProcStatus reads this process's own status: the bench's memory figures come from it.
func TestProcStatus(t *testing.T) {
	st := procStatus("/proc/self/status")
	for _, f := range []string{"VmRSS", "VmHWM", "RssFile"} {
		if st[f] <= 0 {
			t.Errorf("%s = %d KiB in /proc/self/status, want more than 0 (fields read: %d)", f, st[f], len(st))
		}
	}
	if st["VmHWM"] < st["VmRSS"] {
		t.Errorf("peak VmHWM %d KiB is below the current VmRSS %d KiB", st["VmHWM"], st["VmRSS"])
	}
	if got := procStatus("/proc/no-such-process/status"); len(got) != 0 {
		t.Errorf("a missing process read as %v, want no fields", got)
	}
}

// TestProcCPUSeconds reads this process's own CPU time: the scale bench's CPU-seconds come
// from it.
func TestProcCPUSeconds(t *testing.T) {
	// Work until the kernel has counted a tick (10 ms) of this process's CPU time.
	x := uint64(1)
	for i := 0; processCPU(os.Getpid()) <= 0; i++ {
		for j := 0; j < 1_000_000; j++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if i == 10_000 {
			t.Fatalf("CPU-seconds of this process stayed 0 (%d)", x)
		}
	}
	if got := processCPU(-1); got != 0 {
		t.Errorf("a missing process read as %v CPU-seconds, want 0", got)
	}
}

func TestScaleHelpers(t *testing.T) {
	if a, b := fitLine([]float64{0, 10, 20}, []float64{100, 120, 140}); a != 100 || b != 2 {
		t.Errorf("fitLine = %v + %v·x, want 100 + 2·x", a, b)
	}
	if a, b := fitLine([]float64{5, 5}, []float64{1, 3}); a != 2 || b != 0 {
		t.Errorf("fitLine through one x = %v + %v·x, want 2 + 0·x", a, b)
	}
	for n, want := range map[int][]int{30: {0, 10, 20, 30}, 3: {0, 1, 2, 3}, 1: {0, 1}, 10: {0, 4, 8, 10}} {
		if got := joinBatches(n); !slices.Equal(got, want) {
			t.Errorf("joinBatches(%d) = %v, want %v", n, got, want)
		}
	}
	for v, want := range map[string][]int{"": {1}, "3": {3}, "1, 3": {1, 3}} {
		if got, err := parseReplicas(v); err != nil || !slices.Equal(got, want) {
			t.Errorf("parseReplicas(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"0", "x", "1,,3", "-2"} {
		if _, err := parseReplicas(v); err == nil || !strings.Contains(err.Error(), "FLOTILLA_SCALE_REPLICAS") {
			t.Errorf("parseReplicas(%q) = %v, want an error naming FLOTILLA_SCALE_REPLICAS", v, err)
		}
	}
}

// TestShardLines checks the sharded-against-unsharded table: shares of the unsharded
// manager, the leader marked, CPU and memory judged apart.
func TestShardLines(t *testing.T) {
	runs := []runCost{
		{placement: "Divided", replicas: 1, members: 30, cpu: []float64{20}, peakKiB: []int{200 * 1024}, leader: -1},
		{placement: "Divided", replicas: 3, members: 30, cpu: []float64{8, 12, 9}, peakKiB: []int{80 * 1024, 150 * 1024, 90 * 1024}, leader: 1},
	}
	out := strings.Join(shardLines(runs), "\n")
	for _, want := range []string{
		"Divided, 30 members: 3 sharded replicas (--shards=6)",
		"sharded 1/3           8.0    40 %                80 MiB    40 %                CPU met, memory met",
		"sharded 2/3 (leader)  12.0   60 %                150 MiB   75 %                CPU NOT MET, memory NOT MET",
		"sharded 3/3           9.0    45 %                90 MiB    45 %                CPU met, memory met",
		"all 3 replicas together: 29.0 CPU-s (145 %), 320 MiB peak RSS (160 %)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("shard table lacks %q:\n%s", want, out)
		}
	}
	if got := shardLines(runs[1:]); len(got) != 0 {
		t.Errorf("without an unsharded run, want no table, got %q", got)
	}
}
