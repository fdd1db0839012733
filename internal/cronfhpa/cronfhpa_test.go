package cronfhpa_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cronfhpa"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		schedule, tz string
		from, want   string
		err          string
	}{
		{"*/1 * * * *", "", "2026-11-28T01:00:30Z", "2026-11-28T01:01:00Z", ""},
		{"30 8 * * *", "", "2026-11-28T09:00:00Z", "2026-11-29T08:30:00Z", ""},
		{"30 8 * * *", "Asia/Shanghai", "2026-11-28T00:00:00Z", "2026-11-28T00:30:00Z", ""},     // 08:30 +08:00
		{"0 9 * * 1-5", "America/New_York", "2026-11-28T00:00:00Z", "2026-11-30T14:00:00Z", ""}, // Saturday → Monday 09:00 EST
		{"@hourly", "", "2026-11-28T01:10:00Z", "2026-11-28T02:00:00Z", ""},
		{"0 8 * * *", "Mars/Olympus", "", "", `timeZone "Mars/Olympus" is not a time zone`},
		{"61 * * * *", "", "", "", "not a cron expression of five fields"},
		{"0 0 8 * * *", "", "", "", "not a cron expression of five fields"},
		{"CRON_TZ=UTC 0 8 * * *", "", "", "", "set the time zone with timeZone"},
	} {
		s, err := cronfhpa.Parse(tc.schedule, tc.tz)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %s: err %v, want %q", tc.schedule, tc.tz, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", tc.schedule, tc.tz, err)
			continue
		}
		if got := s.Next(at(tc.from)); !got.Equal(at(tc.want)) {
			t.Errorf("%s %s: next after %s = %s, want %s", tc.schedule, tc.tz, tc.from, got, tc.want)
		}
	}
}

func cfhpa(rules ...autoscalingv1alpha1.CronFederatedHPARule) *autoscalingv1alpha1.CronFederatedHPA {
	return &autoscalingv1alpha1.CronFederatedHPA{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: autoscalingv1alpha1.CronFederatedHPASpec{Rules: rules}}
}

func rule(name, schedule string, replicas int32) autoscalingv1alpha1.CronFederatedHPARule {
	return autoscalingv1alpha1.CronFederatedHPARule{Name: name, Schedule: schedule, TargetReplicas: ptr.To(replicas)}
}

func next(c *autoscalingv1alpha1.CronFederatedHPA, name, t string) {
	c.Status.ExecutionHistories = append(c.Status.ExecutionHistories, autoscalingv1alpha1.ExecutionHistory{RuleName: name, NextExecutionTime: &metav1.Time{Time: at(t)}})
}

