package bench

import "testing"

// TestProcStatus reads this process's own status: the bench's memory figures come from it.
func TestProcStatus(t *testing.T) {
	st := procStatus("/proc/self/status")
	for _, f := range []string{"VmRSS", "VmHWM", "RssFile"} {
		if st[f] <= 0 {
			t.Errorf("%s = %d KiB in /proc/self/status, want more than 0 (fields read: %d)", f, st[f], len(st))
		}
	}
	if st["VmHWM"] < st["VmRSS"] {
		t.Errorf("peak VmHWM %d KiB is below the current VmRSS %d KiB", st["VmHWM"], st["VmRSS"])
	}
	if got := procStatus("/proc/no-such-process/status"); len(got) != 0 {
		t.Errorf("a missing process read as %v, want no fields", got)
	}
}
