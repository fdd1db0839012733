// Package memlimit chooses the manager's Go soft memory limit (runtime/debug.SetMemoryLimit),
// and lowers its garbage collector's goal while it is idle (IdleGC).
//
// A soft limit does not make the live heap smaller: it makes the garbage collector run
// more often as the heap nears the limit, so that the process does not grow to twice its
// live heap (Go's default, GOGC=100) and past its container's memory limit. Above the limit
// the collector works harder and harder; the live heap can still exceed it.
package memlimit

import (
	"fmt"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/api/resource"
)

// FlagUsage is the help of the --memory-limit flag of the manager and the agent; what is
// the container's (config/manager, the Pull agent's Deployment) for the message.
func FlagUsage(what string) string {
	return "Go soft memory limit (a quantity, e.g. 400Mi; \"0\": none): the garbage collector runs more often near it. " +
		"Default: " + fmt.Sprint(Percent) + "% of $" + EnvContainerLimit + " (" + what + " sets it to the container's memory limit), unless $GOMEMLIMIT is set."
}

// Set sets the soft limit Soft chooses, and returns it (0: the runtime's own is left
// alone) and what it was derived from.
func Set(flagValue string, getenv func(string) string) (int64, string, error) {
	limit, from, err := Soft(flagValue, getenv)
	if err != nil || limit <= 0 {
		return 0, from, err
	}
	debug.SetMemoryLimit(limit)
	return limit, from, nil
}

// EnvContainerLimit is the variable config/manager and the Helm chart set to the container's
// memory limit in bytes (the downward API's resourceFieldRef limits.memory).
const EnvContainerLimit = "FLOTILLA_CONTAINER_MEMORY_LIMIT"

// Percent of the container's memory limit the soft limit is by default: room for the
// memory Go does not count (goroutine stacks are counted; cgo and the binary's text are not).
const Percent = 90

// Soft returns the soft limit to set, in bytes, and what it was derived from; 0 leaves the
// runtime's own (GOMEMLIMIT, or none) alone. flagValue is --memory-limit: a quantity
// ("400Mi"), "0" for none of its own (a $GOMEMLIMIT still applies), or "" for the default: Percent of $FLOTILLA_CONTAINER_MEMORY_LIMIT
// unless $GOMEMLIMIT is set (the Go runtime applies that itself).
func Soft(flagValue string, getenv func(string) string) (int64, string, error) {
	if flagValue != "" {
		q, err := resource.ParseQuantity(flagValue)
		if err != nil {
			return 0, "", fmt.Errorf("--memory-limit: %w", err)
		}
		if q.Sign() < 0 {
			return 0, "", fmt.Errorf("--memory-limit: %s is negative", flagValue)
		}
		return q.Value(), "--memory-limit", nil
	}
	if getenv("GOMEMLIMIT") != "" {
		return 0, "GOMEMLIMIT", nil
	}
	v := getenv(EnvContainerLimit)
	if v == "" {
		return 0, "", nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, "", fmt.Errorf("$%s: %w", EnvContainerLimit, err)
	}
	if q.Sign() <= 0 {
		return 0, "", nil
	}
	return q.Value() / 100 * Percent, fmt.Sprintf("%d%% of $%s", Percent, EnvContainerLimit), nil
}
