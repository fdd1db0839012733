package localcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	// DefaultHostName is the name of a fleet's host cluster when FleetOptions.Host.Name is
	// empty.
	DefaultHostName = "host"
	// StateFile is the file in a fleet's Dir that describes it; see LoadFleet.
	StateFile = "state.json"
	// defaultGPUsPerNode is what DefaultMembers gives the nodes of its GPU member.
	defaultGPUsPerNode = 4
)

// FleetOptions configures a fleet: one host cluster and member clusters, started in
// parallel.
type FleetOptions struct {
	// Dir holds one state dir per cluster (Dir/<name>), a kubeconfig per cluster
	// (Dir/<name>.kubeconfig) and Dir/state.json. Empty: a temporary directory, removed by
	// Stop.
	Dir string
	// BinDir is the default of every cluster's Options.BinDir.
	BinDir string
	// CRDDir, if set, holds CRDs to install into the host (see Cluster.InstallCRDs). It must
	// exist.
	CRDDir string
	// Host configures the host cluster; its Name defaults to DefaultHostName.
	Host Options
	// Members configure the member clusters.
	Members []MemberOptions
	// Detach detaches every cluster (see Options.Detach).
	Detach bool
	// Log is the default of every cluster's Options.Log.
	Log io.Writer
}

// MemberOptions configures a member cluster. Options.Dir is ignored: the fleet places
// every cluster in its own Dir.
type MemberOptions struct {
	Options
	// Provider, Region and Zone say where the member pretends to run. On a full member
	// they become the topology.kubernetes.io/region and zone labels of its Nodes.
	Provider, Region, Zone string
	// GPUs is the number of nvidia.com/gpu of every Node of a full member.
	GPUs int
}

// Fleet is a running host cluster and its member clusters.
type Fleet struct {
	// Dir is the resolved FleetOptions.Dir.
	Dir string
	// Host is the host cluster, where the project's CRDs are installed.
	Host *Cluster
	// Members are the member clusters, in the order of FleetOptions.Members.
	Members []*Cluster
	// MemberOptions[i] describes Members[i], with defaults filled in.
	MemberOptions []MemberOptions
	// StartedAt is when StartFleet began.
	StartedAt time.Time

	removeDir bool
}

// StartFleet starts the host and the members in parallel, installs CRDDir into the host,
// writes Dir/<name>.kubeconfig for every cluster and Dir/state.json, and returns once all
// are ready. If anything fails, everything started is stopped.
func StartFleet(ctx context.Context, o FleetOptions) (*Fleet, error) {
	f := &Fleet{StartedAt: time.Now().UTC().Truncate(time.Second)}
	var err error
	if o.Dir == "" {
		if f.Dir, err = os.MkdirTemp("", "flotilla-fleet-"); err != nil {
			return nil, err
		}
		f.removeDir = true
	} else {
		if f.Dir, err = filepath.Abs(o.Dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(f.Dir, 0o755); err != nil {
			return nil, err
		}
	}

	host, members, err := f.clusterOptions(o)
	if err == nil && o.BinDir == "" {
		// Resolve once, for one clear error rather than one per cluster.
		var binDir string
		if binDir, err = ResolveBinDir("", anyFull(host, members)); err == nil {
			host.BinDir = cmp.Or(host.BinDir, binDir)
			for i := range members {
				members[i].BinDir = cmp.Or(members[i].BinDir, binDir)
			}
		}
	}
	if err != nil {
		f.cleanupDir()
		return nil, err
	}
	f.MemberOptions = members

	began := time.Now()
	clusters := make([]*Cluster, 1+len(members))
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		c, err := Start(gctx, host)
		if err != nil {
			return err
		}
		clusters[0] = c
		if o.CRDDir != "" {
			if _, err := c.InstallCRDs(gctx, o.CRDDir); err != nil {
				return err
			}
		}
		return nil
	})
	for i, m := range members {
		g.Go(func() error {
			c, err := Start(gctx, m.Options)
			clusters[i+1] = c
			return err
		})
	}
	err = g.Wait()
	f.Host, f.Members = clusters[0], clusters[1:]
	if err == nil {
		err = f.writeFiles()
	}
	if err != nil {
		if stopErr := f.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", stopErr))
		}
		return nil, err
	}
	newLogger(o.Log, "fleet").printf("%d clusters ready in %s", len(clusters), time.Since(began).Round(10*time.Millisecond))
	return f, nil
}

