package division

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// targets builds targets from weights and priors; ranks follow the index (target 0 wins ties).
func targets(weights []int64, prior []int32) []Target {
	ts := make([]Target, len(weights))
	for i, w := range weights {
		ts[i] = Target{Weight: w, Rank: uint64(i)}
		if prior != nil {
			ts[i].Prior = prior[i]
		}
	}
	return ts
}

func TestByWeight(t *testing.T) {
	tests := []struct {
		name     string
		replicas int32
		weights  []int64
		prior    []int32
		want     []int32
	}{
		{"seed case: 2 over 10/10/10, the two best ranks", 2, []int64{10, 10, 10}, nil, []int32{1, 1, 0}},
		{"seed case: scale to 3 keeps the first two", 3, []int64{10, 10, 10}, []int32{1, 1, 0}, []int32{1, 1, 1}},
		{"largest remainder", 10, []int64{1, 2, 3}, nil, []int32{2, 3, 5}},
		{"exact shares", 6, []int64{1, 2, 3}, nil, []int32{1, 2, 3}},
		{"all weights zero share equally", 4, []int64{0, 0}, nil, []int32{2, 2}},
		{"negative weight counts as zero", 3, []int64{-5, 1}, nil, []int32{0, 3}},
		{"zero replicas", 0, []int64{1, 1}, []int32{2, 1}, []int32{0, 0}},
		{"no change keeps a consistent assignment", 3, []int64{1, 1}, []int32{1, 2}, []int32{1, 2}},
		{"scale up distributes only the increase", 7, []int64{1, 1, 1}, []int32{2, 2, 1}, []int32{3, 2, 2}},
		{"scale down takes from the most surplus", 4, []int64{1, 1, 1}, []int32{1, 2, 3}, []int32{1, 2, 1}},
		{"scale down among equal surplus, worst rank first", 7, []int64{1, 1, 1}, []int32{3, 3, 3}, []int32{3, 2, 2}},
		{"scale down keeps surplus where the share is exact", 2, []int64{2, 1, 1}, []int32{3, 0, 0}, []int32{2, 0, 0}},
		{"inconsistent prior (weights changed) starts afresh", 4, []int64{1, 1}, []int32{4, 0}, []int32{2, 2}},
		{"inconsistent prior on scale up starts afresh", 6, []int64{1, 1}, []int32{4, 0}, []int32{3, 3}},
		{"removed cluster: its replicas go to the others", 3, []int64{1, 1}, []int32{1, 1}, []int32{2, 1}},
		{"huge weights do not overflow", 3, []int64{math.MaxInt64, math.MaxInt64, math.MaxInt64}, nil, []int32{1, 1, 1}},
		{"max replicas", math.MaxInt32, []int64{1, 1}, nil, []int32{1 << 30, 1<<30 - 1}},
		{"no targets", 3, nil, nil, []int32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ByWeight(tt.replicas, targets(tt.weights, tt.prior))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ByWeight() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestByCapacity(t *testing.T) {
	tests := []struct {
		name      string
		replicas  int32
		available []int64
		prior     []int32
		want      []int32
		wantErr   *InsufficientCapacityError
	}{
		{"by free capacity", 6, []int64{1, 2, 3}, nil, []int32{1, 2, 3}, nil},
		{"never more than a cluster can hold", 3, []int64{1, 100, 2}, nil, []int32{0, 3, 0}, nil},
		{"exactly full", 3, []int64{1, 0, 2}, nil, []int32{1, 0, 2}, nil},
		{"not enough capacity", 4, []int64{1, 0, 2}, nil, nil, &InsufficientCapacityError{Replicas: 4, Capacity: 3}},
		{"unchanged keeps prior even when full", 5, []int64{0, 0}, []int32{2, 3}, []int32{2, 3}, nil},
		{"scale up adds the increase by capacity", 8, []int64{0, 6, 3}, []int32{2, 3, 0}, []int32{2, 5, 1}, nil},
		{"scale up beyond capacity", 9, []int64{0, 1, 1}, []int32{2, 3, 0}, nil, &InsufficientCapacityError{Replicas: 9, Capacity: 7}},
		{"scale down in proportion to the assignment", 5, []int64{9, 9}, []int32{2, 8}, []int32{1, 4}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ByCapacity(tt.replicas, targets(tt.available, tt.prior))
			checkDivision(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestAggregate(t *testing.T) {
	tests := []struct {
		name      string
		replicas  int32
		available []int64
		prior     []int32
		want      []int32
		wantErr   *InsufficientCapacityError
	}{
		{"fewest clusters, largest first", 5, []int64{3, 4, 2}, nil, []int32{1, 4, 0}, nil},
		{"one cluster when it fits", 4, []int64{3, 4, 9}, nil, []int32{0, 0, 4}, nil},
		{"equal capacity: best rank", 2, []int64{5, 5}, nil, []int32{2, 0}, nil},
		{"not enough capacity", 10, []int64{3, 4}, nil, nil, &InsufficientCapacityError{Replicas: 10, Capacity: 7}},
		{"scale up fills holders first", 6, []int64{2, 9, 1}, []int32{0, 0, 3}, []int32{0, 2, 4}, nil},
		{"scale down empties the smallest holder first", 4, []int64{0, 0, 0}, []int32{1, 4, 2}, []int32{0, 4, 0}, nil},
		{"unchanged", 3, []int64{0, 0}, []int32{1, 2}, []int32{1, 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Aggregate(tt.replicas, targets(tt.available, tt.prior))
			checkDivision(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func checkDivision(t *testing.T, got []int32, err error, want []int32, wantErr *InsufficientCapacityError) {
	t.Helper()
	if wantErr != nil {
		var short *InsufficientCapacityError
		if !errors.As(err, &short) {
			t.Fatalf("error = %v, want %v", err, wantErr)
		}
		if diff := cmp.Diff(wantErr, short); diff != "" {
			t.Errorf("error mismatch (-want +got):\n%s", diff)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("division mismatch (-want +got):\n%s", diff)
	}
}

func TestNegativeReplicas(t *testing.T) {
	for name, divide := range map[string]func(int32, []Target) ([]int32, error){
		"ByWeight": ByWeight, "ByCapacity": ByCapacity, "Aggregate": Aggregate,
	} {
		if _, err := divide(-1, targets([]int64{1}, nil)); err == nil {
			t.Errorf("%s(-1) returned no error", name)
		}
	}
}

func TestByWeightWithin(t *testing.T) {
	tests := []struct {
		name     string
		replicas int32
		targets  []Target
		caps     []int64
		want     []int32
		wantErr  bool
	}{
		{name: "caps not reached", replicas: 6, targets: []Target{{Weight: 1, Rank: 1}, {Weight: 2, Rank: 2}}, caps: []int64{10, 10}, want: []int32{2, 4}},
		{name: "a capped cluster's share goes to the others", replicas: 9, targets: []Target{{Weight: 1, Rank: 1}, {Weight: 1, Rank: 2}, {Weight: 1, Rank: 3}},
			caps: []int64{1, 100, 100}, want: []int32{1, 4, 4}},
		{name: "cascading caps", replicas: 10, targets: []Target{{Weight: 5, Rank: 1}, {Weight: 3, Rank: 2}, {Weight: 2, Rank: 3}},
			caps: []int64{2, 3, 100}, want: []int32{2, 3, 5}},
		{name: "too little room", replicas: 10, targets: []Target{{Weight: 1}, {Weight: 1}}, caps: []int64{3, 4}, wantErr: true},
		{name: "negative caps count as 0", replicas: 2, targets: []Target{{Weight: 1, Rank: 1}, {Weight: 1, Rank: 2}}, caps: []int64{-5, 2}, want: []int32{0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ByWeightWithin(tt.replicas, tt.targets, tt.caps)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && !slices.Equal(got, tt.want) {
				t.Errorf("ByWeightWithin() = %v, want %v", got, tt.want)
			}
		})
	}
}
