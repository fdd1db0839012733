package customization

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// eval runs the Lua expression expr (with kube required) and returns its value as JSON
// gives it back (numbers are float64).
func eval(t *testing.T, expr string) (any, error) {
	t.Helper()
	c := customized(t, Options{}, scripts{interpreter.OperationReflectStatus: `local kube = require("kube")
function ReflectStatus(o)
  return {v = ` + expr + `}
end`})
	st, err := c.ReflectStatus(app(nil, nil))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(st.Raw, &m); err != nil {
		t.Fatal(err)
	}
	return m["v"], nil
}

type libCase struct {
	expr    string
	want    any
	wantErr string
}

func runLibCases(t *testing.T, cases []libCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := eval(t, tc.expr)
			if tc.wantErr != "" {
				wantErr(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}

func TestKubeGetResourceQuantity(t *testing.T) {
	runLibCases(t, []libCase{
		{expr: `kube.getResourceQuantity("100m")`, want: 0.1},
		{expr: `kube.getResourceQuantity("1Gi")`, want: 1073741824.0},
		{expr: `kube.getResourceQuantity("2")`, want: 2.0},
		{expr: `kube.getResourceQuantity("1.5")`, want: 1.5},
		{expr: `kube.getResourceQuantity("1k")`, want: 1000.0},
		{expr: `kube.getResourceQuantity("0")`, want: 0.0},
		{expr: `kube.getResourceQuantity(3)`, want: 3.0},
		{expr: `kube.getResourceQuantity(nil)`, want: 0.0},
		{expr: `kube.getResourceQuantity("500m") * 4`, want: 2.0},
		{expr: `kube.getResourceQuantity("-1")`, wantErr: "quantity -1 is negative"},
		{expr: `kube.getResourceQuantity("lots")`, wantErr: `quantity "lots"`},
		{expr: `kube.getResourceQuantity({})`, wantErr: "string expected, got table"},
		{expr: `kube.getResourceQuantity()`, wantErr: "getResourceQuantity takes one argument"},
		{expr: `kube.getResourceQuantity("1", "2")`, wantErr: "getResourceQuantity takes one argument"},
		{expr: `kube.getResourceQuantity(string.rep("1", 200))`, wantErr: "at most 128 characters"},
	})
}

func TestKubeResourceAdd(t *testing.T) {
	runLibCases(t, []libCase{
		{expr: `kube.resourceAdd("100m", "1")`, want: "1100m"},
		{expr: `kube.resourceAdd("1Gi", "512Mi")`, want: "1536Mi"},
		{expr: `kube.resourceAdd(nil, "1")`, want: "1"},
		{expr: `kube.resourceAdd("1", nil, "2")`, want: "3"},
		{expr: `kube.resourceAdd()`, want: "0"},
		{expr: `kube.resourceAdd(1, "500m")`, want: "1500m"},
		{expr: `kube.resourceAdd("1", "lots")`, wantErr: `quantity "lots"`},
		{expr: `kube.resourceAdd("1", {})`, wantErr: "string expected, got table"},
	})
}

func TestKubeAccuratePodRequirements(t *testing.T) {
	template := `{metadata = {namespace = "shop"}, spec = {
  nodeSelector = {disk = "ssd"},
  tolerations = {{key = "gpu", operator = "Exists", effect = "NoSchedule"}},
  priorityClassName = "high",
  containers = {
    {name = "a", resources = {requests = {cpu = "250m", memory = "64Mi"}}},
    {name = "b", resources = {limits = {cpu = "1"}}},
  },
  initContainers = {{name = "init", resources = {requests = {cpu = "2"}}}},
}}`
	runLibCases(t, []libCase{
		{expr: `kube.accuratePodRequirements(` + template + `)`, want: map[string]any{
			"namespace":         "shop",
			"priorityClassName": "high",
			"nodeClaim": map[string]any{
				"nodeSelector": map[string]any{"disk": "ssd"},
				"tolerations":  []any{map[string]any{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}},
			},
			// containers summed (a limit stands in for a missing request), the init
			// container's larger request counting instead
			"resourceRequest": map[string]any{"cpu": "2", "memory": "64Mi"},
		}},
		{expr: `kube.accuratePodRequirements({spec = {containers = {{name = "a"}}}})`, want: map[string]any{}},
		{expr: `kube.accuratePodRequirements()`, wantErr: "accuratePodRequirements takes one argument"},
		{expr: `kube.accuratePodRequirements("x")`, wantErr: "table expected, got string"},
		{expr: `kube.accuratePodRequirements({spec = {containers = "x"}})`, wantErr: "accuratePodRequirements"},
	})
}

func TestKubeGetPodDependencies(t *testing.T) {
	template := `{spec = {
  serviceAccountName = "runner",
  containers = {{name = "a", envFrom = {{configMapRef = {name = "env"}}},
    env = {{name = "K", valueFrom = {secretKeyRef = {name = "creds", key = "k"}}}}}},
  volumes = {{name = "data", persistentVolumeClaim = {claimName = "data"}}, {name = "cfg", configMap = {name = "cfg"}}},
}}`
	dep := func(kind, ns, name string) any {
		return map[string]any{"apiVersion": "v1", "kind": kind, "namespace": ns, "name": name}
	}
	runLibCases(t, []libCase{
		{expr: `kube.getPodDependencies(` + template + `, "shop")`, want: []any{
			dep("ConfigMap", "shop", "cfg"), dep("ConfigMap", "shop", "env"), dep("PersistentVolumeClaim", "shop", "data"),
			dep("Secret", "shop", "creds"), dep("ServiceAccount", "shop", "runner"),
		}},
		{expr: `kube.getPodDependencies({spec = {serviceAccountName = "x", containers = {{name = "a"}}}}, nil)`,
			want: []any{dep("ServiceAccount", "default", "x")}},
		{expr: `kube.getPodDependencies({spec = {serviceAccountName = "x", containers = {{name = "a"}}}}, 7)`,
			want: []any{dep("ServiceAccount", "7", "x")}},
		{expr: `kube.getPodDependencies({spec = {containers = {{name = "a"}}}}, "shop")`, want: []any{}},
		{expr: `kube.getPodDependencies()`, wantErr: "getPodDependencies takes two arguments"},
		{expr: `kube.getPodDependencies({}, {})`, wantErr: "string expected, got table"},
	})
}

// fixClock sets the sandbox's clock and local time zone for a test.
func fixClock(t *testing.T, at time.Time, zone *time.Location) {
	t.Helper()
	oldNow, oldLoc := now, location
	now = func() time.Time { return at }
	location = func() *time.Location { return zone }
	t.Cleanup(func() { now, location = oldNow, oldLoc })
}

func TestOsTime(t *testing.T) {
	at := time.Date(2026, 11, 27, 21, 49, 50, 0, time.UTC)
	fixClock(t, at, time.UTC)
	u := func(tm time.Time) float64 { return float64(tm.Unix()) }
	runLibCases(t, []libCase{
		{expr: `os.time()`, want: u(at)},
		{expr: `os.time(nil)`, want: u(at)},
		{expr: `os.time({year = 2026, month = 11, day = 27, hour = 21, min = 49, sec = 50})`, want: u(at)},
		{expr: `os.time({year = 2026, month = 11, day = 27})`, want: u(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))},
		{expr: `os.time({year = 2026, month = 13, day = 1, hour = 0})`, want: u(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))},
		{expr: `os.time({year = 2026, month = 3, day = 0, hour = 0})`, want: u(time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC))},
		{expr: `os.time({year = 2026, month = 1, day = 1, hour = 0, sec = 90})`, want: u(time.Date(2026, 1, 1, 0, 1, 30, 0, time.UTC))},
		{expr: `os.time({year = "2026", month = "1", day = "2", hour = 0})`, want: u(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))},
		{expr: `os.time({year = 2026, month = 1, day = 1}) - os.time({year = 2025, month = 12, day = 31})`, want: 86400.0},
		{expr: `os.time({year = 2026, month = 1})`, wantErr: "field 'day' missing in date table"},
		{expr: `os.time({year = 2026, day = 1, month = "x"})`, wantErr: "field 'month' missing in date table"},
		{expr: `os.time({year = 1e300, month = 1, day = 1})`, wantErr: "field 'year' is out of range"},
		{expr: `os.time({year = 2e9, month = 1, day = 1})`, wantErr: "field 'year' is out of range"},
		{expr: `os.time("now")`, wantErr: "table expected, got string"},
	})
	// The local time zone applies to date tables.
	fixClock(t, at, time.FixedZone("CET", 3600))
	runLibCases(t, []libCase{
		{expr: `os.time({year = 2026, month = 11, day = 27, hour = 22, min = 49, sec = 50})`, want: u(at)},
	})
}

