package scheduler_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/api/wellknown"
)

var _ = Describe("What the scheduler keeps of a binding", func() {
	It("is forgotten when the binding goes: the backoff of an unschedulable one, the status memo of any", func(ctx context.Context) {
		ns := newNamespace(ctx)
		nowhere := &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "none-has-it"}}}}
		var keys []types.NamespacedName
		for i := range 6 {
			name, p := fmt.Sprintf("churn-%d", i), weighted("m1")
			if i%2 == 0 {
				p = nowhere.DeepCopy()
			}
			Expect(c.Create(ctx, newBinding(ns, name, 1, p))).To(Succeed())
			keys = append(keys, types.NamespacedName{Namespace: ns, Name: name})
		}
		for i, key := range keys {
			Eventually(func(g Gomega) {
				g.Expect(get(ctx, ns, key.Name).Status.Conditions).To(ContainElement(HaveField("Type", wellknown.ConditionScheduled)))
				failures, observed := placer.Remembers(key)
				g.Expect(observed).To(BeTrue(), "status memo of %s", key)
				if i%2 == 0 {
					g.Expect(failures).To(BeNumerically(">", 0), "backoff of the unschedulable %s", key)
				}
			}).WithContext(ctx).Should(Succeed())
		}

		for _, key := range keys {
			Expect(c.Delete(ctx, get(ctx, ns, key.Name))).To(Succeed())
		}
		for _, key := range keys {
			Eventually(func(g Gomega) {
				failures, observed := placer.Remembers(key)
				g.Expect(failures).To(BeZero(), "backoff of %s", key)
				g.Expect(observed).To(BeFalse(), "status memo of %s", key)
			}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		}
	})
})