func TestPlanAt(t *testing.T) {
	suspended := rule("night", "0 22 * * *", 1)
	suspended.Suspend = ptr.To(true)
	badTZ := rule("tz", "0 8 * * *", 1)
	badTZ.TimeZone = ptr.To("Nowhere/Land")
	for _, tc := range []struct {
		name    string
		c       *autoscalingv1alpha1.CronFederatedHPA
		now     string
		due     map[string]string // rule → schedule time
		next    map[string]string // rule → next ("" suspended)
		requeue time.Duration
		invalid []string
	}{
		{name: "a new rule waits for its first fire time", c: cfhpa(rule("up", "*/5 * * * *", 5)), now: "2026-11-28T01:02:00Z",
			next: map[string]string{"up": "2026-11-28T01:05:00Z"}, requeue: 3 * time.Minute},
		{name: "a rule whose time has come fires and looks ahead", c: func() *autoscalingv1alpha1.CronFederatedHPA {
			c := cfhpa(rule("up", "*/5 * * * *", 5))
			next(c, "up", "2026-11-28T01:05:00Z")
			return c
		}(), now: "2026-11-28T01:05:01Z", due: map[string]string{"up": "2026-11-28T01:05:00Z"}, next: map[string]string{"up": "2026-11-28T01:10:00Z"}, requeue: 4*time.Minute + 59*time.Second},
		{name: "missed fire times: fires once, for the latest", c: func() *autoscalingv1alpha1.CronFederatedHPA {
			c := cfhpa(rule("up", "*/5 * * * *", 5))
			next(c, "up", "2026-11-28T01:05:00Z")
			return c
		}(), now: "2026-11-28T01:17:00Z", due: map[string]string{"up": "2026-11-28T01:15:00Z"}, next: map[string]string{"up": "2026-11-28T01:20:00Z"}, requeue: 3 * time.Minute},
		{name: "not yet", c: func() *autoscalingv1alpha1.CronFederatedHPA {
			c := cfhpa(rule("up", "*/5 * * * *", 5))
			next(c, "up", "2026-11-28T01:05:00Z")
			return c
		}(), now: "2026-11-28T01:04:00Z", next: map[string]string{"up": "2026-11-28T01:05:00Z"}, requeue: time.Minute},
		{name: "an edited schedule starts again from now", c: func() *autoscalingv1alpha1.CronFederatedHPA {
			c := cfhpa(rule("up", "0 8 * * *", 5))
			next(c, "up", "2026-11-28T01:05:00Z") // a fire time of the old */5
			return c
		}(), now: "2026-11-28T01:06:00Z", next: map[string]string{"up": "2026-11-28T08:00:00Z"}, requeue: 6*time.Hour + 54*time.Minute},
		{name: "suspended rules and bad time zones do not fire", c: func() *autoscalingv1alpha1.CronFederatedHPA {
			c := cfhpa(suspended, badTZ, rule("up", "*/5 * * * *", 5))
			next(c, "night", "2026-11-27T22:00:00Z")
			return c
		}(), now: "2026-11-28T01:06:00Z", next: map[string]string{"night": "", "up": "2026-11-28T01:10:00Z"}, requeue: 4 * time.Minute, invalid: []string{"tz"}},
		{name: "time zones: 08:30 in Shanghai is 00:30 UTC", c: func() *autoscalingv1alpha1.CronFederatedHPA {
			r := rule("up", "30 8 * * *", 5)
			r.TimeZone = ptr.To("Asia/Shanghai")
			c := cfhpa(r)
			next(c, "up", "2026-11-28T00:30:00Z")
			return c
		}(), now: "2026-11-28T00:30:00Z", due: map[string]string{"up": "2026-11-28T00:30:00Z"}, next: map[string]string{"up": "2026-11-29T00:30:00Z"}, requeue: 24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cronfhpa.PlanAt(tc.c, at(tc.now))
			due := map[string]string{}
			for _, d := range p.Due {
				due[d.Rule.Name] = d.ScheduleTime.Format(time.RFC3339)
			}
			if len(due) != len(tc.due) {
				t.Fatalf("due %v, want %v", due, tc.due)
			}
			for k, v := range tc.due {
				if due[k] != v {
					t.Fatalf("due %v, want %v", due, tc.due)
				}
			}
			for k, v := range tc.next {
				got, ok := p.Next[k]
				if !ok || (v == "" && got != nil) || (v != "" && (got == nil || !got.Equal(at(v)))) {
					t.Fatalf("next[%s] = %v, want %q", k, got, v)
				}
			}
			if p.RequeueAfter != tc.requeue {
				t.Fatalf("requeue %s, want %s", p.RequeueAfter, tc.requeue)
			}
			for _, n := range tc.invalid {
				if p.Invalid[n] == nil {
					t.Fatalf("%s not invalid: %v", n, p.Invalid)
				}
			}
		})
	}
}

