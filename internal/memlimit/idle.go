package memlimit

import (
	"context"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/go-logr/logr"
)

// DefaultIdlePercent is the garbage collector's GOGC while the manager is idle.
const DefaultIdlePercent = 10

// IdleGC lowers the garbage collector's goal while the process allocates little, and puts it
// back as soon as it allocates again.
//
// With Go's default GOGC=100, a process keeps about twice its live heap: the collector lets
// the heap grow by as much as was live before it collects again. That room is what makes a
// burst of work cheap to collect, and it is wasted on an idle manager: one holding 10,000
// templates allocates a few hundred kilobytes a second, and still keeps the 300 MiB its
// heap grew to for a 150 MiB live heap. While idle, IdleGC sets GOGC to Percent and returns
// the freed memory to the operating system at once (debug.FreeOSMemory); the collector then
// runs every Percent% of the live heap allocated, which at an idle rate is about once a
// minute. Returning the memory holds the heap lock while it runs, once per idle spell.
//
// It changes neither the live heap nor the memory a burst needs: a container's limit still
// has to cover the peak, which the soft limit (Soft) keeps below it.
type IdleGC struct {
	// Percent is GOGC while idle; 0 is DefaultIdlePercent.
	Percent int
	// Interval is how often the allocation rate is read; 0 is 5 seconds.
	Interval time.Duration
	// Quiet is how long the process must have allocated little to be idle; 0 is 1 minute.
	Quiet time.Duration
	Log   logr.Logger
}

// NeedLeaderElection is false: a replica waiting for its turn is idle too.
func (g *IdleGC) NeedLeaderElection() bool { return false }

// Start reads the allocation rate every Interval until ctx ends, switching GOGC between the
// value in effect when it started and Percent. It puts the first back when it returns.
func (g *IdleGC) Start(ctx context.Context) error {
	busy := int(int32(read(gogcMetric))) // the runtime's int32: -1 is off
	if busy < 0 {
		g.Log.Info("Garbage collection is off (GOGC=off): leaving it alone when idle")
		return nil
	}
	p := g.Percent
	if p == 0 {
		p = DefaultIdlePercent
	}
	if p >= busy {
		return fmt.Errorf("the idle GOGC, %d, is not below the one in effect, %d", p, busy)
	}
	d := &idleness{quiet: orDefault(g.Quiet, time.Minute)}
	every := orDefault(g.Interval, 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	allocated, last := read(allocsMetric), time.Now()
	defer func() {
		if d.idle {
			debug.SetGCPercent(busy)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			a := read(allocsMetric)
			switch d.observe(a-allocated, read(liveMetric), now.Sub(last)) {
			case enterIdle:
				debug.SetGCPercent(p)
				debug.FreeOSMemory()
				g.Log.V(1).Info("Idle: garbage collector goal lowered", "GOGC", p)
			case leaveIdle:
				debug.SetGCPercent(busy)
				g.Log.V(1).Info("Busy again: garbage collector goal restored", "GOGC", busy)
			}
			allocated, last = a, now
		}
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

const (
	allocsMetric = "/gc/heap/allocs:bytes"
	liveMetric   = "/gc/heap/live:bytes"
	gogcMetric   = "/gc/gogc:percent"
)

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

type change int

const (
	noChange change = iota
	enterIdle
	leaveIdle
)

// idleness tells idle from busy from the bytes allocated between readings, against the live
// heap. The process is idle once its readings span a quiet period in which it allocated at
// most half its live heap: at the idle GOGC, p, that is at most 50/p collections a quiet
// period (5 a minute at 10), and in practice far fewer (an idle manager with 10,000 templates
// allocates about a seventh of its live heap a minute). It is busy again at the first
// reading in which it allocated an eighth of its live heap or more, three times the idle
// rate at the default reading interval and quiet period: a burst, which wants the busy
// GOGC's room. In between it stays as it is.
type idleness struct {
	quiet    time.Duration
	readings []reading // the latest, spanning at least quiet when there are enough
	idle     bool
}

type reading struct {
	allocated uint64
	elapsed   time.Duration
}

func (d *idleness) observe(allocated, live uint64, elapsed time.Duration) change {
	if elapsed <= 0 {
		return noChange
	}
	if allocated >= live/8 {
		d.readings = d.readings[:0]
		if d.idle {
			d.idle = false
			return leaveIdle
		}
		return noChange
	}
	d.readings = append(d.readings, reading{allocated, elapsed})
	var span time.Duration
	var sum uint64
	for _, r := range d.readings {
		span += r.elapsed
		sum += r.allocated
	}
	// Keep just enough of the latest readings to span the quiet period.
	for len(d.readings) > 1 && span-d.readings[0].elapsed >= d.quiet {
		span -= d.readings[0].elapsed
		sum -= d.readings[0].allocated
		d.readings = d.readings[1:]
	}
	if !d.idle && span >= d.quiet && sum <= live/2 {
		d.idle = true
		return enterIdle
	}
	return noChange
}
