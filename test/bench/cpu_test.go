package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/flotilla-io/flotilla/internal/localcluster"
)

// userHZ is the unit of the CPU times in /proc (USER_HZ, 100 on Linux whatever the kernel's
// own tick rate).
const userHZ = 100

// cpuSample is the CPU time used so far by the processes a phase of a bench is charged to,
// and by the whole machine, in seconds.
type cpuSample struct {
	hostAPIServer, hostEtcd, members, manager, bench float64
	machineBusy, machineAll                          float64
}

// sampleCPU reads the CPU time of the host's apiserver and etcd, of the members' apiservers
// and etcds together, of the manager processes and of this process, and the machine's.
func sampleCPU(host *localcluster.Cluster, members []*localcluster.Cluster, managers ...*managerProcess) cpuSample {
	var s cpuSample
	for _, p := range host.Processes() {
		switch p.Name {
		case "kube-apiserver":
			s.hostAPIServer += processCPU(p.PID)
		case "etcd":
			s.hostEtcd += processCPU(p.PID)
		}
	}
	for _, m := range members {
		for _, p := range m.Processes() {
			if p.Name == "kube-apiserver" || p.Name == "etcd" {
				s.members += processCPU(p.PID)
			}
		}
	}
	for _, m := range managers {
		s.manager += processCPU(m.cmd.Process.Pid)
	}
	s.bench = processCPU(os.Getpid())
	s.machineBusy, s.machineAll = machineCPU()
	return s
}

// processCPU is the user and system CPU time of a process, in seconds, or 0 when it cannot be
// read.
func processCPU(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields that follow it are
	// state (3), ... utime (14), stime (15), counted from 1 with pid and name first.
	rest := string(data)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / userHZ
}

// machineCPU is the machine's busy and total CPU time over all cores, in seconds, from the
// first line of /proc/stat (idle and iowait count as not busy).
func machineCPU() (busy, all float64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i >= 8 { // guest times are counted in user and nice already
			break
		}
		all += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy / userHZ, all / userHZ
}

// cpuRow describes the CPU a phase used per template, in milliseconds, and how busy the
// machine was.
func cpuRow(before, after cpuSample, templates int) string {
	per := func(a, b float64) string { return fmt.Sprintf("%.1f", (b-a)*1000/float64(templates)) }
	busy := 0.0
	if all := after.machineAll - before.machineAll; all > 0 {
		busy = (after.machineBusy - before.machineBusy) / all * 100
	}
	return fmt.Sprintf("%s / %s / %s / %s / %s ms (machine %.0f%% busy)",
		per(before.hostAPIServer, after.hostAPIServer), per(before.hostEtcd, after.hostEtcd),
		per(before.manager, after.manager), per(before.members, after.members), per(before.bench, after.bench), busy)
}

// cpuTotal is the CPU all the processes of cpuSample (host apiserver and etcd, manager,
// members, bench client) used per template between two samples, in milliseconds.
func cpuTotal(before, after cpuSample, templates int) float64 {
	sum := func(s cpuSample) float64 { return s.hostAPIServer + s.hostEtcd + s.manager + s.members + s.bench }
	return (sum(after) - sum(before)) * 1000 / float64(templates)
}

// busyPct is how busy the machine was between two samples, in percent.
func busyPct(before, after cpuSample) float64 {
	if all := after.machineAll - before.machineAll; all > 0 {
		return (after.machineBusy - before.machineBusy) / all * 100
	}
	return 0
}

// cores is the number of CPUs the machine has.
func cores() int { return runtime.NumCPU() }
