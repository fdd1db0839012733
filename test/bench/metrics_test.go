package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flotilla-io/flotilla/internal/hostmetrics"
)

// metricsSnapshot is one scrape of the manager's metrics endpoint.
type metricsSnapshot map[string]*dto.MetricFamily

func (m *managerProcess) scrape(b *testing.B) metricsSnapshot {
	resp, err := http.Get("http://" + m.metricsAddr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return mfs
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// gauge is the value of a label-less gauge (or untyped) metric, 0 if absent.
func (s metricsSnapshot) gauge(name string) float64 {
	mf := s[name]
	if mf == nil || len(mf.GetMetric()) == 0 {
		return 0
	}
	m := mf.GetMetric()[0]
	if m.GetGauge() != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

type reqKey struct{ controller, verb, resource string }

// hostRequests is flotilla_host_requests_total by controller, verb and resource.
func (s metricsSnapshot) hostRequests() map[reqKey]float64 {
	out := map[reqKey]float64{}
	mf := s[hostmetrics.MetricName]
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		out[reqKey{label(m, "controller"), label(m, "verb"), label(m, "resource")}] += m.GetCounter().GetValue()
	}
	return out
}

// histSums is each series' (sum, count) of a histogram, keyed by the value of label.
func (s metricsSnapshot) histSums(name, lbl string) map[string][2]float64 {
	out := map[string][2]float64{}
	mf := s[name]
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		v := out[label(m, lbl)]
		v[0] += h.GetSampleSum()
		v[1] += float64(h.GetSampleCount())
		out[label(m, lbl)] = v
	}
	return out
}

// requestTable prints the host requests per template between two scrapes, by controller and
// verb (resources summed), and returns the total per template.
func requestTable(before, after metricsSnapshot, templates int) (perTemplate float64, lines []string) {
	b, a := before.hostRequests(), after.hostRequests()
	type cv struct{ controller, verb string }
	byCV := map[cv]float64{}
	resources := map[cv]map[string]float64{}
	var total float64
	for k, v := range a {
		d := v - b[k]
		if d <= 0 {
			continue
		}
		key := cv{k.controller, k.verb}
		byCV[key] += d
		if resources[key] == nil {
			resources[key] = map[string]float64{}
		}
		resources[key][k.resource] += d
		total += d
	}
	keys := make([]cv, 0, len(byCV))
	for k := range byCV {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].controller != keys[j].controller {
			return keys[i].controller < keys[j].controller
		}
		return keys[i].verb < keys[j].verb
	})
	for _, k := range keys {
		if byCV[k]/float64(templates) < 0.005 {
			continue // informers' occasional relists and the like
		}
		var rs []string
		for r, n := range resources[k] {
			if n/float64(templates) >= 0.005 {
				rs = append(rs, fmt.Sprintf("%s %.2f", r, n/float64(templates)))
			}
		}
		sort.Strings(rs)
		lines = append(lines, fmt.Sprintf("  %-32s %-8s %6.2f  (%s)", k.controller, k.verb, byCV[k]/float64(templates), strings.Join(rs, ", ")))
	}
	return total / float64(templates), lines
}

// stages maps the pipeline's stages to the controllers (and member queues) doing them.
var stages = []struct {
	stage string
	names []string
}{
	{"detector", []string{"detector"}},
	{"scheduler", []string{"scheduler"}},
	{"binding", []string{"binding"}},
	{"execution", []string{"execution"}},
	{"execution (member queues)", []string{"execution/member1", "execution/member2", "execution/member3"}},
	{"status (Work ← member)", []string{"workstatus"}},
	{"status (binding ← Works)", []string{"binding-status"}},
}

// stageTable prints, per stage, the items processed between two scrapes and the mean and
// total of their queue wait (workqueue_queue_duration_seconds) and work time
// (controller_runtime_reconcile_time_seconds; flotilla_member_work_duration_seconds for the
// member queues).
func stageTable(before, after metricsSnapshot) []string {
	qb, qa := before.histSums("workqueue_queue_duration_seconds", "name"), after.histSums("workqueue_queue_duration_seconds", "name")
	rb, ra := before.histSums("controller_runtime_reconcile_time_seconds", "controller"), after.histSums("controller_runtime_reconcile_time_seconds", "controller")
	mb, ma := before.histSums("flotilla_member_work_duration_seconds", "queue"), after.histSums("flotilla_member_work_duration_seconds", "queue")
	lines := []string{fmt.Sprintf("  %-28s %8s %14s %14s %14s %14s", "stage", "items", "wait mean", "wait total", "work mean", "work total")}
	for _, st := range stages {
		var wSum, wCnt, rSum, rCnt float64
		for _, n := range st.names {
			wSum += qa[n][0] - qb[n][0]
			wCnt += qa[n][1] - qb[n][1]
			if strings.Contains(n, "/") {
				q := n[:strings.Index(n, "/")]
				// flotilla_member_work_duration_seconds is per queue family, not per member.
				if n == st.names[0] {
					rSum += ma[q][0] - mb[q][0]
					rCnt += ma[q][1] - mb[q][1]
				}
				continue
			}
			rSum += ra[n][0] - rb[n][0]
			rCnt += ra[n][1] - rb[n][1]
		}
		lines = append(lines, fmt.Sprintf("  %-28s %8.0f %14s %14s %14s %14s", st.stage, wCnt,
			mean(wSum, wCnt), fmt.Sprintf("%.1fs", wSum), mean(rSum, rCnt), fmt.Sprintf("%.1fs", rSum)))
	}
	return lines
}

func mean(sum, n float64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fms", 1000*sum/n)
}

