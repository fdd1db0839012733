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
	managerBuild binaryBuild
	pluginBuild  binaryBuild
	kubectlBuild binaryBuild
)

// PrebuiltEnv names a directory of the project's binaries built once for a whole test run:
// hack/test.sh (make test) builds manager, agent, kubectl-flotilla and kubectl there before
// the first test, so that the packages that run them (test/e2e, test/soak, test/install,
// test/shard, controllers/agent) do not each link them again on the way. A binary missing
// there is built as usual.
const PrebuiltEnv = "FLOTILLA_TEST_BINS"

// BuildManager builds the manager (the repository root's main package, as `make build`
// does) once per test process and returns the binary's path.
func BuildManager(ctx context.Context) (string, error) {
	return managerBuild.build(ctx, "manager", ".")
}

// BuildPlugin builds the kubectl plugin (cmd/kubectl-flotilla) once per test process and
// returns the binary's path.
func BuildPlugin(ctx context.Context) (string, error) {
	return pluginBuild.build(ctx, "kubectl-flotilla", "./cmd/kubectl-flotilla")
}

// BuildKubectl builds the test's kubectl (test/tools/kubectl) once per test process and
// returns the binary's path.
func BuildKubectl(ctx context.Context) (string, error) {
	return kubectlBuild.build(ctx, "kubectl", "./test/tools/kubectl")
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

// build runs `go build -o <temp dir>/name pkg` from the repository root the first time (or
// takes name from PrebuiltEnv's directory), and returns the binary's path (or the first
// build's error) every time.
func (b *binaryBuild) build(ctx context.Context, name, pkg string) (string, error) {
	b.once.Do(func() {
		if dir := os.Getenv(PrebuiltEnv); dir != "" {
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
				b.path = filepath.Join(dir, name)
				return
			}
		}
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
