package soak

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/shard"
)

// The short soak runs sharded, the long one unsharded unless told; the modes' flags replay.
func TestConfigureModes(t *testing.T) {
	for _, v := range []string{"FLOTILLA_SOAK_DURATION", "FLOTILLA_SOAK_SHARDS", "FLOTILLA_SOAK_PULL", "FLOTILLA_SOAK_CHURN"} {
		t.Setenv(v, "")
	}
	c, err := configure()
	if err != nil || !c.sharded() || c.shards != 6 || c.pull || c.churn || c.agentKills != 0 {
		t.Fatalf("short: %+v %v", c, err)
	}
	t.Setenv("FLOTILLA_SOAK_DURATION", "12")
	if c, err = configure(); err != nil || c.sharded() {
		t.Fatalf("long: %+v %v", c, err)
	}
	t.Setenv("FLOTILLA_SOAK_SHARDS", "6")
	t.Setenv("FLOTILLA_SOAK_PULL", "1")
	t.Setenv("FLOTILLA_SOAK_CHURN", "1")
	if c, err = configure(); err != nil || c.shards != 6 || !c.pull || !c.churn || c.agentKills < 8 {
		t.Fatalf("long, every mode: %+v %v", c, err)
	}
	if got := c.modeFlags(); got != " -soak.shards=6 -soak.pull -soak.churn" {
		t.Fatalf("replay flags %q", got)
	}
}

// checkShards reads the replicas' logs: an interval that overlaps another replica's of the
// same shard is a violation, a killed incarnation's interval ends at the kill, and an apply
// outside the replica's intervals of the Work's shard is a violation.
func TestCheckShards(t *testing.T) {
	dir := t.TempDir()
	s := &soaker{cfg: config{shards: 6}, dir: dir}
	a := &managerProc{label: "manager-a", dir: dir, starts: 1}
	b := &managerProc{label: "manager-b", dir: dir, starts: 1}
	s.mgrs = []*managerProc{a, b}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(sec float64) string {
		return t0.Add(time.Duration(sec * float64(time.Second))).Format(time.RFC3339Nano)
	}
	line := func(sec float64, msg string, k int) string {
		return fmt.Sprintf(`{"level":"info","ts":%q,"logger":"shards","msg":%q,"shard":%d}`, at(sec), msg, k)
	}
	work := "karmada-es-member1/w"
	k := shard.Of(work, 6)
	applied := func(sec float64) string {
		return fmt.Sprintf(`{"level":"debug","ts":%q,"msg":"Applied the Work's manifests","Work":%q}`, at(sec), work)
	}
	write := func(p *managerProc, lines ...string) {
		if err := os.WriteFile(filepath.Join(dir, p.label+"-01.log"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// a holds the shard from 1 s and is killed at 5 s; b takes it at 12 s.
	a.killedAt = map[int]time.Time{1: t0.Add(5 * time.Second)}
	write(a, line(1, "Acquired shard", k), applied(2), `not json`)
	write(b, line(12, "Acquired shard", k), applied(13), line(20, "Stopped work on shard", k), "")
	if v, n, applies := s.checkShards(); len(v) != 0 || n != 2 || applies != 2 {
		t.Fatalf("clean: %v, %d intervals, %d applies", v, n, applies)
	}
	// b takes it at 4 s, before the kill; and applies after it stopped.
	write(b, line(4, "Acquired shard", k), line(20, "Stopped work on shard", k), applied(21))
	v, _, _ := s.checkShards()
	if len(v) != 2 || !strings.Contains(v[0], "worked on by two replicas at once") || !strings.Contains(v[1], "outside its intervals") {
		t.Fatalf("want an overlap and an apply outside: %q", v)
	}
}
