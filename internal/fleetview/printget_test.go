package fleetview_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/internal/fleetview"
)

// A member's error row must not break the alignment of the other members' rows: before, the
// rows after an error row were aligned on their own.
func TestPrintGetAlignsRowsAroundErrors(t *testing.T) {
	table := func(names ...string) *metav1.Table {
		t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{{Name: "Name"}, {Name: "Ready"}}}
		for _, n := range names {
			t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{n, "1/1"}})
		}
		return t
	}
	res := &fleetview.GetResult{Members: []fleetview.MemberResult{
		{Cluster: "a", Table: table("web")},
		{Cluster: "b", Err: errors.New("connection refused, a long message that is wider than any name")},
		{Cluster: "c", Table: table("a-much-longer-name")},
	}}
	var out bytes.Buffer
	if err := fleetview.PrintGet(&out, res, ""); err != nil {
		t.Fatal(err)
	}
	ls := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(ls) != 4 {
		t.Fatalf("want a header, 2 rows and an error row, got:\n%s", out.String())
	}
	col := strings.Index(ls[0], "READY")
	for _, l := range ls[1:3] {
		if strings.Index(l, "1/1") != col {
			t.Errorf("READY not aligned at %d:\n%s", col, out.String())
		}
	}
	if !strings.HasPrefix(ls[3], "b ") || !strings.Contains(ls[3], "error: connection refused") {
		t.Errorf("the error row comes last: %q", ls[3])
	}
}
