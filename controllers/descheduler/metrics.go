package descheduler

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	moves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_descheduler_moves_total",
		Help: "Bindings whose unschedulable replicas were due to move, by result: moved, or no_room (no other cluster had room).",
	}, []string{"result"})
	movedReplicas = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "flotilla_descheduler_moved_replicas_total",
		Help: "Replicas moved off clusters where they stayed unschedulable.",
	})
)

func init() { metrics.Registry.MustRegister(moves, movedReplicas) }
