package crd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/doccheck"
)

// docFiles are the markdown files whose YAML blocks must apply: the README and docs/.
func docFiles() []string {
	files := []string{filepath.Join("..", "..", "README.md")}
	Expect(filepath.WalkDir(filepath.Join("..", "..", "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})).To(Succeed())
	return files
}

// Every ```yaml block of the docs is one or more whole objects that this apiserver, with
// Flotilla's CRDs, accepts: each is created with a server-side dry run (its namespace made
// first). A block marked ```yaml fragment (part of an object, a kustomization, a kind whose CRD
// Flotilla does not ship) is skipped, and must say so in its info string.
var _ = Describe("YAML in the docs", func() {
	It("applies every yaml block of README.md and docs/ with a server-side dry run", func(ctx context.Context) {
		applied := 0
		for _, f := range docFiles() {
			src, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			for _, b := range doccheck.Parse(f, src).Blocks {
				if (b.Lang != "yaml" && b.Lang != "yml") || b.Has("fragment") {
					continue
				}
				where := fmt.Sprintf("%s:%d", f, b.Line)
				dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(b.Text)), 4096)
				for {
					u := &unstructured.Unstructured{}
					err := dec.Decode(&u.Object)
					if errors.Is(err, io.EOF) {
						break
					}
					Expect(err).NotTo(HaveOccurred(), "%s: not YAML (mark a block that is not whole objects ```yaml fragment)", where)
					if len(u.Object) == 0 {
						continue
					}
					Expect(u.GetAPIVersion()).NotTo(BeEmpty(), "%s: an object without apiVersion (mark a block that is not whole objects ```yaml fragment)", where)
					Expect(u.GetKind()).NotTo(BeEmpty(), "%s: an object without kind", where)
					if ns := u.GetNamespace(); ns != "" {
						createNamespace(ctx, ns)
					}
					Expect(k8sClient.Create(ctx, u, client.DryRunAll)).To(Succeed(), "%s: %s %s", where, u.GetKind(), u.GetName())
					applied++
				}
			}
		}
		Expect(applied).To(BeNumerically(">=", 10))
		GinkgoWriter.Printf("applied %d objects from the docs' yaml blocks\n", applied)
	})
})
