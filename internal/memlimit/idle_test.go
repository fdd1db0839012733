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
	const live = 100 << 20
	d := &idleness{percent: 25, quiet: time.Minute}
	step := 10 * time.Second
	// 25% of 100 MiB per minute is the line: about 4.2 MiB per 10 s reading.
	busy, quiet := uint64(5<<20), uint64(4<<20)
	for i, tc := range []struct {
		allocated uint64
		elapsed   time.Duration
		want      change
	}{
		{busy, step, noChange},
		{quiet, step, noChange},
		{quiet, 4 * step, noChange}, // quiet for 50 s
		{quiet, step, enterIdle},    // quiet for a minute
		{quiet, step, noChange},     // still idle
		{0, 0, noChange},            // no time passed: no reading
		{busy, step, leaveIdle},
		{busy, step, noChange},
		{quiet, 5 * step, noChange}, // a full quiet minute again before idle
		{quiet, step, enterIdle},
	} {
		if got := d.observe(tc.allocated, live, tc.elapsed); got != tc.want {
			t.Fatalf("reading %d (%d bytes in %s): %d, want %d", i, tc.allocated, tc.elapsed, got, tc.want)
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
