package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// FieldManager is the server-side apply field manager of objects this package writes.
const FieldManager = "flotilla-localcluster"

// InstallCRDs server-side applies every CustomResourceDefinition in paths (files, or
// directories whose .yaml, .yml and .json files are read, not recursively) and waits until
// each is Established. Other kinds of documents, such as a kustomization.yaml, are
// skipped. It returns the names of the CRDs.
//
// kube-apiserver holds back creates of a CRD's objects during the first two seconds after
// the CRD became Established (for HA setups), so the first create may take that long.
func (c *Cluster) InstallCRDs(ctx context.Context, paths ...string) ([]string, error) {
	docs, err := readCRDDocuments(paths)
	if err != nil {
		return nil, err
	}
	cs, err := apiextensionsclient.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	crds := cs.ApiextensionsV1().CustomResourceDefinitions()

	names := make([]string, 0, len(docs))
	for _, d := range docs {
		_, err := crds.Patch(ctx, d.name, types.ApplyPatchType, d.json,
			metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)})
		if err != nil {
			return nil, fmt.Errorf("cluster %s: applying CRD %s from %s: %w", c.Name, d.name, d.source, err)
		}
		names = append(names, d.name)
	}

	for _, name := range names {
		var last error
		err := wait.PollUntilContextTimeout(ctx, pollInterval, time.Minute, true, func(ctx context.Context) (bool, error) {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err
				return false, nil
			}
			last = crdEstablished(crd)
			return last == nil, nil
		})
		if err != nil {
			return nil, fmt.Errorf("cluster %s: CRD %s not established: %w (last: %v)", c.Name, name, err, last)
		}
	}
	c.log.printf("installed %d CRDs", len(names))
	return names, nil
}

// crdEstablished returns nil once crd is Established, else why not.
func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) error {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return nil
		}
	}
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
			return fmt.Errorf("names not accepted: %s", cond.Message)
		}
	}
	return errors.New("not yet Established")
}

// crdDocument is one CRD read from a file, as JSON.
type crdDocument struct {
	name, source string
	json         []byte
}

// readCRDDocuments reads the CRDs in paths; a CRD defined twice keeps its last definition.
func readCRDDocuments(paths []string) ([]crdDocument, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading CRDs: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("reading CRDs: %w", err)
		}
		for _, e := range entries {
			switch strings.ToLower(filepath.Ext(e.Name())) {
			case ".yaml", ".yml", ".json":
				if !e.IsDir() {
					files = append(files, filepath.Join(p, e.Name()))
				}
			}
		}
	}

	var docs []crdDocument
	for _, f := range files {
		found, err := readCRDFile(f)
		if err != nil {
			return nil, err
		}
		for _, d := range found {
			docs = slices.DeleteFunc(docs, func(o crdDocument) bool { return o.name == d.name })
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// readCRDFile returns the CRDs among the YAML or JSON documents of path.
func readCRDFile(path string) ([]crdDocument, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading CRDs: %w", err)
	}
	defer f.Close()

	var docs []crdDocument
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for i := 1; ; i++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		doc, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", path, i, err)
		}
		if string(doc) == "null" {
			continue // only comments
		}
		var head struct {
			metav1.TypeMeta
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", path, i, err)
		}
		if head.APIVersion != apiextensionsv1.SchemeGroupVersion.String() || head.Kind != "CustomResourceDefinition" {
			continue
		}
		if head.Metadata.Name == "" {
			return nil, fmt.Errorf("%s, document %d: CustomResourceDefinition without a name", path, i)
		}
		docs = append(docs, crdDocument{name: head.Metadata.Name, source: path, json: doc})
	}
}
