package detector

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Key identifies one template: its kind and its namespace/name.
type Key struct {
	GVK schema.GroupVersionKind
	types.NamespacedName
}

// String renders the key for logs.
func (k Key) String() string {
	return fmt.Sprintf("%s %s", k.GVK.Kind, k.NamespacedName)
}

// BindingName is the name of a template's ResourceBinding or ClusterResourceBinding:
// <name>-<kind>, lower case, as in Karmada.
func BindingName(kind, name string) string {
	n := name + "-" + strings.ToLower(kind)
	if len(n) > 253 {
		n = n[:253]
	}
	return n
}
