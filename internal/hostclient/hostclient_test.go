package hostclient

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func TestOneBudgetForEveryKind(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
	le := Configure(cfg, 50, 100)
	if cfg.RateLimiter == nil {
		t.Fatal("no shared limiter")
	}
	// controller-runtime copies the config for each kind's client: every copy must share it.
	if rest.CopyConfig(cfg).RateLimiter != cfg.RateLimiter {
		t.Fatal("a copy of the config has a limiter of its own")
	}
	if cfg.RateLimiter.QPS() != 50 {
		t.Fatalf("QPS = %v, want 50", cfg.RateLimiter.QPS())
	}
	// The budget is one: 100 tokens of burst, then none, whichever client takes them.
	a, b := rest.CopyConfig(cfg).RateLimiter, rest.CopyConfig(cfg).RateLimiter
	for i := 0; i < 50; i++ {
		if !a.TryAccept() || !b.TryAccept() {
			t.Fatalf("burst ended after %d requests from two clients, want 100", 2*i)
		}
	}
	if a.TryAccept() || b.TryAccept() {
		t.Fatal("two clients got more than the burst between them")
	}
	if le.RateLimiter != nil || le.QPS != leaderElectionQPS || le.Burst != leaderElectionBurst {
		t.Fatalf("leader election client shares the budget or has no limit: %v %v %v", le.RateLimiter, le.QPS, le.Burst)
	}
	if le.Host != cfg.Host {
		t.Fatalf("leader election talks to %q, want %q", le.Host, cfg.Host)
	}
}

func TestNoLimit(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 100, Burst: 200}
	Configure(cfg, -1, 0)
	if cfg.RateLimiter != nil || cfg.QPS >= 0 {
		t.Fatalf("limit kept: %v %v", cfg.RateLimiter, cfg.QPS)
	}
}

func TestUserAgentNamesTheFieldManager(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
	le := Configure(cfg, 50, 100)
	// The apiserver's field manager for writes that name none is the user agent up to its
	// first slash.
	for name, c := range map[string]*rest.Config{"manager": cfg, "leader election": le} {
		if got, _, _ := strings.Cut(c.UserAgent, "/"); got != FieldManager {
			t.Errorf("%s client: user agent %q gives field manager %q, want %q", name, c.UserAgent, got, FieldManager)
		}
	}
	own := &rest.Config{Host: "https://127.0.0.1:6443", UserAgent: "someone/1.0"}
	Configure(own, 50, 100)
	if own.UserAgent != "someone/1.0" {
		t.Errorf("a user agent already set was replaced: %q", own.UserAgent)
	}
}
