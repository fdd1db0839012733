package interpreterwebhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

// maxResponseBytes bounds what a webhook's answer may weigh.
const maxResponseBytes = 16 << 20

// request is what one call sends, but for the uid.
type request struct {
	op       configv1alpha1.InterpreterOperation
	obj      *unstructured.Unstructured
	observed *unstructured.Unstructured
	replicas *int32
	items    []workv1alpha2.AggregatedStatusItem
}

// call posts the request to the webhook, checks the answer and returns it. Errors name the
// webhook, the operation and the object, and are reported to OnFailure.
func (h *Hook) call(r request) (*configv1alpha1.ResourceInterpreterResponse, error) {
	resp, err := h.roundTrip(r)
	if err != nil {
		desc := describe(r.obj)
		err = fmt.Errorf("interpreter webhook %q (ResourceInterpreterWebhookConfiguration %q), %s of %s: %w", h.Name, h.Configuration, r.op, desc, err)
		if f := h.registry.o.OnFailure; f != nil {
			f(Failure{Configuration: h.Configuration, Webhook: h.Name, Operation: r.op, Object: desc, Err: err})
		}
		return nil, err
	}
	return resp, nil
}

func (h *Hook) roundTrip(r request) (*configv1alpha1.ResourceInterpreterResponse, error) {
	if r.obj == nil {
		return nil, errors.New("no object")
	}
	uid := uuid.NewUUID()
	body, err := encodeRequest(uid, r)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := h.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return nil, fmt.Errorf("no answer within %s (timeoutSeconds)", h.timeout)
		}
		return nil, fmt.Errorf("calling %s: %w", h.url, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no answer within %s (timeoutSeconds)", h.timeout)
		}
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if len(data) > maxResponseBytes {
		return nil, fmt.Errorf("the answer is over %d MiB", maxResponseBytes>>20)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", res.StatusCode, excerpt(data))
	}
	return DecodeResponse(data, uid, r.op)
}

// encodeRequest makes the ResourceInterpreterContext of a call.
func encodeRequest(uid types.UID, r request) ([]byte, error) {
	obj, err := json.Marshal(r.obj.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding the object: %w", err)
	}
	gvk := r.obj.GroupVersionKind()
	in := &configv1alpha1.ResourceInterpreterRequest{
		UID:       uid,
		Name:      r.obj.GetName(),
		Namespace: r.obj.GetNamespace(),
		Operation: r.op,
		Object:    runtime.RawExtension{Raw: obj},

		DesiredReplicas:  r.replicas,
		AggregatedStatus: r.items,
	}
	in.Kind.Group, in.Kind.Version, in.Kind.Kind = gvk.Group, gvk.Version, gvk.Kind
	if r.observed != nil {
		raw, err := json.Marshal(r.observed.Object)
		if err != nil {
			return nil, fmt.Errorf("encoding the observed object: %w", err)
		}
		in.ObservedObject = &runtime.RawExtension{Raw: raw}
	}
	c := configv1alpha1.ResourceInterpreterContext{Request: in}
	c.APIVersion, c.Kind = configv1alpha1.GroupVersion.String(), "ResourceInterpreterContext"
	return json.Marshal(c)
}