func TestOsDate(t *testing.T) {
	at := time.Date(2026, 3, 5, 7, 8, 9, 0, time.UTC) // a Thursday
	fixClock(t, at, time.FixedZone("CET", 3600))
	runLibCases(t, []libCase{
		{expr: `os.date("!%Y-%m-%dT%H:%M:%SZ")`, want: "2026-03-05T07:08:09Z"},
		{expr: `os.date("%Y-%m-%d %H:%M:%S %Z %z")`, want: "2026-03-05 08:08:09 CET +0100"},
		{expr: `os.date("!%c")`, want: "Thu Mar  5 07:08:09 2026"},
		{expr: `os.date()`, want: "Thu Mar  5 08:08:09 2026"},
		{expr: `os.date("!%Y", 0)`, want: "1970"},
		{expr: `os.date("!%H:%M", 90.7)`, want: "00:01"},
		{expr: `os.date("!%Y-%m-%d", os.time({year = 2026, month = 2, day = 29}))`, want: "2026-03-01"},
		{expr: `os.date("!*t")`, want: map[string]any{"year": 2026.0, "month": 3.0, "day": 5.0, "hour": 7.0, "min": 8.0, "sec": 9.0, "wday": 5.0, "yday": 64.0, "isdst": false}},
		{expr: `os.date("*t").hour`, want: 8.0},
		{expr: `os.date("100%% %Q %")`, want: "100% %Q %"},
		{expr: `os.date("!%Y", "x")`, wantErr: "number expected, got string"},
		{expr: `os.date("!%Y", 1e300)`, wantErr: "time out of range"},
		{expr: `os.date(string.rep("%c", 300000))`, wantErr: "memory budget"},
	})
}

