// Package fleetview is the read-only side of `kubectl flotilla`: the logic of `status` (a
// template's propagation as a tree: template, policy, binding, one line per member's Work),
// `get` (the members' objects side by side, fetched in parallel through the host's member
// credentials and printed from the members' server-side Tables) and `describe cluster`,
// callable from tests without exec.
package fleetview

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillascheme "github.com/flotilla-io/flotilla/api/scheme"
)

// none is printed for what is not known or not reported.
const none = "-"

// Host holds the clients of the host cluster the views read.
type Host struct {
	Config *rest.Config
	// Client reads and watches Flotilla's kinds, Clusters and Secrets.
	Client client.WithWatch
	// Dynamic reads templates of any kind.
	Dynamic dynamic.Interface
	// Mapper resolves what users type (deploy, deployments.apps, Deployment) to a resource.
	Mapper meta.RESTMapper
}

// NewHost builds the host's clients from its REST config.
func NewHost(cfg *rest.Config) (*Host, error) {
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: flotillascheme.New()})
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	return &Host{Config: cfg, Client: cl, Dynamic: dyn, Mapper: mapper}, nil
}

// Resolve maps a resource as users type it (deploy, deployment, Deployment, deployments.apps,
// deployments.v1.apps) to its REST mapping in the host.
func (h *Host) Resolve(resource string) (*meta.RESTMapping, error) {
	arg := strings.ToLower(resource)
	var gvr schema.GroupVersionResource
	if full, gr := schema.ParseResourceArg(arg); full != nil {
		if g, err := h.Mapper.ResourceFor(*full); err == nil {
			gvr = g
		} else {
			gvr, err = h.Mapper.ResourceFor(gr.WithVersion(""))
			if err != nil {
				return nil, fmt.Errorf("the server doesn't have a resource type %q", resource)
			}
		}
	} else {
		g, err := h.Mapper.ResourceFor(gr.WithVersion(""))
		if err != nil {
			return nil, fmt.Errorf("the server doesn't have a resource type %q", resource)
		}
		gvr = g
	}
	gvk, err := h.Mapper.KindFor(gvr)
	if err != nil {
		return nil, err
	}
	return h.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

// SplitKindName accepts KIND/NAME or KIND NAME, as kubectl does.
func SplitKindName(args []string) (kind, name string, err error) {
	switch {
	case len(args) == 1 && strings.Count(args[0], "/") == 1:
		kind, name, _ = strings.Cut(args[0], "/")
	case len(args) == 2 && !strings.Contains(args[0], "/"):
		kind, name = args[0], args[1]
	default:
		return "", "", fmt.Errorf("expected KIND/NAME or KIND NAME, got %q", strings.Join(args, " "))
	}
	if kind == "" || name == "" {
		return "", "", fmt.Errorf("expected KIND/NAME or KIND NAME, got %q", strings.Join(args, " "))
	}
	return kind, name, nil
}
