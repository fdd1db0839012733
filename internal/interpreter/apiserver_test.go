package interpreter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// This file restates, for tests, what kube-apiserver v1.36 checks when a status is written
// through the status subresource of the kinds whose aggregated status Flotilla writes on
// templates. The rules were read in the Kubernetes source (k8s.io/kubernetes v1.36.3):
//
//   - pkg/apis/apps/validation: ValidateDeploymentStatusUpdate, ValidateStatefulSetStatusUpdate,
//     ValidateReplicaSetStatusUpdate, ValidateDaemonSetStatusUpdate.
//   - pkg/apis/policy/validation: ValidatePodDisruptionBudgetStatusUpdate, which holds
//     conditions to the metav1.Condition rules (apimachinery meta/v1/validation
//     ValidateConditions).
//   - pkg/apis/core/validation: ValidateServiceStatusUpdate (ValidateLoadBalancerStatus),
//     ValidatePersistentVolumeClaimStatusUpdate; pkg/apis/networking/validation:
//     ValidateIngressLoadBalancerStatus. The CronJob status strategy validates nothing.
//   - pkg/apis/batch/validation: ValidateJobUpdateStatus, with the JobStatusValidationOptions
//     that pkg/registry/batch/job/strategy.go (getStatusValidationOptions) turns on when the
//     JobManagedBy feature is on, as it is, locked, since 1.35. Most of those rules apply only
//     when the fields they are about change; the others always.
//
// The status must also decode into the API type: right JSON types, int32 counters in range,
// times in RFC 3339. Unknown fields would be dropped by the apiserver; here they fail too.

// statusUpdateErrors returns the rules an update of the template's status from oldStatus to
// newStatus breaks. template carries the spec (the status subresource keeps the stored one);
// its own status is ignored. oldStatus nil is the empty status of a new object.
func statusUpdateErrors(t testing.TB, template *unstructured.Unstructured, oldStatus, newStatus map[string]any) []string {
	t.Helper()
	withStatus := func(status map[string]any) *unstructured.Unstructured {
		obj := template.DeepCopy()
		if status == nil {
			delete(obj.Object, "status")
		} else {
			obj.Object["status"] = status
		}
		return obj
	}
	obj, old := withStatus(newStatus), withStatus(oldStatus)
	switch groupKind(template) {
	case deploymentKind:
		var n, o appsv1.Deployment
		if err := decodeStrict(obj, &n); err != nil {
			return []string{err.Error()}
		}
		mustDecode(t, old, &o)
		return deploymentStatusErrors(n.Status, o.Status)
	case statefulSetKind:
		var n, o appsv1.StatefulSet
		if err := decodeStrict(obj, &n); err != nil {
			return []string{err.Error()}
		}
		mustDecode(t, old, &o)
		return statefulSetStatusErrors(n.Status, o.Status)
	case replicaSetKind:
		var n appsv1.ReplicaSet
		if err := decodeStrict(obj, &n); err != nil {
			return []string{err.Error()}
		}
		return replicaSetStatusErrors(n.Status)
	case daemonSetKind:
		var n, o appsv1.DaemonSet
		if err := decodeStrict(obj, &n); err != nil {
			return []string{err.Error()}
		}
		mustDecode(t, old, &o)
		return daemonSetStatusErrors(n.Status, o.Status)
	case pdbKind:
		var n policyv1.PodDisruptionBudget
		if err := decodeStrict(obj, &n); err != nil {
			return []string{err.Error()}
		}
		return pdbStatusErrors(n.Status)
	case jobKind:
		var n, o batchv1.Job
		if err := decodeStrict(obj, &n); err != nil {
			return []string{err.Error()}
		}
		mustDecode(t, old, &o)
		return jobStatusErrors(&n, &o)
	case serviceKind:
		var n corev1.Service
		if err := decodeStrict(obj, &n); err != nil {
			return []string{err.Error()}
		}
		return serviceStatusErrors(&n)
	case ingressKind:
		var n networkingv1.Ingress
		if err := decodeStrict(obj, &n); err != nil {
			return []string{err.Error()}
		}
		var r rules
		for i, in := range n.Status.LoadBalancer.Ingress {
			loadBalancerIngressErrors(&r, fmt.Sprintf("status.loadBalancer.ingress[%d]", i), in.IP, in.Hostname)
		}
		return r
	case pvcKind:
		var n corev1.PersistentVolumeClaim
		if err := decodeStrict(obj, &n); err != nil {
			return []string{err.Error()}
		}
		var r rules
		r.check(len(n.Spec.AccessModes) == 0, "spec.accessModes is required")
		for name, q := range n.Status.Capacity {
			r.check(q.Sign() < 0, "status.capacity[%s] must be greater than or equal to 0", name)
		}
		return r
	case cronJobKind:
		// The CronJob status strategy validates nothing.
		var n batchv1.CronJob
		if err := decodeStrict(obj, &n); err != nil {
			return []string{err.Error()}
		}
		return nil
	}
	t.Fatalf("no status rules for %s", groupKind(template))
	return nil
}

