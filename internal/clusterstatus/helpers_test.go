package clusterstatus

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// list builds a ResourceList from "name=quantity" pairs.
func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func node(name string, ready bool, allocatable corev1.ResourceList) corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Allocatable: allocatable,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}},
		},
	}
}

func pod(name, nodeName string, phase corev1.PodPhase, requests ...corev1.ResourceList) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: nodeName},
		Status:     corev1.PodStatus{Phase: phase},
	}
	for i, r := range requests {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: "c" + strconv.Itoa(i), Resources: corev1.ResourceRequirements{Requests: r},
		})
	}
	return p
}

// pager serves items in pages the way an apiserver does: Limit items a page and an opaque
// continue token. It honours the NonTerminalPods field selector, counts calls, and can make
// one continue token expire.
type pager[T any] struct {
	items    []T
	phase    func(*T) corev1.PodPhase
	calls    int
	maxLimit int64
	expireAt int // the call (1-based) that answers 410 Gone; 0: never
}

func (p *pager[T]) page(opts metav1.ListOptions) ([]T, string, error) {
	p.calls++
	p.maxLimit = max(p.maxLimit, opts.Limit)
	if p.expireAt == p.calls {
		return nil, "", apierrors.NewResourceExpired("the provided continue parameter is too old")
	}
	start := 0
	if opts.Continue != "" {
		var err error
		if start, err = strconv.Atoi(opts.Continue); err != nil {
			return nil, "", fmt.Errorf("bad continue %q", opts.Continue)
		}
	}
	sel, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return nil, "", err
	}
	var out []T
	i := start
	for ; i < len(p.items) && (opts.Limit == 0 || int64(len(out)) < opts.Limit); i++ {
		if p.phase != nil && !sel.Matches(fields.Set{"status.phase": string(p.phase(&p.items[i]))}) {
			continue
		}
		out = append(out, p.items[i])
	}
	next := ""
	if i < len(p.items) {
		next = strconv.Itoa(i)
	}
	return out, next, nil
}

func listers(nodes *pager[corev1.Node], pods *pager[corev1.Pod]) Listers {
	pods.phase = func(p *corev1.Pod) corev1.PodPhase { return p.Status.Phase }
	return Listers{
		Nodes: func(_ context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
			items, next, err := nodes.page(opts)
			if err != nil {
				return nil, err
			}
			return &corev1.NodeList{ListMeta: metav1.ListMeta{Continue: next}, Items: items}, nil
		},
		Pods: func(_ context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
			items, next, err := pods.page(opts)
			if err != nil {
				return nil, err
			}
			return &corev1.PodList{ListMeta: metav1.ListMeta{Continue: next}, Items: items}, nil
		},
	}
}
