// Package hostmetrics counts the manager's requests to the host apiserver by controller, verb
// and resource: flotilla_host_requests_total{controller,verb,resource} on the manager's
// metrics endpoint (controller-runtime's registry).
//
// The controller is read from the request's context: a name put there with WithController
// (the member queues do), else the "controller" value of the logger controller-runtime puts
// into every reconcile's context, when the manager's logger was wrapped with Logger. Event
// writes carry no reconcile context (the broadcaster sends them); they are attributed to the
// reportingController named in the event. Requests with neither (informers' lists and
// watches, leader election, startup reads) count as controller "-".
package hostmetrics

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// MetricName is the counter's name.
const MetricName = "flotilla_host_requests_total"

// Requests counts host requests by controller, verb and resource.
var Requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: MetricName,
	Help: "Requests of the manager to the host apiserver, by controller (from the request's context; '-' for informers and others), verb and resource.",
}, []string{"controller", "verb", "resource"})

func init() {
	metrics.Registry.MustRegister(Requests)
}

// Instrument makes every request through cfg count in Requests.
func Instrument(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &transport{next: rt, count: Count} })
}

// Count records one request.
func Count(controller, verb, resource string) {
	Requests.WithLabelValues(controller, verb, resource).Inc()
}

type transport struct {
	next  http.RoundTripper
	count func(controller, verb, resource string)
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	verb, resource := Classify(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
	t.count(controllerOf(req, resource), verb, resource)
	return t.next.RoundTrip(req)
}

// WrappedTransport returns a transport counting into count; for tests that count their own
// manager's requests.
func WrappedTransport(next http.RoundTripper, count func(controller, verb, resource string)) http.RoundTripper {
	return &transport{next: next, count: count}
}

type ctxKey struct{}

// WithController names the controller whose host requests are made with ctx.
func WithController(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, ctxKey{}, name)
}

// ControllerFrom is the controller named in ctx (WithController, else the "controller" value of
// a logger wrapped with Logger), or "-".
func ControllerFrom(ctx context.Context) string {
	if name, ok := ctx.Value(ctxKey{}).(string); ok {
		return name
	}
	if l, err := logr.FromContext(ctx); err == nil {
		if s, ok := l.GetSink().(*sink); ok && s.controller != "" {
			return s.controller
		}
	}
	return "-"
}

func controllerOf(req *http.Request, resource string) string {
	name := ControllerFrom(req.Context())
	if name == "-" && (resource == "events" || resource == "events.events.k8s.io") && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			defer body.Close()
			var ev struct {
				ReportingController string `json:"reportingController"`
				Source              struct {
					Component string `json:"component"`
				} `json:"source"`
			}
			data, _ := io.ReadAll(io.LimitReader(body, 1<<16))
			if json.NewDecoder(bytes.NewReader(data)).Decode(&ev) == nil {
				switch {
				case ev.ReportingController != "":
					return "events:" + ev.ReportingController
				case ev.Source.Component != "":
					return "events:" + ev.Source.Component
				}
			}
			return "events"
		}
	}
	return name
}

// Classify is a request's verb (get, list, watch, create, update, patch, delete,
// deletecollection) and resource ("deployments.apps", "resourcebindings.work.karmada.io/status",
// "namespaces") from its method and path.
func Classify(method, path, watch string) (verb, resource string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group = parts[1]
		parts = parts[3:]
	default:
		return strings.ToLower(method), "nonresource"
	}
	// [namespaces NS] RESOURCE [NAME [SUBRESOURCE]]
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return strings.ToLower(method), "discovery"
	}
	resource = parts[0]
	if group != "" {
		resource += "." + group
	}
	named := len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	switch method {
	case http.MethodGet:
		switch {
		case watch == "true" || watch == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(method)
	}
	return verb, resource
}

// Logger wraps l so that loggers derived from it remember their "controller" value (the one
// controller-runtime gives each controller's logger), for ControllerFrom.
func Logger(l logr.Logger) logr.Logger {
	base := l.GetSink()
	if base == nil {
		return l
	}
	// The wrapper's methods are one more frame between the caller and the sink.
	if d, ok := base.(logr.CallDepthLogSink); ok {
		base = d.WithCallDepth(1)
	}
	return logr.New(&sink{LogSink: base})
}

type sink struct {
	logr.LogSink
	controller string
	// values are what WithValues was given, handed to the wrapped sink only when a message
	// is logged: zap encodes them at once, controller-runtime gives every reconcile's logger
	// four, and most reconciles log nothing (3.5 % of the manager's CPU during a restart's
	// re-verification went to encoding them).
	values []any
}

// Init does nothing: the wrapped sink was initialised by its own logger.
func (s *sink) Init(logr.RuntimeInfo) {}

func (s *sink) WithValues(kv ...any) logr.LogSink {
	c := s.controller
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok && k == "controller" {
			if v, ok := kv[i+1].(string); ok {
				c = v
			}
		}
	}
	// Clipped: two loggers derived from this one never share an appended array.
	return &sink{LogSink: s.LogSink, controller: c, values: append(slices.Clip(s.values), kv...)}
}

func (s *sink) WithName(name string) logr.LogSink {
	return &sink{LogSink: s.LogSink.WithName(name), controller: s.controller, values: s.values}
}

func (s *sink) Info(level int, msg string, kv ...any) { s.withValues().Info(level, msg, kv...) }

func (s *sink) Error(err error, msg string, kv ...any) { s.withValues().Error(err, msg, kv...) }

// withValues is the wrapped sink with the values given so far.
func (s *sink) withValues() logr.LogSink {
	if len(s.values) == 0 {
		return s.LogSink
	}
	return s.LogSink.WithValues(s.values...)
}

func (s *sink) WithCallDepth(depth int) logr.LogSink {
	if d, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return &sink{LogSink: d.WithCallDepth(depth), controller: s.controller, values: s.values}
	}
	return s
}

func (s *sink) GetCallStackHelper() func() {
	if h, ok := s.LogSink.(logr.CallStackHelperLogSink); ok {
		return h.GetCallStackHelper()
	}
	return func() {}
}
