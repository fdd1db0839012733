package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Names of the files a cluster needs in its binary directory.
const (
	binEtcd              = "etcd"
	binAPIServer         = "kube-apiserver"
	binControllerManager = "kube-controller-manager"
	binScheduler         = "kube-scheduler"
	binKwok              = "kwok"
	kwokStagesFile       = "kwok-stages.yaml"
)

// Environment variables consulted, in this order, when Options.BinDir is empty.
const (
	// EnvBinDir names a directory holding the binaries built by hack/k8s-bins.sh.
	EnvBinDir = "FLOTILLA_K8S_BINS"
	// EnvKubebuilderAssets is the directory setup-envtest fills; it usually lacks what
	// full clusters need, in which case the next candidate is tried.
	EnvKubebuilderAssets = "KUBEBUILDER_ASSETS"
)

// buildHint tells the reader of an error how to get the binaries.
const buildHint = "build them with `bash hack/k8s-bins.sh bin/k8s` from the repository root, or set " + EnvBinDir

// requiredFiles lists what a cluster needs in its binary directory.
func requiredFiles(full bool) []string {
	if !full {
		return []string{binEtcd, binAPIServer}
	}
	return []string{binEtcd, binAPIServer, binControllerManager, binScheduler, binKwok, kwokStagesFile}
}

// ResolveBinDir returns the directory holding the binaries a cluster needs (all of them
// when full is true). An explicit dir must hold them all; otherwise $FLOTILLA_K8S_BINS,
// $KUBEBUILDER_ASSETS and <repository root>/bin/k8s are tried in that order and the first
// complete one wins.
func ResolveBinDir(dir string, full bool) (string, error) {
	return resolveBinDir(dir, requiredFiles(full))
}

// resolveBinDir implements ResolveBinDir for the files in need.
func resolveBinDir(dir string, need []string) (string, error) {
	if dir != "" {
		if missing := missingFiles(dir, need); len(missing) > 0 {
			return "", fmt.Errorf("binary dir %s lacks %s; %s", dir, strings.Join(missing, ", "), buildHint)
		}
		return filepath.Abs(dir)
	}

	type candidate struct{ origin, dir string }
	var candidates []candidate
	for _, env := range []string{EnvBinDir, EnvKubebuilderAssets} {
		if v := os.Getenv(env); v != "" {
			candidates = append(candidates, candidate{"$" + env, v})
		}
	}
	if root, err := repoRoot(); err == nil {
		candidates = append(candidates, candidate{"repository", filepath.Join(root, "bin", "k8s")})
	}

	var problems []string
	for _, c := range candidates {
		missing := missingFiles(c.dir, need)
		if len(missing) == 0 {
			return filepath.Abs(c.dir)
		}
		problems = append(problems, fmt.Sprintf("%s (%s) lacks %s", c.dir, c.origin, strings.Join(missing, ", ")))
	}
	if len(problems) == 0 {
		return "", errors.New("no binary dir found: Options.BinDir, $" + EnvBinDir + " and $" + EnvKubebuilderAssets +
			" are unset and no go.mod was found above the working directory; " + buildHint)
	}
	return "", fmt.Errorf("no usable binary dir: %s; %s", strings.Join(problems, "; "), buildHint)
}

// missingFiles returns the names in need that are not regular files (after following
// symlinks) in dir.
func missingFiles(dir string, need []string) []string {
	var missing []string
	for _, name := range need {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() {
			missing = append(missing, name)
		}
	}
	return missing
}

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