// decodeStrict decodes an object into its API type the way the apiserver decodes a request
// body, failing on unknown fields as well.
func decodeStrict(obj *unstructured.Unstructured, into any) error {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("decoding %s: %w", obj.GetKind(), err)
	}
	return nil
}

func mustDecode(t testing.TB, obj *unstructured.Unstructured, into any) {
	t.Helper()
	if err := decodeStrict(obj, into); err != nil {
		t.Fatalf("previous status: %v", err)
	}
}

// rules collects the rules broken.
type rules []string

func (r *rules) check(broken bool, format string, args ...any) {
	if broken {
		*r = append(*r, fmt.Sprintf(format, args...))
	}
}

func (r *rules) nonNegative(path string, n int64) {
	r.check(n < 0, "%s must be greater than or equal to 0", path)
}

func (r *rules) atMost(path string, n int64, limitPath string, limit int64) {
	r.check(n > limit, "%s cannot be greater than %s", path, limitPath)
}

func (r *rules) notDecremented(path string, n, old *int32) {
	r.check(old != nil && (n == nil || *n < *old), "%s cannot be decremented", path)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func deploymentStatusErrors(s, old appsv1.DeploymentStatus) []string {
	var r rules
	r.nonNegative("status.observedGeneration", s.ObservedGeneration)
	for path, n := range map[string]int32{"replicas": s.Replicas, "updatedReplicas": s.UpdatedReplicas, "readyReplicas": s.ReadyReplicas,
		"availableReplicas": s.AvailableReplicas, "unavailableReplicas": s.UnavailableReplicas,
		"terminatingReplicas": deref(s.TerminatingReplicas), "collisionCount": deref(s.CollisionCount)} {
		r.nonNegative("status."+path, int64(n))
	}
	r.atMost("status.updatedReplicas", int64(s.UpdatedReplicas), "status.replicas", int64(s.Replicas))
	r.atMost("status.readyReplicas", int64(s.ReadyReplicas), "status.replicas", int64(s.Replicas))
	r.atMost("status.availableReplicas", int64(s.AvailableReplicas), "status.replicas", int64(s.Replicas))
	r.atMost("status.availableReplicas", int64(s.AvailableReplicas), "readyReplicas", int64(s.ReadyReplicas))
	r.notDecremented("status.collisionCount", s.CollisionCount, old.CollisionCount)
	return r
}

func statefulSetStatusErrors(s, old appsv1.StatefulSetStatus) []string {
	var r rules
	r.nonNegative("status.observedGeneration", s.ObservedGeneration)
	for path, n := range map[string]int32{"replicas": s.Replicas, "readyReplicas": s.ReadyReplicas, "currentReplicas": s.CurrentReplicas,
		"updatedReplicas": s.UpdatedReplicas, "availableReplicas": s.AvailableReplicas, "collisionCount": deref(s.CollisionCount)} {
		r.nonNegative("status."+path, int64(n))
	}
	for path, n := range map[string]int32{"readyReplicas": s.ReadyReplicas, "currentReplicas": s.CurrentReplicas,
		"updatedReplicas": s.UpdatedReplicas, "availableReplicas": s.AvailableReplicas} {
		r.atMost("status."+path, int64(n), "status.replicas", int64(s.Replicas))
	}
	r.atMost("status.availableReplicas", int64(s.AvailableReplicas), "status.readyReplicas", int64(s.ReadyReplicas))
	r.notDecremented("status.collisionCount", s.CollisionCount, old.CollisionCount)
	return r
}

func replicaSetStatusErrors(s appsv1.ReplicaSetStatus) []string {
	var r rules
	r.nonNegative("status.observedGeneration", s.ObservedGeneration)
	for path, n := range map[string]int32{"replicas": s.Replicas, "fullyLabeledReplicas": s.FullyLabeledReplicas, "readyReplicas": s.ReadyReplicas,
		"availableReplicas": s.AvailableReplicas, "terminatingReplicas": deref(s.TerminatingReplicas)} {
		r.nonNegative("status."+path, int64(n))
	}
	for path, n := range map[string]int32{"fullyLabeledReplicas": s.FullyLabeledReplicas, "readyReplicas": s.ReadyReplicas, "availableReplicas": s.AvailableReplicas} {
		r.atMost("status."+path, int64(n), "status.replicas", int64(s.Replicas))
	}
	r.atMost("status.availableReplicas", int64(s.AvailableReplicas), "readyReplicas", int64(s.ReadyReplicas))
	return r
}

func daemonSetStatusErrors(s, old appsv1.DaemonSetStatus) []string {
	var r rules
	r.nonNegative("status.observedGeneration", s.ObservedGeneration)
	for path, n := range map[string]int32{"currentNumberScheduled": s.CurrentNumberScheduled, "numberMisscheduled": s.NumberMisscheduled,
		"desiredNumberScheduled": s.DesiredNumberScheduled, "numberReady": s.NumberReady, "updatedNumberScheduled": s.UpdatedNumberScheduled,
		"numberAvailable": s.NumberAvailable, "numberUnavailable": s.NumberUnavailable, "collisionCount": deref(s.CollisionCount)} {
		r.nonNegative("status."+path, int64(n))
	}
	r.notDecremented("status.collisionCount", s.CollisionCount, old.CollisionCount)
	return r
}

// serviceStatusErrors: load balancer ingress points only on a LoadBalancer Service; each IP
// valid, with an ipMode (which the apiserver defaults to VIP for a LoadBalancer); ipMode only
// with an IP; a hostname a DNS subdomain, not an IP.
func serviceStatusErrors(svc *corev1.Service) []string {
	var r rules
	points := svc.Status.LoadBalancer.Ingress
	r.check(svc.Spec.Type != corev1.ServiceTypeLoadBalancer && len(points) > 0,
		"status.loadBalancer.ingress may only be used when spec.type is LoadBalancer")
	for i, in := range points {
		p := fmt.Sprintf("status.loadBalancer.ingress[%d]", i)
		loadBalancerIngressErrors(&r, p, in.IP, in.Hostname)
		ipMode := in.IPMode
		if in.IP != "" && ipMode == nil && svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			vip := corev1.LoadBalancerIPModeVIP // defaulted
			ipMode = &vip
		}
		r.check(in.IP != "" && ipMode == nil, "%s.ipMode must be specified when ip is set", p)
		r.check(in.IP == "" && ipMode != nil, "%s.ipMode may not be specified when ip is not set", p)
		r.check(ipMode != nil && *ipMode != corev1.LoadBalancerIPModeVIP && *ipMode != corev1.LoadBalancerIPModeProxy, "%s.ipMode is not supported", p)
	}
	return r
}

