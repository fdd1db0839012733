package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-io/flotilla/internal/doccheck"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// The docs test: every shell block marked `sh test` in docs/getting-started.md and
// docs/guides/*.md runs here, as a reader would type it, against this suite's fleet, with a
// real kubectl (built from k8s.io/kubectl, test/tools/kubectl) and the plugin kubectl-flotilla
// on PATH. The blocks of one file run in order in one bash (set -euo pipefail), so a failing
// command fails the file; the files run side by side, each in a namespace of its own. The shell
// gets what the getting-started page tells readers to set: KUBECONFIG (the host), FLEET (the
// directory of the members' kubeconfigs) and PATH; its working directory is the repository.
var _ = Describe("Docs: the runnable blocks of getting-started and the guides", func() {
	It("runs every `sh test` block against the fleet", func(ctx context.Context) {
		root := framework.RepoRoot()
		bin := GinkgoT().TempDir()
		start := time.Now()
		// Both at once: linking kubectl is most of the time (none when make test built them
		// before the first package: framework.PrebuiltEnv). The scripts find them in bin.
		var builds sync.WaitGroup
		buildErrs := make([]error, 2)
		for i, b := range []struct {
			out   string
			build func(context.Context) (string, error)
		}{{"kubectl", framework.BuildKubectl}, {"kubectl-flotilla", framework.BuildPlugin}} {
			builds.Add(1)
			go func() {
				defer builds.Done()
				path, err := b.build(ctx)
				if err == nil {
					err = os.Symlink(path, filepath.Join(bin, b.out))
				}
				buildErrs[i] = err
			}()
		}
		builds.Wait()
		Expect(buildErrs).To(HaveEach(BeNil()))
		built := time.Since(start)

		files, err := filepath.Glob(filepath.Join(root, "docs", "guides", "*.md"))
		Expect(err).NotTo(HaveOccurred())
		files = append([]string{filepath.Join(root, "docs", "getting-started.md")}, files...)
		scripts := map[string]string{}
		blocks := 0
		for _, f := range files {
			src, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			rel, _ := filepath.Rel(root, f)
			var script strings.Builder
			for _, b := range doccheck.Parse(rel, src).Blocks {
				if !b.IsShell() || !b.Has("test") {
					continue
				}
				fmt.Fprintf(&script, "echo '### %s:%d'\n%s", rel, b.Line, b.Text)
				blocks++
			}
			if script.Len() > 0 {
				scripts[rel] = "set -euo pipefail -x\n" + script.String()
			}
		}
		Expect(scripts).To(HaveKey("docs/getting-started.md"), "getting-started.md has no `sh test` block")

		home := GinkgoT().TempDir()
		environ := append(os.Environ(),
			"KUBECONFIG="+env.Fleet.KubeconfigPath(env.Fleet.Host.Name),
			"FLEET="+env.Fleet.Dir,
			"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"HOME="+home,
		)
		type result struct {
			out  []byte
			err  error
			took time.Duration
		}
		results := map[string]result{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		runStart := time.Now()
		for name, script := range scripts {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				fctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
				defer cancel()
				t0 := time.Now()
				cmd := exec.CommandContext(fctx, "bash", "-c", script)
				cmd.Dir, cmd.Env = root, environ
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				mu.Lock()
				results[name] = result{out: out.Bytes(), err: err, took: time.Since(t0)}
				mu.Unlock()
			}()
		}
		wg.Wait()
		ran := time.Since(runStart)

		names := make([]string, 0, len(results))
		for n := range results {
			names = append(names, n)
		}
		sort.Strings(names)
		var failed []string
		for _, n := range names {
			r := results[n]
			GinkgoWriter.Printf("=== %s (%s)\n%s\n", n, r.took.Round(100*time.Millisecond), r.out)
			if r.err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v (its output is above)", n, r.err))
			}
		}
		GinkgoWriter.Printf("DOCS: %d `sh test` blocks in %d files ran in %s (the two binaries built in %s)\n",
			blocks, len(scripts), ran.Round(100*time.Millisecond), built.Round(100*time.Millisecond))
		Expect(failed).To(BeEmpty())
	})
})
