package interpreterwebhook

import (
	"testing"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
)

// FuzzDecodeResponse: any answer decodes or gives an error, never a panic, and an accepted
// answer has the field its operation needs.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"config.karmada.io/v1alpha1","kind":"ResourceInterpreterContext","response":{"uid":"u","successful":true,"replicas":3}}`), uint8(0))
	f.Add([]byte(`{"response":{"uid":"u","successful":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJyZXBsYWNlIiwicGF0aCI6Ii9hIiwidmFsdWUiOjF9XQ=="}}`), uint8(1))
	f.Add([]byte(`{"response":{"uid":"u","successful":false}}`), uint8(2))
	f.Add([]byte(`{"response":{"uid":"u","successful":true,"healthy":true}}`), uint8(5))
	f.Add([]byte(`null`), uint8(3))
	ops := []configv1alpha1.InterpreterOperation{
		configv1alpha1.InterpreterOperationInterpretReplica, configv1alpha1.InterpreterOperationReviseReplica,
		configv1alpha1.InterpreterOperationRetain, configv1alpha1.InterpreterOperationAggregateStatus,
		configv1alpha1.InterpreterOperationInterpretStatus, configv1alpha1.InterpreterOperationInterpretHealth,
		configv1alpha1.InterpreterOperationInterpretDependency,
	}
	f.Fuzz(func(t *testing.T, data []byte, opi uint8) {
		op := ops[int(opi)%len(ops)]
		r, err := DecodeResponse(data, "u", op)
		if err != nil {
			return
		}
		if r == nil || r.UID != "u" || !r.Successful {
			t.Fatalf("accepted %s", data)
		}
		switch op {
		case configv1alpha1.InterpreterOperationInterpretReplica:
			if r.Replicas == nil || *r.Replicas < 0 {
				t.Fatalf("accepted replicas %v", r.Replicas)
			}
		case configv1alpha1.InterpreterOperationInterpretStatus:
			if r.RawStatus == nil {
				t.Fatal("accepted no rawStatus")
			}
		case configv1alpha1.InterpreterOperationInterpretHealth:
			if r.Healthy == nil {
				t.Fatal("accepted no healthy")
			}
		}
	})
}