func loadBalancerIngressErrors(r *rules, p, ip, hostname string) {
	r.check(ip != "" && net.ParseIP(ip) == nil, "%s.ip %q is not a valid IP address", p, ip)
	if hostname != "" {
		r.check(len(validation.IsDNS1123Subdomain(hostname)) > 0, "%s.hostname %q is not a DNS subdomain", p, hostname)
		r.check(net.ParseIP(hostname) != nil, "%s.hostname must be a DNS name, not an IP address", p)
	}
}

// conditionTypeRegexp is a qualified name (an optional DNS-subdomain prefix and a name), as
// metav1.Condition types must be.
var (
	conditionTypeRegexp   = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	conditionReasonRegexp = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)
)

func metav1ConditionErrors(conditions []metav1.Condition) []string {
	var r rules
	seen := map[string]bool{}
	for i, c := range conditions {
		p := fmt.Sprintf("status.conditions[%d]", i)
		r.check(!conditionTypeRegexp.MatchString(c.Type), "%s.type %q is not a qualified name", p, c.Type)
		r.check(seen[c.Type], "%s.type %q is a duplicate", p, c.Type)
		seen[c.Type] = true
		r.check(c.Status != metav1.ConditionTrue && c.Status != metav1.ConditionFalse && c.Status != metav1.ConditionUnknown, "%s.status %q is not supported", p, c.Status)
		r.check(c.ObservedGeneration < 0, "%s.observedGeneration must be greater than or equal to zero", p)
		r.check(c.LastTransitionTime.IsZero(), "%s.lastTransitionTime is required", p)
		r.check(c.Reason == "", "%s.reason is required", p)
		r.check(c.Reason != "" && !conditionReasonRegexp.MatchString(c.Reason), "%s.reason %q is invalid", p, c.Reason)
		r.check(len(c.Reason) > 1024, "%s.reason is too long", p)
		r.check(len(c.Message) > 32768, "%s.message is too long", p)
	}
	return r
}

