// Package eventnote keeps the notes of the Events Flotilla records within what the events API
// accepts. events.k8s.io/v1 refuses an Event whose note is longer than 1,024 bytes, and
// client-go's broadcaster drops a refused Event for good ("Server rejected event (will not
// retry!)"). The longest notes quote a member's answer (an apply refused by a member's
// webhook, a /readyz report listing every check), so without this the warning that explains
// a failure would be the one lost.
package eventnote

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// MaxLength is the longest note the events API accepts, in bytes (the apiserver's
// validation of events.k8s.io/v1 Events).
const MaxLength = 1024

// ellipsis ends a shortened note.
const ellipsis = " …"

// Truncate returns note if it fits in MaxLength bytes, and otherwise its beginning, cut at a
// character boundary, ending in an ellipsis, MaxLength bytes at most.
func Truncate(note string) string {
	if len(note) <= MaxLength {
		return note
	}
	cut := MaxLength - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + ellipsis
}

// Recorder returns rec with every note formatted and truncated before it is recorded.
func Recorder(rec recorder.EventRecorder) recorder.EventRecorder {
	return truncating{rec}
}

type truncating struct {
	recorder.EventRecorder
}

func (t truncating) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	t.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", format(note, args))
}

func (t truncating) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	t.EventRecorder.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, "%s", format(note, args))
}

func format(note string, args []any) string {
	if len(args) > 0 {
		note = fmt.Sprintf(note, args...)
	}
	return Truncate(note)
}

// Manager returns mgr with GetEventRecorder's recorders truncating: wrap the manager once,
// where it is made, and every controller set up with it records notes that fit.
func Manager(mgr manager.Manager) manager.Manager {
	return truncatingManager{mgr}
}

type truncatingManager struct {
	manager.Manager
}

func (m truncatingManager) GetEventRecorder(name string) recorder.EventRecorder {
	return Recorder(m.Manager.GetEventRecorder(name))
}
