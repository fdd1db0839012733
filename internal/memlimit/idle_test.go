package memlimit

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

func TestIdleness(t *testing.T) {
	const live = 80 << 20
	d := &idleness{quiet: time.Minute}
	step := 10 * time.Second
	// Idle is at most 40 MiB (half the live heap) over a minute; busy again is 10 MiB (an
	// eighth) or more in one reading.
	const (
		burst  = 10 << 20
		little = 5 << 20
		some   = 8 << 20
	)
	for i, tc := range []struct {
		allocated uint64
		elapsed   time.Duration
		want      change
	}{
		{burst, step, noChange},
		{little, step, noChange},
		// One busier reading (8 MiB in 10 s is 48 MiB a minute on its own) does not
		// restart the quiet minute: the minute's readings count together.
		{some, step, noChange},
		{little, 3 * step, noChange}, // 50 s: 18 MiB
		{little, step, enterIdle},    // a minute: 23 MiB in all
		{some, step, noChange},       // more, but not a burst: still idle
		{0, 0, noChange},             // no time passed: no reading
		{burst, step, leaveIdle},
		// A steady 8 MiB every 10 s, less than a burst in any reading, is not idle: 48 MiB
		// a minute is more than half the live heap.
		{some, step, noChange},
		{some, step, noChange},
		{some, step, noChange},
		{some, step, noChange},
		{some, step, noChange},
		{some, step, noChange},    // a minute since the burst: 48 MiB
		{some, step, noChange},    // the latest minute: 48 MiB
		{little, step, noChange},  // 45 MiB
		{little, step, noChange},  // 42 MiB
		{little, step, enterIdle}, // 39 MiB
	} {
		if got := d.observe(tc.allocated, live, tc.elapsed); got != tc.want {
			t.Fatalf("reading %d (%d MiB in %s): %d, want %d", i, tc.allocated>>20, tc.elapsed, got, tc.want)
		}
	}
}

// TestIdleGC runs IdleGC on this test's own runtime: GOGC goes down while the test allocates
// nothing, back up while it allocates, and back to what it was when IdleGC stops.
func TestIdleGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	gogc := func() int { return int(int32(read(gogcMetric))) }
	// A live heap of some size, measured by a collection, as a manager has: idleness is
	// allocation against it.
	ballast := make([]byte, 16<<20)
	runtime.GC()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	g := &IdleGC{Percent: 10, Interval: 20 * time.Millisecond, Quiet: 200 * time.Millisecond, Log: logr.Discard()}
	go func() { done <- g.Start(ctx) }()

	waitFor := func(what string, want int, work func()) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for gogc() != want {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("%s: GOGC is %d, want %d", what, gogc(), want)
			}
			work()
		}
	}
	idle := func() { time.Sleep(10 * time.Millisecond) }
	var sink [][]byte
	allocate := func() {
		// Far more than 10% of the test's live heap every 200 ms.
		for range 64 {
			sink = append(sink, make([]byte, 64<<10))
		}
		if len(sink) > 1024 {
			sink = sink[:0]
		}
		time.Sleep(time.Millisecond)
	}
	waitFor("idle", 10, idle)
	waitFor("allocating", 100, allocate)
	waitFor("idle again", 10, idle)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC is %d after IdleGC stopped, want 100 back", got)
	}
	_ = sink
	runtime.KeepAlive(ballast)
}

func TestIdleGCRefusesAHigherPercent(t *testing.T) {
	before := debug.SetGCPercent(50)
	defer debug.SetGCPercent(before)
	if err := (&IdleGC{Percent: 50, Log: logr.Discard()}).Start(context.Background()); err == nil {
		t.Fatal("an idle GOGC of 50 with 50 in effect was accepted")
	}
}