func pdbStatusErrors(s policyv1.PodDisruptionBudgetStatus) []string {
	r := rules(metav1ConditionErrors(s.Conditions))
	for path, n := range map[string]int32{"disruptionsAllowed": s.DisruptionsAllowed, "currentHealthy": s.CurrentHealthy,
		"desiredHealthy": s.DesiredHealthy, "expectedPods": s.ExpectedPods} {
		r.nonNegative("status."+path, int64(n))
	}
	return r
}

// jobConditionIs reports whether a Job status has the condition with the status.
func jobConditionIs(s batchv1.JobStatus, t batchv1.JobConditionType, status corev1.ConditionStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == t && c.Status == status {
			return true
		}
	}
	return false
}

func sameTime(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

func jobStatusErrors(job, oldJob *batchv1.Job) []string {
	s, old := job.Status, oldJob.Status
	is := func(s batchv1.JobStatus, t batchv1.JobConditionType) bool {
		return jobConditionIs(s, t, corev1.ConditionTrue)
	}
	finished := func(s batchv1.JobStatus) bool { return is(s, batchv1.JobComplete) || is(s, batchv1.JobFailed) }
	indexed := deref(job.Spec.CompletionMode) == batchv1.IndexedCompletion
	uncounted := s.UncountedTerminatedPods != nil && len(s.UncountedTerminatedPods.Succeeded)+len(s.UncountedTerminatedPods.Failed) > 0

	var r rules
	// Always checked.
	r.nonNegative("status.active", int64(s.Active))
	r.nonNegative("status.succeeded", int64(s.Succeeded))
	r.nonNegative("status.failed", int64(s.Failed))
	r.nonNegative("status.ready", int64(deref(s.Ready)))
	r.nonNegative("status.terminating", int64(deref(s.Terminating)))
	r.check(s.Failed < old.Failed, "status.failed: cannot decrease the failed counter")
	r.check(s.Succeeded < old.Succeeded && (!indexed || deref(job.Spec.Completions) != deref(job.Spec.Parallelism)),
		"status.succeeded: cannot decrease the succeeded counter")
	for _, c := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet} {
		r.check(is(old, c) && !is(s, c), "status.conditions: cannot disable the %s=True condition", c)
	}
	r.check(is(old, batchv1.JobComplete) && !is(old, batchv1.JobSuccessCriteriaMet) && is(s, batchv1.JobSuccessCriteriaMet),
		"status.conditions: cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions")
	r.check(s.CompletionTime != nil && old.CompletionTime != nil && !sameTime(s.CompletionTime, old.CompletionTime), "status.completionTime: field is immutable")
	r.check(is(s, batchv1.JobSuccessCriteriaMet) && is(s, batchv1.JobFailed), "status.conditions: cannot set SuccessCriteriaMet=True and Failed=true conditions")
	r.check(is(s, batchv1.JobSuccessCriteriaMet) && is(s, batchv1.JobFailureTarget), "status.conditions: cannot set SuccessCriteriaMet=True and FailureTarget=true conditions")
	r.check(job.Spec.SuccessPolicy != nil && !is(s, batchv1.JobSuccessCriteriaMet) && is(s, batchv1.JobComplete),
		"status.conditions: cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True")

	// Checked when the fields they are about change.
	finishedChanged := finished(old) != finished(s)
	completeChanged := is(old, batchv1.JobComplete) != is(s, batchv1.JobComplete)
	failedChanged := is(old, batchv1.JobFailed) != is(s, batchv1.JobFailed)
	targetChanged := is(old, batchv1.JobFailureTarget) != is(s, batchv1.JobFailureTarget)
	metChanged := is(old, batchv1.JobSuccessCriteriaMet) != is(s, batchv1.JobSuccessCriteriaMet)
	activeChanged := old.Active != s.Active
	startChanged := !sameTime(old.StartTime, s.StartTime)
	completionChanged := !sameTime(old.CompletionTime, s.CompletionTime)
	uncountedChanged := fmt.Sprint(old.UncountedTerminatedPods) != fmt.Sprint(s.UncountedTerminatedPods)
	readyChanged := deref(old.Ready) != deref(s.Ready) || (old.Ready == nil) != (s.Ready == nil)
	terminatingChanged := deref(old.Terminating) != deref(s.Terminating) || (old.Terminating == nil) != (s.Terminating == nil)
	suspendedWithZeroCompletions := deref(job.Spec.Suspend) && job.Spec.Completions != nil && *job.Spec.Completions == 0
	resuming := jobConditionIs(old, batchv1.JobSuspended, corev1.ConditionTrue) && jobConditionIs(s, batchv1.JobSuspended, corev1.ConditionFalse)

	r.check(failedChanged && is(s, batchv1.JobFailed) && !is(s, batchv1.JobFailureTarget),
		"status.conditions: cannot set Failed=True condition without the FailureTarget=true condition")
	r.check((completeChanged || metChanged) && is(s, batchv1.JobComplete) && !is(s, batchv1.JobSuccessCriteriaMet),
		"status.conditions: cannot set Complete=True condition without the SuccessCriteriaMet=true condition")
	r.check((finishedChanged || activeChanged) && s.Active > 0 && finished(s), "status.active: active>0 is invalid for finished job")
	r.check((finishedChanged || startChanged) && !suspendedWithZeroCompletions && s.StartTime == nil && finished(s),
		"status.startTime: startTime is required for finished job")
	r.check((finishedChanged || uncountedChanged) && finished(s) && uncounted, "status.uncountedTerminatedPods: must be empty for finished job")
	r.check(startChanged && !resuming && old.StartTime != nil && !deref(job.Spec.Suspend),
		"status.startTime: field is immutable for unsuspended job once set")
	r.check((startChanged || completionChanged) && s.StartTime != nil && s.CompletionTime != nil && s.CompletionTime.Before(s.StartTime),
		"status.completionTime: must be equal to or after `startTime`")
	r.check((completeChanged || completionChanged) && s.CompletionTime != nil && !is(s, batchv1.JobComplete),
		"status.completionTime: cannot set completionTime when there is no Complete=True condition")
	r.check((completeChanged || completionChanged) && s.CompletionTime == nil && is(s, batchv1.JobComplete),
		"status.completionTime: completionTime is required for Complete jobs")
	r.check((completeChanged || failedChanged) && is(s, batchv1.JobComplete) && is(s, batchv1.JobFailed),
		"status.conditions: cannot set Complete=True and Failed=true conditions")
	r.check((completeChanged || targetChanged) && is(s, batchv1.JobComplete) && is(s, batchv1.JobFailureTarget),
		"status.conditions: cannot set Complete=True and FailureTarget=true conditions")
	r.check((readyChanged || activeChanged) && deref(s.Ready) > s.Active, "status.ready: cannot set more ready pods than active")
	r.check((finishedChanged || terminatingChanged) && deref(s.Terminating) > 0 && finished(s), "status.terminating: terminating>0 is invalid for finished job")
	// Flotilla writes no indexes: for an Indexed Job they would have to be valid for
	// spec.completions, for a NonIndexed one empty.
	r.check(old.CompletedIndexes != s.CompletedIndexes && s.CompletedIndexes != "", "status.completedIndexes written")
	r.check(s.FailedIndexes != nil, "status.failedIndexes written")
	return r
}