// clusterOptions derives every cluster's Options from the fleet's.
func (f *Fleet) clusterOptions(o FleetOptions) (Options, []MemberOptions, error) {
	inherit := func(c Options) Options {
		c.Dir = filepath.Join(f.Dir, c.Name)
		if c.BinDir == "" {
			c.BinDir = o.BinDir
		}
		if c.Log == nil {
			c.Log = o.Log
		}
		c.Detach = c.Detach || o.Detach
		return c
	}

	host := o.Host
	if host.Name == "" {
		host.Name = DefaultHostName
	}
	seen := map[string]bool{host.Name: true}
	host = inherit(host)

	members := make([]MemberOptions, len(o.Members))
	for i, m := range o.Members {
		if m.Name == "" {
			return Options{}, nil, fmt.Errorf("member %d has no name", i+1)
		}
		if seen[m.Name] {
			return Options{}, nil, fmt.Errorf("two clusters are named %q", m.Name)
		}
		seen[m.Name] = true
		m.Options = inherit(m.Options)
		if m.Full {
			nodes, err := defaultNodes(m.Name, m.Nodes)
			if err != nil {
				return Options{}, nil, fmt.Errorf("member %s: %w", m.Name, err)
			}
			for j := range nodes {
				decorateNode(&nodes[j], m)
			}
			m.Nodes = nodes
		}
		members[i] = m
	}
	return host, members, nil
}

// anyFull reports whether any cluster needs the binaries of a full cluster; a host with
// only a controller manager is counted as full, which needs a superset of its binaries.
func anyFull(host Options, members []MemberOptions) bool {
	if host.Full || host.ControllerManager {
		return true
	}
	for _, m := range members {
		if m.Full || m.ControllerManager {
			return true
		}
	}
	return false
}

// decorateNode gives a member's Node its topology labels and GPUs.
func decorateNode(n *NodeSpec, m MemberOptions) {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if m.Region != "" {
		setDefault(n.Labels, corev1.LabelTopologyRegion, m.Region)
	}
	if m.Zone != "" {
		setDefault(n.Labels, corev1.LabelTopologyZone, m.Zone)
	}
	if m.GPUs > 0 {
		if _, ok := n.Capacity[ResourceGPU]; !ok {
			n.Capacity[ResourceGPU] = *resource.NewQuantity(int64(m.GPUs), resource.DecimalSI)
		}
		setDefault(n.Labels, "nvidia.com/gpu.present", "true")
	}
}

func setDefault(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

// writeFiles writes the per-cluster kubeconfigs and the state file.
func (f *Fleet) writeFiles() error {
	for _, c := range f.Clusters() {
		if err := os.WriteFile(f.KubeconfigPath(c.Name), c.Kubeconfig(AdminUser, c.AdminToken), 0o600); err != nil {
			return err
		}
	}
	return f.State().write(filepath.Join(f.Dir, StateFile))
}

// KubeconfigPath returns the path of the admin kubeconfig of the named cluster in the
// fleet's Dir.
func (f *Fleet) KubeconfigPath(name string) string {
	return filepath.Join(f.Dir, name+".kubeconfig")
}

// Clusters returns the host followed by the members.
func (f *Fleet) Clusters() []*Cluster {
	return append([]*Cluster{f.Host}, f.Members...)
}

// Member returns the member named name, or nil.
func (f *Fleet) Member(name string) *Cluster {
	for _, m := range f.Members {
		if m != nil && m.Name == name {
			return m
		}
	}
	return nil
}

// Healthy reports whether every process of every cluster runs and every apiserver is
// ready.
func (f *Fleet) Healthy(ctx context.Context) error {
	var errs []error
	for _, c := range f.Clusters() {
		if err := c.Healthy(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Stop stops all clusters in parallel and removes the state file; a temporary Dir is
// removed entirely.
func (f *Fleet) Stop() error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, c := range f.Clusters() {
		if c == nil {
			continue
		}
		wg.Go(func() {
			if err := c.Stop(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(f.Dir, StateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f.cleanupDir()
	return nil
}

func (f *Fleet) cleanupDir() {
	if f.removeDir {
		_ = os.RemoveAll(f.Dir)
	}
}

// memberTopologies are the placements DefaultMembers hands out in turn.
var memberTopologies = []struct{ provider, region, zone string }{
	{"aws", "us-east-1", "us-east-1a"},
	{"gcp", "europe-west1", "europe-west1-b"},
	{"azure", "japaneast", "japaneast-1"},
	{"aws", "us-west-2", "us-west-2b"},
	{"gcp", "asia-southeast1", "asia-southeast1-a"},
	{"azure", "westeurope", "westeurope-2"},
}

// DefaultMembers returns n members named member1..memberN, each with a distinct
// provider/region/zone. With full, all are full clusters and the last one's Nodes have
// GPUs.
func DefaultMembers(n int, full bool) []MemberOptions {
	members := make([]MemberOptions, n)
	for i := range members {
		t := memberTopologies[i%len(memberTopologies)]
		zone := t.zone
		if round := i / len(memberTopologies); round > 0 {
			zone += "-" + strconv.Itoa(round+1) // keep placements distinct beyond the table
		}
		members[i] = MemberOptions{
			Options:  Options{Name: "member" + strconv.Itoa(i+1), Full: full},
			Provider: t.provider,
			Region:   t.region,
			Zone:     zone,
		}
	}
	if full && n > 0 {
		members[n-1].GPUs = defaultGPUsPerNode
	}
	return members
}
