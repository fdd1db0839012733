package clusterstatus

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/api/wellknown"
)

// Health is what the cluster controller knows of its connection to a member after one probe.
type Health struct {
	// ConnectError says why no connection could be built: no Secret, no token, no endpoint.
	// A member without a connection is not ready, whatever earlier probes said.
	ConnectError error
	// Probed is true once a probe ran on a connection.
	Probed bool
	// Healthy is true when the last probe succeeded.
	Healthy bool
	// Down is true once FailureThreshold probes in a row failed.
	Down bool
	// Failures counts the probes in a row that failed.
	Failures int
	// LastError is the last probe's error.
	LastError error
}

// Condition messages.
const (
	messageReady   = "Cluster is healthy and ready to accept workloads"
	messageWaiting = "Waiting for the member cluster to answer a health probe"
)

// ReadyCondition returns the Ready condition that h calls for, given the condition as it is
// (nil when there is none yet). ObservedGeneration and LastTransitionTime are left for
// meta.SetStatusCondition and the caller.
//
// It is smoothed: a failed probe changes nothing until the member is Down (FailureThreshold
// failures in a row), so one lost probe does not taint the member and move its workloads.
// A Down member that answered with an HTTP error (its /readyz failed, or it rejected the
// credentials) is False with reason ClusterNotReady; one that did not answer at all is
// Unknown with reason ClusterNotReachable: the control plane cannot tell how it is.
func ReadyCondition(prev *metav1.Condition, h Health) metav1.Condition {
	cond := metav1.Condition{Type: wellknown.ClusterConditionReady}
	switch {
	case h.ConnectError != nil:
		cond.Status, cond.Reason = metav1.ConditionFalse, wellknown.ClusterReasonNotReady
		cond.Message = "Cannot connect to the member cluster: " + h.ConnectError.Error()
	case h.Healthy:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, wellknown.ClusterReasonReady, messageReady
	case !h.Down && prev != nil:
		// Below the failure threshold: keep what was last concluded.
		cond.Status, cond.Reason, cond.Message = prev.Status, prev.Reason, prev.Message
	case !h.Probed || h.LastError == nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, wellknown.ClusterReasonNotReachable, messageWaiting
	case !h.Down:
		cond.Status, cond.Reason = metav1.ConditionUnknown, wellknown.ClusterReasonNotReachable
		cond.Message = fmt.Sprintf("%s: %v", messageWaiting, h.LastError)
	case Answered(h.LastError):
		cond.Status, cond.Reason = metav1.ConditionFalse, wellknown.ClusterReasonNotReady
		cond.Message = fmt.Sprintf("Member cluster is not healthy (%d failed probes in a row): %s", h.Failures, explain(h.LastError))
	default:
		cond.Status, cond.Reason = metav1.ConditionUnknown, wellknown.ClusterReasonNotReachable
		cond.Message = fmt.Sprintf("Cannot reach the member cluster's apiserver (%d failed probes in a row): %v", h.Failures, h.LastError)
	}
	return cond
}

// Answered reports whether err carries an HTTP status from the member's apiserver, as
// opposed to no answer at all: a refused connection, a timeout, a TLS or DNS failure.
func Answered(err error) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s)
}

// explain adds what to do to the probe errors that have a known remedy.
func explain(err error) string {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Sprintf("the member rejected the control plane's token (401 Unauthorized): %v; "+
			"rotate it with `kubectl flotilla join <cluster> --cluster-kubeconfig <member kubeconfig>`", err)
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("the control plane's ServiceAccount may not read /readyz (403 Forbidden): %v; "+
			"a starting apiserver answers so until it has loaded its RBAC rules, otherwise re-run `kubectl flotilla join <cluster>` to restore its ClusterRole", err)
	}
	return err.Error()
}