func TestStrftime(t *testing.T) {
	at := time.Date(2026, 1, 4, 15, 4, 5, 0, time.UTC) // a Sunday, ISO week 1 of 2026
	for _, tc := range []struct{ format, want string }{
		{"%a %A %b %B %h", "Sun Sunday Jan January Jan"},
		{"%c", "Sun Jan  4 15:04:05 2026"},
		{"%C %y %Y %g %G", "20 26 2026 26 2026"},
		{"%d %e %j %m", "04  4 004 01"},
		{"%D %x %F", "01/04/26 01/04/26 2026-01-04"},
		{"%H %I %M %S %p", "15 03 04 05 PM"},
		{"%R %T %X", "15:04 15:04:05 15:04:05"},
		{"%u %w %U %W %V", "7 0 01 00 01"},
		{"%n%t%%", "\n\t%"},
		{"%s", "1767539045"},
		{"%z %Z", "+0000 UTC"},
		{"%Q %", "%Q %"},
		{"", ""},
		{"plain", "plain"},
	} {
		if got := strftime(tc.format, at); got != tc.want {
			t.Errorf("strftime(%q) = %q, want %q", tc.format, got, tc.want)
		}
	}
	midnight := time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)
	if got := strftime("%I %p %j %U %W", midnight); got != "12 AM 365 52 52" {
		t.Errorf("strftime at midnight = %q", got)
	}
}

// FuzzStrftime: any format gives a string within the bound, never a panic.
func FuzzStrftime(f *testing.F) {
	for _, seed := range []string{"%c", "%Y-%m-%d", "%", "%%%", "%Z%z%s", "\x00%\xff"} {
		f.Add(seed, int64(0))
	}
	f.Fuzz(func(t *testing.T, format string, secs int64) {
		secs %= 1 << 40
		s := strftime(format, time.Unix(secs, 0).UTC())
		if len(s) > len(format)*maxConversion {
			t.Fatalf("strftime(%q) is %d bytes long, above %d", format, len(s), len(format)*maxConversion)
		}
	})
}
