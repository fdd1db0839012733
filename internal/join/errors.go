package join

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Kinds of failure. Every error Join and Unjoin return for these wraps one of them (test with
// errors.Is) and says in its message what to do.
var (
	// ErrInvalidName: the Cluster name is not a DNS label of at most MaxNameLength characters.
	ErrInvalidName = errors.New("invalid cluster name")
	// ErrUnreachable: no answer from an apiserver, or one whose certificate does not verify.
	ErrUnreachable = errors.New("apiserver unreachable")
	// ErrUnauthorized: an apiserver rejected the kubeconfig's credentials (401).
	ErrUnauthorized = errors.New("credentials rejected")
	// ErrForbidden: the kubeconfig's user may not do what join needs (403).
	ErrForbidden = errors.New("not allowed")
	// ErrNotInstalled: the host does not serve the Cluster API.
	ErrNotInstalled = errors.New("flotilla is not installed in the host")
	// ErrNameTaken: a Cluster of that name exists for another member.
	ErrNameTaken = errors.New("cluster name taken")
	// ErrAlreadyJoined: the member is joined already, under another name.
	ErrAlreadyJoined = errors.New("member already joined")
	// ErrWrongMember: the member kubeconfig given to unjoin is not the Cluster's member.
	ErrWrongMember = errors.New("kubeconfig is for another member")
)

// Error is a failure of a known kind with a message for the user.
type Error struct {
	Kind error
	msg  string
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.Kind }

func newError(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, msg: fmt.Sprintf(format, args...)}
}

// side is one of the two clusters join talks to, for messages.
type side struct {
	role     string // "member" or "host"
	endpoint string
	flag     string // the flag that names its kubeconfig
}

// explain turns an error from talking to s while doing what into one that says what to do.
func (s side) explain(err error, what string) error {
	if err == nil {
		return nil
	}
	var verify *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	switch {
	case errors.As(err, &verify) || errors.As(err, &unknownCA) || errors.As(err, &hostname):
		return newError(ErrUnreachable, "cannot verify the certificate of the %s apiserver at %s: %v; "+
			"the certificate-authority-data in %s does not match that apiserver", s.role, s.endpoint, err, s.flag)
	case apierrors.IsUnauthorized(err):
		return newError(ErrUnauthorized, "the %s apiserver at %s rejected the credentials in %s (401 Unauthorized): "+
			"its token or client certificate is wrong or has expired; get a fresh kubeconfig for that cluster", s.role, s.endpoint, s.flag)
	case apierrors.IsForbidden(err):
		return newError(ErrForbidden, "the user of %s may not %s in the %s cluster (403 Forbidden: %v); "+
			"join needs cluster-admin in the member, and rights to write Clusters and Secrets in the host", s.flag, what, s.role, err)
	case !answered(err):
		return newError(ErrUnreachable, "cannot reach the %s apiserver at %s to %s: %v; "+
			"check the server address in %s and that it is reachable from here", s.role, s.endpoint, what, err, s.flag)
	}
	return fmt.Errorf("%s in the %s cluster: %w", what, s.role, err)
}

// answered reports whether err carries an HTTP status from an apiserver.
func answered(err error) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s)
}