// etcdValues reads the values stored under prefix in the etcd at 127.0.0.1:port, through
// etcd's JSON gateway (/v3/kv/range): what the apiserver actually wrote, protobuf for
// built-in kinds and JSON for custom resources.
func etcdValues(b *testing.B, port int, prefix string) [][]byte {
	end := []byte(prefix)
	end[len(end)-1]++
	body, _ := json.Marshal(map[string]string{
		"key":       base64.StdEncoding.EncodeToString([]byte(prefix)),
		"range_end": base64.StdEncoding.EncodeToString(end),
	})
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v3/kv/range", port), "application/json", bytesReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		b.Fatal(err)
	}
	var values [][]byte
	for _, kv := range out.Kvs {
		v, err := base64.StdEncoding.DecodeString(kv.Value)
		if err != nil {
			b.Fatal(err)
		}
		values = append(values, v)
	}
	return values
}

// etcdBytes sums the sizes of the values stored under prefix, and counts them.
func etcdBytes(b *testing.B, port int, prefix string) (n, keys int) {
	values := etcdValues(b, port, prefix)
	for _, v := range values {
		n += len(v)
	}
	return n, len(values)
}

func bytesReader(b []byte) io.Reader { return strings.NewReader(string(b)) }

// heapSampler records the manager's live heap after GC (go_gc_heap_live_bytes, the heap
// the last collection marked live) every second.
type heapSampler struct {
	stopCh     chan struct{}
	done       chan struct{}
	peak, last float64
}

func (m *managerProcess) sampleHeap(ctx context.Context, b *testing.B) *heapSampler {
	h := &heapSampler{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			if v := m.scrape(b).gauge("go_gc_heap_live_bytes"); v > 0 {
				h.last = v
				h.peak = max(h.peak, v)
			}
			select {
			case <-ctx.Done():
				return
			case <-h.stopCh:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return h
}

// stop ends the sampling and returns the peak and the last value, in bytes.
func (h *heapSampler) stop() (peak, last float64) {
	close(h.stopCh)
	<-h.done
	return h.peak, h.last
}

// targetTable is the bench's one table of figures against the targets.
type targetTable struct{ rows [][4]string }

func (t *targetTable) row(what, value, target string, met bool) {
	verdict := ""
	if target != "" {
		verdict = "met"
		if !met {
			verdict = "NOT MET"
		}
	}
	t.rows = append(t.rows, [4]string{what, value, target, verdict})
}

// notMeasured is a row for a figure this run did not measure.
func (t *targetTable) notMeasured(what, why, target string) {
	t.rows = append(t.rows, [4]string{what, why, target, "not measured"})
}

func (t *targetTable) print() {
	rows := [][]string{{"figure", "measured", "target", ""}}
	for _, r := range t.rows {
		rows = append(rows, r[:])
	}
	printColumns(rows)
}

// printColumns prints rows as left-aligned columns two spaces apart, widths in runes.
func printColumns(rows [][]string) {
	var w []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		for i, c := range r {
			fmt.Print(c, strings.Repeat(" ", w[i]-utf8.RuneCountInString(c)+2))
		}
		fmt.Println()
	}
}

// storage is what the host's etcd holds per template, in bytes.
type storage struct {
	template, binding, works, events float64
	workCount, duplicated            int
}

// hostStorage reads the bench namespace's Deployments, ResourceBindings and Events and the
// members' Works straight from the host's etcd and divides by the number of templates. A
// Work whose stored JSON names the template's image more than once carries the manifest
// more than once.
func hostStorage(b *testing.B, etcdPort, templates int) storage {
	var s storage
	n := float64(templates)
	t, _ := etcdBytes(b, etcdPort, "/registry/deployments/"+namespace+"/")
	rb, _ := etcdBytes(b, etcdPort, "/registry/work.karmada.io/resourcebindings/"+namespace+"/")
	ev, _ := etcdBytes(b, etcdPort, "/registry/events/"+namespace+"/")
	var works int
	for _, m := range members {
		for _, v := range etcdValues(b, etcdPort, "/registry/work.karmada.io/works/karmada-es-"+m+"/") {
			works += len(v)
			s.workCount++
			if bytes.Count(v, []byte(benchImage)) > 1 {
				s.duplicated++
			}
		}
	}
	s.template, s.binding, s.works, s.events = float64(t)/n, float64(rb)/n, float64(works)/n, float64(ev)/n
	return s
}

// clientTable prints, for the manager's requests to host (its host:port) between two scrapes,
// the time spent waiting on client-side rate limiters (rest_client_rate_limiter_duration_seconds)
// and in the requests themselves (rest_client_request_duration_seconds), summed.
func clientTable(before, after metricsSnapshot, host string) []string {
	sum := func(s metricsSnapshot, name string) (total, n float64) {
		mf := s[name]
		if mf == nil {
			return 0, 0
		}
		for _, m := range mf.GetMetric() {
			if label(m, "host") == host {
				total += m.GetHistogram().GetSampleSum()
				n += float64(m.GetHistogram().GetSampleCount())
			}
		}
		return total, n
	}
	var lines []string
	for _, x := range []struct{ what, name string }{
		{"waiting on the client-side rate limiters", "rest_client_rate_limiter_duration_seconds"},
		{"in requests", "rest_client_request_duration_seconds"},
	} {
		t0, n0 := sum(before, x.name)
		t1, n1 := sum(after, x.name)
		lines = append(lines, fmt.Sprintf("  %-44s %8.1fs over %6.0f requests (mean %s)", x.what, t1-t0, n1-n0, mean(t1-t0, n1-n0)))
	}
	return lines
}