// DecodeResponse decodes a webhook's answer to the call uid of op and checks it: a
// ResourceInterpreterContext with a response of the same uid, successful, with the field the
// operation needs (replicas, rawStatus, healthy) and, for a patch, type JSONPatch and a
// patch that decodes.
func DecodeResponse(data []byte, uid types.UID, op configv1alpha1.InterpreterOperation) (*configv1alpha1.ResourceInterpreterResponse, error) {
	var c configv1alpha1.ResourceInterpreterContext
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("the answer is not a ResourceInterpreterContext: %w", err)
	}
	if c.APIVersion != "" && c.APIVersion != configv1alpha1.GroupVersion.String() {
		return nil, fmt.Errorf("the answer's apiVersion is %q, want %s", c.APIVersion, configv1alpha1.GroupVersion)
	}
	r := c.Response
	if r == nil {
		return nil, errors.New("the answer has no response")
	}
	if r.UID != uid {
		return nil, fmt.Errorf("the response's uid is %q, want the request's %q", r.UID, uid)
	}
	if !r.Successful {
		if r.Status == nil {
			return nil, errors.New("the response is unsuccessful and has no status to say why")
		}
		return nil, fmt.Errorf("the webhook says it failed (code %d): %s", r.Status.Code, r.Status.Message)
	}
	switch op {
	case configv1alpha1.InterpreterOperationInterpretReplica:
		if r.Replicas == nil {
			return nil, errors.New("the response has no replicas")
		}
		if *r.Replicas < 0 {
			return nil, fmt.Errorf("the response's replicas are %d; want 0 or more", *r.Replicas)
		}
	case configv1alpha1.InterpreterOperationInterpretStatus:
		if r.RawStatus == nil {
			return nil, errors.New("the response has no rawStatus")
		}
	case configv1alpha1.InterpreterOperationInterpretHealth:
		if r.Healthy == nil {
			return nil, errors.New("the response has no healthy")
		}
	case configv1alpha1.InterpreterOperationInterpretDependency:
		for i, d := range r.Dependencies {
			if d.APIVersion == "" || d.Kind == "" {
				return nil, fmt.Errorf("dependencies[%d] has no apiVersion or kind", i)
			}
			if (d.Name == "") == (d.LabelSelector == nil) {
				return nil, fmt.Errorf("dependencies[%d] (%s %s) must have a name or a labelSelector, not both", i, d.Kind, d.Name)
			}
		}
	case configv1alpha1.InterpreterOperationReviseReplica, configv1alpha1.InterpreterOperationRetain,
		configv1alpha1.InterpreterOperationAggregateStatus:
		if len(r.Patch) == 0 && r.PatchType == nil {
			return r, nil
		}
		if r.PatchType == nil {
			return nil, errors.New("the response has a patch but no patchType")
		}
		if *r.PatchType != configv1alpha1.PatchTypeJSONPatch {
			return nil, fmt.Errorf("the response's patchType is %q; only JSONPatch is supported", *r.PatchType)
		}
		if len(r.Patch) > 0 {
			if _, err := jsonpatch.DecodePatch(r.Patch); err != nil {
				return nil, fmt.Errorf("the response's patch is not a JSON patch: %w", err)
			}
		}
	}
	return r, nil
}

// applyPatch applies a response's patch to obj, and checks that the result is the same
// object (apiVersion, kind, namespace and name unchanged).
func applyPatch(obj *unstructured.Unstructured, r *configv1alpha1.ResourceInterpreterResponse) (*unstructured.Unstructured, error) {
	if len(r.Patch) == 0 {
		return obj, nil
	}
	p, err := jsonpatch.DecodePatch(r.Patch)
	if err != nil {
		return nil, fmt.Errorf("the response's patch is not a JSON patch: %w", err)
	}
	doc, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	patched, err := p.Apply(doc)
	if err != nil {
		return nil, fmt.Errorf("the response's patch does not apply to the object: %w", err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(patched); err != nil {
		return nil, fmt.Errorf("the patched object: %w", err)
	}
	if out.GetAPIVersion() != obj.GetAPIVersion() || out.GetKind() != obj.GetKind() ||
		out.GetNamespace() != obj.GetNamespace() || out.GetName() != obj.GetName() {
		return nil, fmt.Errorf("the response's patch makes %s another object (%s)", describe(obj), describe(out))
	}
	return out, nil
}

func describe(obj *unstructured.Unstructured) string {
	if obj == nil {
		return "<nil>"
	}
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return obj.GetAPIVersion() + "/" + obj.GetKind() + " " + name
}

// excerpt is the start of a body, for an error.
func excerpt(data []byte) string {
	s := strings.TrimSpace(string(data))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
