package hostguard

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceAccountOf splits a ServiceAccount's username into its namespace and name; ok is
// false for any other user.
func ServiceAccountOf(username string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(username, "system:serviceaccount:")
	if !found {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok && namespace != "" && name != "" && !strings.Contains(name, ":")
}

// Ensurer creates the guard for the manager's own identity when it is missing: an install
// path that cannot ship admission policies (an OLM bundle) still gets one. It never updates
// or deletes a guard that exists (the manager has no right to: RBAC gives it update only on
// the hold's objects, by name), and does nothing when the manager runs as anything but a
// ServiceAccount (an admin's kubeconfig, as in `make run`: a guard on an admin would deny the
// admin).
type Ensurer struct {
	Client client.Client
}

// Start runs once, at start-up.
func (e *Ensurer) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("guard")
	if err := e.ensure(ctx, log.Info); err != nil {
		// Not fatal: RBAC still limits the manager; the admin is told what to apply.
		log.Error(err, "Cannot make sure the manager's guard is in place; apply config/rbac/manager_guard.yaml", "guard", Name)
	}
	return nil
}

// NeedLeaderElection is false: every replica checks, and creating twice is harmless.
func (e *Ensurer) NeedLeaderElection() bool { return false }

func (e *Ensurer) ensure(ctx context.Context, info func(string, ...any)) error {
	review := &authenticationv1.SelfSubjectReview{}
	if err := e.Client.Create(ctx, review); err != nil {
		return fmt.Errorf("who am I (SelfSubjectReview): %w", err)
	}
	ns, sa, ok := ServiceAccountOf(review.Status.UserInfo.Username)
	if !ok {
		info("Not a ServiceAccount: the guard is not created for this identity", "user", review.Status.UserInfo.Username)
		return nil
	}
	existing := &admissionv1.ValidatingAdmissionPolicy{}
	err := e.Client.Get(ctx, types.NamespacedName{Name: Name}, existing)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	policy, binding := Policy(ns, sa)
	for _, o := range []client.Object{policy, binding} {
		if err := e.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, Name, err)
		}
	}
	info("Created the manager's guard: no install path shipped it", "guard", Name, "user", review.Status.UserInfo.Username)
	return nil
}
