package join

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// LoadKubeconfig returns the REST config of a kubeconfig's context. An empty path follows
// kubectl's rules ($KUBECONFIG, then ~/.kube/config); an empty context is the current one.
func LoadKubeconfig(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		where := path
		if where == "" {
			where = "the default kubeconfig"
		}
		return nil, fmt.Errorf("load %s: %w", where, err)
	}
	return cfg, nil
}
