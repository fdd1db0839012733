package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// ResourceInterpreterContext is what Flotilla posts to an interpreter webhook (Request) and
// what the webhook answers (Response): Karmada's interpreter webhook protocol, as JSON with
// apiVersion config.karmada.io/v1alpha1 and kind ResourceInterpreterContext. It is not
// stored: it has no resource.
type ResourceInterpreterContext struct {
	metav1.TypeMeta `json:",inline"`

	// Request is the call.
	// +optional
	Request *ResourceInterpreterRequest `json:"request,omitempty"`

	// Response is the webhook's answer.
	// +optional
	Response *ResourceInterpreterResponse `json:"response,omitempty"`
}

// ResourceInterpreterRequest is one call of a webhook.
type ResourceInterpreterRequest struct {
	// UID identifies the call; the response must carry it back.
	UID types.UID `json:"uid"`
	// Kind of the object.
	Kind metav1.GroupVersionKind `json:"kind"`
	// Name of the object.
	Name string `json:"name"`
	// Namespace of the object, if any.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Operation is what the webhook is asked.
	Operation InterpreterOperation `json:"operation"`
	// Object is the template (InterpretReplica, ReviseReplica, AggregateStatus,
	// InterpretDependency), the object for a member (Retain), or the member's object
	// (InterpretStatus, InterpretHealth).
	// +optional
	Object runtime.RawExtension `json:"object,omitempty"`
	// ObservedObject is the member's object, for Retain.
	// +optional
	ObservedObject *runtime.RawExtension `json:"observedObject,omitempty"`
	// DesiredReplicas are the replicas to give the object, for ReviseReplica.
	// +optional
	DesiredReplicas *int32 `json:"replicas,omitempty"`
	// AggregatedStatus are the members' reflected statuses, for AggregateStatus.
	// +optional
	AggregatedStatus []workv1alpha2.AggregatedStatusItem `json:"aggregatedStatus,omitempty"`
}

// ResourceInterpreterResponse is a webhook's answer.
type ResourceInterpreterResponse struct {
	// UID is the request's.
	UID types.UID `json:"uid"`
	// Successful is false when the webhook could not answer; Status then says why.
	Successful bool `json:"successful"`
	// Status says why the call failed.
	// +optional
	Status *RequestStatus `json:"status,omitempty"`
	// Patch is an RFC 6902 JSON patch of the request's object (ReviseReplica, Retain,
	// AggregateStatus).
	// +optional
	Patch []byte `json:"patch,omitempty"`
	// PatchType is JSONPatch, the only type.
	// +optional
	PatchType *PatchType `json:"patchType,omitempty"`
	// ReplicaRequirements are what one replica needs (InterpretReplica).
	// +optional
	ReplicaRequirements *workv1alpha2.ReplicaRequirements `json:"replicaRequirements,omitempty"`
	// Replicas are the object's replicas (InterpretReplica, required).
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Dependencies are the objects the object depends on (InterpretDependency).
	// +optional
	Dependencies []DependentObjectReference `json:"dependencies,omitempty"`
	// RawStatus is the member object's status to reflect (InterpretStatus, required).
	// +optional
	RawStatus *runtime.RawExtension `json:"rawStatus,omitempty"`
	// Healthy is the member object's health (InterpretHealth, required).
	// +optional
	Healthy *bool `json:"healthy,omitempty"`
}

// RequestStatus says why a call failed.
type RequestStatus struct {
	// Message says what went wrong.
	// +optional
	Message string `json:"message,omitempty"`
	// Code is an HTTP status code.
	// +optional
	Code int32 `json:"code,omitempty"`
}

// PatchType is the type of a response's patch.
type PatchType string

// PatchTypeJSONPatch is an RFC 6902 JSON patch.
const PatchTypeJSONPatch PatchType = "JSONPatch"
