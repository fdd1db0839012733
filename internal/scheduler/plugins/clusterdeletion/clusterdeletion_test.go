package clusterdeletion

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func TestFilter(t *testing.T) {
	got, err := st.Reasons(New(), st.State(st.Deployment(1)), st.NewCluster("live"), st.NewCluster("going", st.Deleting()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"live": "", "going": ReasonDeleting}, got); diff != "" {
		t.Errorf("reasons mismatch (-want +got):\n%s", diff)
	}
}
