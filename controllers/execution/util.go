package execution

import (
	"encoding/json"
	"errors"
	"net"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func toMap(c metav1.Condition) (map[string]any, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}

func isConnRefused(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &op)
}

func toSlice(v any) ([]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out []any
	return out, json.Unmarshal(data, &out)
}