// checkWritable fails the test when the apiserver would reject an update of the template's
// status from oldStatus to newStatus.
func checkWritable(t testing.TB, template *unstructured.Unstructured, oldStatus, newStatus map[string]any) {
	t.Helper()
	for _, e := range statusUpdateErrors(t, template, oldStatus, newStatus) {
		t.Errorf("the apiserver would reject the status: %s\nold: %v\nnew: %v", e, oldStatus, newStatus)
	}
}

// TestStatusUpdateRules checks the restated rules on updates the apiserver rejects.
func TestStatusUpdateRules(t *testing.T) {
	job := fromYAML(t, `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {template: {}}}`)
	deploy := fromYAML(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 1}}`)
	pdb := fromYAML(t, `{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p}, spec: {}}`)
	const start, end = `startTime: "2026-01-01T00:00:00Z"`, `completionTime: "2026-01-01T00:10:00Z"`
	complete := `conditions: [{type: SuccessCriteriaMet, status: "True"}, {type: Complete, status: "True"}]`
	for _, tt := range []struct {
		name     string
		template *unstructured.Unstructured
		old, new string
		want     string
	}{
		{"decrease failed", job, `{failed: 2}`, `{failed: 1}`, "cannot decrease the failed counter"},
		{"decrease succeeded", job, `{succeeded: 2}`, `{succeeded: 1}`, "cannot decrease the succeeded counter"},
		{"Complete without SuccessCriteriaMet", job, `{}`, `{` + start + `, ` + end + `, conditions: [{type: Complete, status: "True"}]}`, "without the SuccessCriteriaMet"},
		{"Complete without completionTime", job, `{}`, `{` + start + `, ` + complete + `}`, "completionTime is required"},
		{"completionTime without Complete", job, `{}`, `{` + start + `, ` + end + `}`, "no Complete=True condition"},
		{"finished with active pods", job, `{}`, `{active: 1, ` + start + `, ` + end + `, ` + complete + `}`, "active>0 is invalid"},
		{"finished without startTime", job, `{}`, `{` + end + `, ` + complete + `}`, "startTime is required"},
		{"Failed without FailureTarget", job, `{}`, `{` + start + `, conditions: [{type: Failed, status: "True"}]}`, "without the FailureTarget"},
		{"un-finishing", job, `{` + start + `, ` + end + `, ` + complete + `}`, `{` + start + `}`, "cannot disable the Complete=True"},
		{"moving startTime", job, `{` + start + `}`, `{startTime: "2026-01-01T00:01:00Z"}`, "immutable for unsuspended job"},
		{"more ready than active", job, `{}`, `{active: 1, ready: 2}`, "more ready pods than active"},
		{"odd type", job, `{}`, `{active: "1"}`, "decoding Job"},
		{"int32 overflow", deploy, `{}`, `{replicas: 3000000000}`, "decoding Deployment"},
		{"more available than ready", deploy, `{}`, `{replicas: 2, readyReplicas: 1, availableReplicas: 2}`, "cannot be greater than readyReplicas"},
		{"PDB condition without time", pdb, `{}`, `{conditions: [{type: DisruptionAllowed, status: "True", reason: SufficientPods}]}`, "lastTransitionTime is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errs := statusUpdateErrors(t, tt.template, fromYAML(t, tt.old).Object, fromYAML(t, tt.new).Object)
			if len(errs) == 0 || !regexp.MustCompile(regexp.QuoteMeta(tt.want)).MatchString(fmt.Sprint(errs)) {
				t.Errorf("errors %q, want one containing %q", errs, tt.want)
			}
		})
	}
}
