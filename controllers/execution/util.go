package execution

import (
	"errors"
	"net"
	"syscall"
)

func isConnRefused(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &op)
}
