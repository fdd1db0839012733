package bench

import (
	"context"
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
	env, err := framework.StartFleetWith(ctx, localcluster.Options{}, localcluster.DefaultMembers(n, false), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Fleet.Stop() })
	mgr := startManager(ctx, b, env)
	b.Cleanup(mgr.stop)
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
	return env, mgr, names
}
