package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

var managerBuild binaryBuild

// BuildManager builds the manager (the repository root's main package, as `make build`
// does) once per test process and returns the binary's path.
func BuildManager(ctx context.Context) (string, error) {
	return managerBuild.build(ctx, "manager", ".")
}

// StartManagerProcess starts the manager binary as a process of its own with the host
// kubeconfig at kubeconfig (the manager's ServiceAccount's: see ManagerKubeconfig) and these
// flags; its output goes to log.
func StartManagerProcess(ctx context.Context, kubeconfig string, log io.Writer, args ...string) (*Process, error) {
	bin, err := BuildManager(ctx)
	if err != nil {
		return nil, err
	}
	return startProcess(bin, log, append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// binaryBuild builds one of the project's binaries once per test process.
type binaryBuild struct {
	once sync.Once
	path string
	err  error
}

// build runs `go build -o <temp dir>/name pkg` from the repository root the first time, and
// returns the binary's path (or the first build's error) every time.
func (b *binaryBuild) build(ctx context.Context, name, pkg string) (string, error) {
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "flotilla-"+name+"-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.path, pkg)
		cmd.Dir = RepoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	})
	return b.path, b.err
}