func TestRecordKeepsNewestWithinLimits(t *testing.T) {
	r := rule("up", "*/5 * * * *", 5)
	r.SuccessfulHistoryLimit = ptr.To[int32](2)
	c := cfhpa(r)
	c.Status.ExecutionHistories = []autoscalingv1alpha1.ExecutionHistory{{RuleName: "gone"}}
	now := at("2026-11-28T01:00:00Z")
	for i := range 3 {
		p := cronfhpa.Plan{Next: map[string]*time.Time{"up": ptr.To(now.Add(5 * time.Minute))}}
		results := []cronfhpa.Result{{Due: cronfhpa.Due{Rule: r, ScheduleTime: now}, At: now.Add(time.Second)}}
		if i == 1 {
			results = append(results, cronfhpa.Result{Due: cronfhpa.Due{Rule: r, ScheduleTime: now}, At: now, Err: errTest("target not found")})
		}
		c.Status.ExecutionHistories = cronfhpa.Record(c, p, results)
		now = now.Add(5 * time.Minute)
	}
	h := c.Status.ExecutionHistories
	if len(h) != 1 || h[0].RuleName != "up" {
		t.Fatalf("histories %+v", h)
	}
	if len(h[0].SuccessfulExecutions) != 2 || !h[0].SuccessfulExecutions[0].ScheduleTime.Time.Equal(at("2026-11-28T01:10:00Z")) {
		t.Fatalf("successes %+v", h[0].SuccessfulExecutions)
	}
	if *h[0].SuccessfulExecutions[0].AppliedReplicas != 5 {
		t.Fatal("applied replicas not recorded")
	}
	if len(h[0].FailedExecutions) != 1 || h[0].FailedExecutions[0].Message != "target not found" {
		t.Fatalf("failures %+v", h[0].FailedExecutions)
	}
	if !h[0].NextExecutionTime.Time.Equal(at("2026-11-28T01:15:00Z")) {
		t.Fatalf("next %v", h[0].NextExecutionTime)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }

func TestSelect(t *testing.T) {
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	mk := func(name, target string, fleet, tmpl int32, when string) autoscalingv1alpha1.CronFederatedHPA {
		c := cfhpa()
		c.Name = name
		c.Spec.ScaleTargetRef.APIVersion, c.Spec.ScaleTargetRef.Kind, c.Spec.ScaleTargetRef.Name = "apps/v1", "Deployment", target
		if when != "" {
			c.Status.FleetReplicas, c.Status.TemplateReplicas = ptr.To(fleet), ptr.To(tmpl)
			c.Status.LastScaleTime, c.Status.LastRule = &metav1.Time{Time: at(when)}, "up"
		}
		return *c
	}
	items := []autoscalingv1alpha1.CronFederatedHPA{
		mk("a", "web", 5, 3, "2026-11-28T08:00:00Z"),
		mk("b", "web", 10, 3, "2026-11-28T09:00:00Z"),
		mk("c", "other", 7, 3, "2026-11-28T10:00:00Z"),
		mk("d", "web", 0, 0, ""),
	}
	a := cronfhpa.Select(items, deploy, "web")
	if a == nil || a.Name != "b" || a.FleetReplicas != 10 {
		t.Fatalf("selected %+v", a)
	}
	if !a.Applies(3) || a.Applies(4) {
		t.Fatal("applies only while the template asks for its replicas at the fire")
	}
	if !strings.Contains(a.Marker(), "CronFederatedHPA b, rule up") {
		t.Fatal(a.Marker())
	}
	if cronfhpa.Select(items, schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "web") != nil {
		t.Fatal("another kind selected")
	}
	var none *cronfhpa.Active
	if none.Applies(3) || none.Marker() != "" {
		t.Fatal("nil applies")
	}
}

// FuzzParse: any schedule and time zone parse or give an error; never a panic, and a parsed
// schedule's next fire time is after the time asked about.
func FuzzParse(f *testing.F) {
	f.Add("*/1 * * * *", "")
	f.Add("30 8 * * 1-5", "Asia/Shanghai")
	f.Add("@every 90s", "")
	f.Add("0 0 31 2 *", "UTC")
	f.Fuzz(func(t *testing.T, schedule, tz string) {
		s, err := cronfhpa.Parse(schedule, tz)
		if err != nil {
			return
		}
		from := at("2026-11-28T01:00:00Z")
		if n := s.Next(from); !n.IsZero() && !n.After(from) {
			t.Fatalf("next %s not after %s", n, from)
		}
	})
}
