// Package localcluster starts real Kubernetes control planes on the loopback interface.
//
// It is the single place the project runs etcd, kube-apiserver and, for "full" clusters,
// kube-controller-manager, kube-scheduler and kwok (fake nodes that run no containers but
// report Pods as Running and Ready). Integration tests, e2e tests, benchmarks and the
// persistent local fleet behind `make fleet-up` all go through it.
//
// A [Cluster] owns its processes: they are started with os/exec, log to files under the
// cluster's state directory and, unless [Options.Detach] is set, are killed by the kernel
// when the process that started them dies, so an interrupted test leaks nothing. A detached
// cluster survives its creator; its process ids are recorded in pid files under the state
// directory, and [StopProcessesIn] finds and stops them later.
//
// A [Fleet] is one host cluster and several member clusters started in parallel, with the
// project's CRDs installed into the host. [LoadFleet] reattaches to a fleet started by another
// process (see cmd/fleet).
//
// Every listener binds 127.0.0.1; nothing is reachable from outside the machine.
//
// The binaries are looked up in [Options.BinDir], $FLOTILLA_K8S_BINS, $KUBEBUILDER_ASSETS
// and finally <repository root>/bin/k8s; `bash hack/k8s-bins.sh bin/k8s` builds them there.
package localcluster
