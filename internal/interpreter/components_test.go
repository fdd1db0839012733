package interpreter

import (
	"strings"
	"testing"

	workv1alpha2 "github.com/flotilla-io/flotilla/api/work/v1alpha2"
)

func TestCheckComponents(t *testing.T) {
	many := make([]workv1alpha2.Component, 33)
	for i := range many {
		many[i] = workv1alpha2.Component{Name: "c" + strings.Repeat("x", i), Replicas: 1}
	}
	for _, tc := range []struct {
		name       string
		components []workv1alpha2.Component
		wantErr    string
	}{
		{name: "none"},
		{name: "two", components: []workv1alpha2.Component{{Name: "jobmanager", Replicas: 1}, {Name: "taskmanager", Replicas: 0}}},
		{name: "32 long names", components: []workv1alpha2.Component{{Name: strings.Repeat("n", 32)}}},
		{name: "no name", components: []workv1alpha2.Component{{Replicas: 1}}, wantErr: "component 1 has no name"},
		{name: "a long name", components: []workv1alpha2.Component{{Name: strings.Repeat("n", 33)}}, wantErr: "longer than 32 characters"},
		{name: "twice", components: []workv1alpha2.Component{{Name: "a"}, {Name: "b"}, {Name: "a"}}, wantErr: `component 3: the name "a" is used twice`},
		{name: "negative", components: []workv1alpha2.Component{{Name: "a", Replicas: -2}}, wantErr: `component "a": -2 replicas`},
		{name: "too many", components: many, wantErr: "33 components, more than 32"},
	} {
		err := CheckComponents(tc.components)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.wantErr)
		}
	}
}
