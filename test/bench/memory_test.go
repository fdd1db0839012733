package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// BenchmarkManagerMemory reports the manager's resident memory with 3 and with 10 joined
// apiserver-only members, idle, after their status has been collected.
func BenchmarkManagerMemory(b *testing.B) {
	for _, n := range []int{3, 10} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			_, mgr, _ := joinedFleet(ctx, b, n)
			time.Sleep(20 * time.Second) // a status collection round and steady probing
			rss, peak := mgr.rss()
			fmt.Printf("\nmanager with %d members: RSS %d MiB, peak %d MiB\n", n, rss/1024, peak/1024)
			b.ReportMetric(float64(rss)/1024, "MiB-rss")
			b.ReportMetric(float64(peak)/1024, "MiB-peak-rss")
		})
	}
}

// joinedFleet starts a fleet of n apiserver-only members and the manager as a process, joins
// every member and waits until all are Ready. The fleet and the manager stop when b ends.
func joinedFleet(ctx context.Context, b *testing.B, n int) (*framework.Env, *managerProcess, []string) {
	env, mgrs, names := joinedFleetReplicas(ctx, b, n, 1)
	return env, mgrs[0], names
}

// joinedFleetReplicas is joinedFleet with the given number of manager replicas (sharded when
// more than one: startManagers).
func joinedFleetReplicas(ctx context.Context, b *testing.B, n, replicas int) (*framework.Env, managers, []string) {
	env, err := framework.StartFleetWith(ctx, localcluster.Options{}, localcluster.DefaultMembers(n, false), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Fleet.Stop() })
	mgrs := startManagers(ctx, b, env, replicas)
	for _, m := range mgrs {
		b.Cleanup(m.stop)
	}
	var names []string
	for _, m := range env.Fleet.Members {
		names = append(names, m.Name)
		if err := env.Join(ctx, m.Name); err != nil {
			b.Fatal(err)
		}
	}
	waitFor(ctx, b, "members Ready", func() bool {
		for _, name := range names {
			if !(clusterReady{}).check(ctx, env, name) {
				return false
			}
		}
		return true
	})
	return env, mgrs, names
}

// managers are the replicas of one bench run.
type managers []*managerProcess

// resetPeakRSS resets every replica's peak resident memory.
func (ms managers) resetPeakRSS() error {
	var errs []error
	for _, m := range ms {
		errs = append(errs, m.resetPeakRSS())
	}
	return errors.Join(errs...)
}

// scrape merges the replicas' metrics: each family holds every replica's series, so sums
// over series add the replicas up.
func (ms managers) scrape(b *testing.B) metricsSnapshot {
	out := metricsSnapshot{}
	for _, m := range ms {
		for name, mf := range m.scrape(b) {
			if have := out[name]; have != nil {
				have.Metric = append(have.Metric, mf.Metric...)
			} else {
				out[name] = mf
			}
		}
	}
	return out
}

// peakRSS returns the largest and the summed peak resident memory of the replicas, in KiB.
func (ms managers) peakRSS() (largest, sum int) {
	for _, m := range ms {
		p := m.peakRSS()
		largest, sum = max(largest, p), sum+p
	}
	return largest, sum
}
