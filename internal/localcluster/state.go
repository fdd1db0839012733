package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// FleetState is what StartFleet records in Dir/state.json: enough for another process to
// find the fleet's clusters, check them and stop them (see LoadFleet).
type FleetState struct {
	Dir       string         `json:"dir"`
	StartedAt time.Time      `json:"startedAt"`
	Host      ClusterState   `json:"host"`
	Members   []ClusterState `json:"members"`
}

// ClusterState describes one cluster of a fleet.
type ClusterState struct {
	Name          string `json:"name"`
	Dir           string `json:"dir"`
	Endpoint      string `json:"endpoint"`
	Kubeconfig    string `json:"kubeconfig"`
	APIServerPort int    `json:"apiServerPort"`
	EtcdPort      int    `json:"etcdPort"`
	EtcdPeerPort  int    `json:"etcdPeerPort"`
	Full          bool   `json:"full"`
	// ControllerManager is true when kube-controller-manager runs (always when Full).
	ControllerManager bool   `json:"controllerManager"`
	Provider          string `json:"provider,omitempty"`
	Region            string `json:"region,omitempty"`
	Zone              string `json:"zone,omitempty"`
	GPUs              int    `json:"gpus,omitempty"`
	// BinDir and ExtraAPIServerArgs let a loaded cluster restart its apiserver.
	BinDir             string   `json:"binDir"`
	ExtraAPIServerArgs []string `json:"extraAPIServerArgs,omitempty"`
	// ExtraControllerManagerArgs let it restart its kube-controller-manager the same way.
	ExtraControllerManagerArgs []string      `json:"extraControllerManagerArgs,omitempty"`
	Processes                  []ProcessInfo `json:"processes"`
}

// State describes the fleet as it runs now.
func (f *Fleet) State() *FleetState {
	s := &FleetState{Dir: f.Dir, StartedAt: f.StartedAt, Host: f.clusterState(f.Host)}
	for i, m := range f.Members {
		cs := f.clusterState(m)
		if i < len(f.MemberOptions) {
			mo := f.MemberOptions[i]
			cs.Provider, cs.Region, cs.Zone, cs.GPUs = mo.Provider, mo.Region, mo.Zone, mo.GPUs
		}
		s.Members = append(s.Members, cs)
	}
	return s
}

func (f *Fleet) clusterState(c *Cluster) ClusterState {
	return ClusterState{
		Name:                       c.Name,
		Dir:                        c.Dir,
		Endpoint:                   c.Endpoint,
		Kubeconfig:                 f.KubeconfigPath(c.Name),
		APIServerPort:              c.APIServerPort,
		EtcdPort:                   c.EtcdPort,
		EtcdPeerPort:               c.etcdPeerPort,
		Full:                       c.Full,
		ControllerManager:          c.ControllerManager,
		BinDir:                     c.binDir,
		ExtraAPIServerArgs:         c.extraArgs,
		ExtraControllerManagerArgs: c.extraKCMArgs,
		Processes:                  c.Processes(),
	}
}

// write stores s at path atomically.
func (s *FleetState) write(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadFleetState reads dir/state.json.
func ReadFleetState(dir string) (*FleetState, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return nil, err
	}
	var s FleetState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", filepath.Join(dir, StateFile), err)
	}
	return &s, nil
}

// LoadFleet attaches to a fleet another process started with StartFleet in dir (usually
// detached, by `fleet up`). The clusters' running processes are adopted from their pid
// files; Healthy tells whether all of them still run, Stop stops them, and a member's
// StopAPIServer and StartAPIServer work as for a fleet started here. Processes are only
// signalled while their command line still points into dir.
func LoadFleet(dir string) (*Fleet, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s, err := ReadFleetState(dir)
	if err != nil {
		return nil, err
	}
	f := &Fleet{Dir: dir, StartedAt: s.StartedAt}
	if f.Host, err = loadCluster(s.Host); err != nil {
		return nil, err
	}
	for _, ms := range s.Members {
		m, err := loadCluster(ms)
		if err != nil {
			return nil, err
		}
		f.Members = append(f.Members, m)
		f.MemberOptions = append(f.MemberOptions, MemberOptions{
			Options: Options{
				Name: ms.Name, Dir: ms.Dir, BinDir: ms.BinDir, Full: ms.Full, ControllerManager: ms.ControllerManager,
				Detach: true,
			},
			Provider: ms.Provider, Region: ms.Region, Zone: ms.Zone, GPUs: ms.GPUs,
		})
	}
	return f, nil
}

// loadCluster rebuilds a Cluster from its recorded state and adopts its running processes.
func loadCluster(s ClusterState) (*Cluster, error) {
	if s.Name == "" || s.Dir == "" || s.Endpoint == "" {
		return nil, errors.New("incomplete cluster record in " + StateFile)
	}
	files := pkiPaths(filepath.Join(s.Dir, "pki"))
	creds, err := readCredentials(files)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", s.Name, err)
	}
	c := &Cluster{
		Name:              s.Name,
		Dir:               s.Dir,
		Endpoint:          s.Endpoint,
		CAData:            creds.caPEM,
		AdminToken:        creds.adminToken,
		KubeconfigPath:    filepath.Join(s.Dir, "kubeconfig"),
		APIServerPort:     s.APIServerPort,
		EtcdPort:          s.EtcdPort,
		Full:              s.Full,
		ControllerManager: s.ControllerManager || s.Full,
		binDir:            s.BinDir,
		fixedPorts:        true,
		startTimeout:      DefaultStartTimeout,
		etcdPeerPort:      s.EtcdPeerPort,
		extraArgs:         slices.Clone(s.ExtraAPIServerArgs),
		extraKCMArgs:      slices.Clone(s.ExtraControllerManagerArgs),
		detach:            true,
		files:             files,
		log:               newLogger(nil, s.Name),
		procs:             map[string]*process{},
	}
	for _, name := range processOrder {
		p, err := adoptProcess(filepath.Join(s.Dir, runDir, name+".pid"), s.Dir)
		if err == nil {
			c.procs[name] = p
		}
	}
	return c, nil
}
