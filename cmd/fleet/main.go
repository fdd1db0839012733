// Command fleet runs the persistent local fleet: a host cluster and member clusters on
// 127.0.0.1 that outlive the command, for `make fleet-up`, `make fleet-down` and
// `make demo`.
//
//	fleet up     [--members N] [--full] [--dir .fleet] [--crds config/crd/bases] [--bin-dir DIR]
//	fleet status [--dir .fleet]
//	fleet down   [--dir .fleet]
//
// `up` reuses a healthy fleet of the requested shape and otherwise stops whatever is left
// in the directory and starts afresh. The host runs kube-controller-manager (garbage
// collection, namespace deletion); with --full every member also runs a scheduler and kwok
// fake Nodes, so workloads become Ready.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/flotilla-io/flotilla/internal/localcluster"
)

const (
	defaultDir     = ".fleet"
	defaultCRDDir  = "config/crd/bases"
	defaultMembers = 3
	upTimeout      = 5 * time.Minute
	statusTimeout  = 10 * time.Second
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  fleet up     [--members N] [--full] [--dir .fleet] [--crds config/crd/bases] [--bin-dir DIR]
  fleet status [--dir .fleet]
  fleet down   [--dir .fleet]`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("fleet "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", defaultDir, "directory holding the fleet's state")
	switch cmd {
	case "up":
		members := fs.Int("members", defaultMembers, "number of member clusters")
		full := fs.Bool("full", false, "members run controllers, a scheduler and fake nodes, so workloads become Ready")
		crds := fs.String("crds", defaultCRDDir, "directory of CRDs to install into the host; skipped if missing")
		binDir := fs.String("bin-dir", "", "directory of the Kubernetes binaries (default: see internal/localcluster)")
		if err := fs.Parse(args); err != nil {
			return err
		}
		if *members < 0 {
			return errors.New("--members must not be negative")
		}
		return up(ctx, stdout, stderr, upOptions{dir: *dir, members: *members, full: *full, crds: *crds, binDir: *binDir})
	case "status":
		if err := fs.Parse(args); err != nil {
			return err
		}
		return status(ctx, stdout, *dir)
	case "down":
		if err := fs.Parse(args); err != nil {
			return err
		}
		return down(stdout, *dir)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
}

type upOptions struct {
	dir, crds, binDir string
	members           int
	full              bool
}

func up(ctx context.Context, stdout, stderr io.Writer, o upOptions) error {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	want := fleetOptions(dir, o, stderr)

	if f, err := localcluster.LoadFleet(dir); err == nil {
		checkCtx, cancel := context.WithTimeout(ctx, statusTimeout)
		reason := reuseProblem(checkCtx, f, want)
		cancel()
		if reason == "" {
			fmt.Fprintf(stdout, "Reusing the running fleet in %s.\n", dir)
			printFleet(stdout, f)
			return nil
		}
		fmt.Fprintf(stderr, "fleet: not reusing %s: %s; starting afresh\n", dir, reason)
	}
	if err := wipe(dir); err != nil {
		return err
	}

	if want.CRDDir != "" {
		if _, err := os.Stat(want.CRDDir); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "fleet: no CRDs installed: %s does not exist (yet)\n", want.CRDDir)
			want.CRDDir = ""
		}
	}

	ctx, cancel := context.WithTimeout(ctx, upTimeout)
	defer cancel()
	f, err := localcluster.StartFleet(ctx, want)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Fleet started in %s; it keeps running until `fleet down --dir %s`.\n", dir, o.dir)
	printFleet(stdout, f)
	return nil
}

// fleetOptions is the fleet `up` starts.
func fleetOptions(dir string, o upOptions, log io.Writer) localcluster.FleetOptions {
	crds := o.crds
	if crds != "" {
		if abs, err := filepath.Abs(crds); err == nil {
			crds = abs
		}
	}
	return localcluster.FleetOptions{
		Dir:     dir,
		BinDir:  o.binDir,
		CRDDir:  crds,
		Host:    localcluster.Options{ControllerManager: true},
		Members: localcluster.DefaultMembers(o.members, o.full),
		Detach:  true,
		Log:     log,
	}
}

// reuseProblem returns why the running fleet f cannot serve as want, or "".
func reuseProblem(ctx context.Context, f *localcluster.Fleet, want localcluster.FleetOptions) string {
	if len(f.Members) != len(want.Members) {
		return fmt.Sprintf("it has %d members, %d wanted", len(f.Members), len(want.Members))
	}
	if !f.Host.ControllerManager {
		return "its host runs no kube-controller-manager"
	}
	for i, m := range f.Members {
		if w := want.Members[i]; m.Name != w.Name || m.Full != w.Full {
			return fmt.Sprintf("member %s (full=%t) differs from the wanted %s (full=%t)", m.Name, m.Full, w.Name, w.Full)
		}
	}
	if err := f.Healthy(ctx); err != nil {
		return strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return ""
}

func status(ctx context.Context, stdout io.Writer, dir string) error {
	f, err := localcluster.LoadFleet(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no fleet in %s (start one with `fleet up`)", dir)
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()

	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tENDPOINT\tMODE\tPLACEMENT\tPROCESSES\tSTATUS")
	unhealthy := 0
	for i, c := range f.Clusters() {
		placement := "-"
		if i > 0 {
			m := f.MemberOptions[i-1]
			placement = m.Provider + "/" + m.Region + "/" + m.Zone
			if m.GPUs > 0 {
				placement += fmt.Sprintf(" (%d GPUs/node)", m.GPUs)
			}
		}
		var procs []string
		for _, p := range c.Processes() {
			procs = append(procs, fmt.Sprintf("%s:%d", p.Name, p.PID))
		}
		state := "healthy"
		if err := c.Healthy(ctx); err != nil {
			state = strings.ReplaceAll(err.Error(), "\n", "; ")
			unhealthy++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Endpoint, mode(c), placement, strings.Join(procs, " "), state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if unhealthy > 0 {
		return fmt.Errorf("%d of %d clusters unhealthy; `fleet up` restarts the fleet", unhealthy, len(f.Clusters()))
	}
	return nil
}

func mode(c *localcluster.Cluster) string {
	switch {
	case c.Full:
		return "full"
	case c.ControllerManager:
		return "apiserver+kcm"
	}
	return "apiserver"
}

func down(stdout io.Writer, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stdout, "No fleet in %s.\n", dir)
		return nil
	}
	if err := wipe(dir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Fleet in %s stopped and removed.\n", dir)
	return nil
}

// wipe stops every process recorded in dir and removes it. A directory that holds
// anything but a fleet is left alone.
func wipe(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 && !isFleetDir(dir) {
		return fmt.Errorf("%s is not empty and holds no fleet; not touching it", dir)
	}
	if err := localcluster.StopProcessesIn(dir); err != nil {
		return fmt.Errorf("stopping the processes of %s: %w", dir, err)
	}
	return os.RemoveAll(dir)
}

// isFleetDir reports whether dir holds a fleet's state file or a cluster's credentials (a
// fleet whose `up` was interrupted).
func isFleetDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, localcluster.StateFile)); err == nil {
		return true
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*", "pki", "ca.crt"))
	return len(m) > 0
}

func printFleet(w io.Writer, f *localcluster.Fleet) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var paths []string
	for i, c := range f.Clusters() {
		path := f.KubeconfigPath(c.Name)
		paths = append(paths, path)
		placement := ""
		if i > 0 {
			m := f.MemberOptions[i-1]
			placement = m.Provider + "/" + m.Region + "/" + m.Zone
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Name, c.Endpoint, mode(c), placement, path)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nUse the host:\n  export KUBECONFIG=%s\n", paths[0])
	fmt.Fprintf(w, "Or every cluster as a context (kubectl --context %s ...):\n  export KUBECONFIG=%s\n",
		f.Clusters()[len(paths)-1].Name, strings.Join(paths, string(filepath.ListSeparator)))
}
