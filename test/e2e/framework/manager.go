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

var (
	managerBuild    sync.Once
	managerBinary   string
	managerBuildErr error
)

// BuildManager builds the manager (the repository root's main package, as `make build`
// does) once per test process and returns the binary's path.
func BuildManager(ctx context.Context) (string, error) {
	managerBuild.Do(func() {
		dir, err := os.MkdirTemp("", "flotilla-manager-bin-")
		if err != nil {
			managerBuildErr = err
			return
		}
		managerBinary = filepath.Join(dir, "manager")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", managerBinary, ".")
		cmd.Dir = RepoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			managerBuildErr = fmt.Errorf("go build .: %w\n%s", err, out)
		}
	})
	return managerBinary, managerBuildErr
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
