package localcluster

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// logMu serializes progress lines: the clusters of a fleet start in parallel and usually
// share one writer.
var logMu sync.Mutex

// logger writes progress lines prefixed with the time and the cluster name. A nil
// writer discards them.
type logger struct {
	w    io.Writer
	name string
}

func newLogger(w io.Writer, name string) *logger { return &logger{w: w, name: name} }

func (l *logger) printf(format string, args ...any) {
	if l == nil || l.w == nil {
		return
	}
	line := fmt.Sprintf("%s localcluster %s: %s\n", time.Now().Format("15:04:05.000"), l.name, fmt.Sprintf(format, args...))
	logMu.Lock()
	defer logMu.Unlock()
	_, _ = io.WriteString(l.w, line)
}
