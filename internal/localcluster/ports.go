package localcluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports are picked below the kernel's ephemeral range, where outgoing connections never
// take them: a cluster's apiserver must get its port back when it is restarted, and a
// port from the ephemeral range may meanwhile serve as the local end of some connection.
const (
	minPort = 20000
	// pickAttempts bounds the search for a free port before falling back to the kernel.
	pickAttempts = 200
)

// portPicker remembers the ports it handed out so that clusters started concurrently in
// one process never get the same one; other processes are caught by the bind check and,
// should a race still happen, by the retry in Start.
type portPicker struct {
	mu     sync.Mutex
	issued map[int]bool
}

// ports is process-wide on purpose: it guards a process-wide resource.
var ports = &portPicker{issued: map[int]bool{}}

// pick returns a port that 127.0.0.1 could bind a moment ago and that this process has not
// handed out before.
func (p *portPicker) pick() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()

	if maxPort := ephemeralLow() - 1; maxPort-minPort > 1000 {
		for range pickAttempts {
			port := minPort + rand.IntN(maxPort-minPort+1)
			if p.issued[port] || !canBind(port) {
				continue
			}
			p.issued[port] = true
			return port, nil
		}
	}
	// Fall back to a kernel-chosen (ephemeral) port.
	for range pickAttempts {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("picking a free loopback port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !p.issued[port] {
			p.issued[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port found")
}

// canBind reports whether 127.0.0.1:port is free right now.
func canBind(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// ephemeralLow returns the first port of the kernel's ephemeral range (Linux default
// 32768), from which the kernel picks the local ports of outgoing connections.
func ephemeralLow() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return linuxDefault
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return linuxDefault
	}
	return low
}
