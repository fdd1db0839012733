// Package shard runs the manager binary as three sharded replicas on a local fleet (a host
// and three apiserver-only members), kills one mid-load, and checks from the replicas' own
// logs and the members' watch streams that every change was applied exactly once and no
// shard was ever worked on by two replicas at once.
package shard

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/internal/localcluster"
	"github.com/flotilla-io/flotilla/internal/testing/fleettest"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

var env *framework.Env

func TestShardedManagers(t *testing.T) {
	EnforceDefaultTimeoutsWhenUsingContexts()
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	fleettest.RunSuite(t, "Sharded managers suite", "a fleet of apiservers and four manager processes")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	env, err = framework.StartFleetWith(ctx, localcluster.Options{}, localcluster.DefaultMembers(3, false), GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Fleet.Stop)
	_, err = framework.BuildManager(ctx)
	Expect(err).NotTo(HaveOccurred())
	for _, m := range []string{"member1", "member2", "member3"} {
		Expect(env.Join(ctx, m)).To(Succeed())
	}
}, NodeTimeout(5*time.Minute))
