// Package interpreterhook is an interpreter webhook for tests: an HTTPS server on 127.0.0.1
// with a certificate of its own generated CA, that answers Karmada's interpreter webhook
// protocol (ResourceInterpreterContext) with a function of the request.
package interpreterhook

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
)

// Handler answers one request; the server sets the response's uid from the request unless
// the handler set one.
type Handler func(req *configv1alpha1.ResourceInterpreterRequest) *configv1alpha1.ResourceInterpreterResponse

// Server is a running test webhook. Close it.
type Server struct {
	// CABundle is the PEM of the CA that signed the server's certificate.
	CABundle []byte
	// URL is https://127.0.0.1:PORT.
	URL string

	srv     *httptest.Server
	mu      sync.Mutex
	handler Handler
	hold    chan struct{}
	calls   atomic.Int64
	byOp    sync.Map // operation -> *atomic.Int64
}

// Start starts a server answering with h.
func Start(h Handler) (*Server, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flotilla-test-interpreter-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	s := &Server{handler: h, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.srv.Listener = l
	s.srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}}
	s.srv.StartTLS()
	s.URL = s.srv.URL
	return s, nil
}

// SetHandler changes how the server answers.
func (s *Server) SetHandler(h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// Hold makes every call wait until Release (or the caller gives up): a webhook that does not
// answer in time.
func (s *Server) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold == nil {
		s.hold = make(chan struct{})
	}
}

// Release lets held calls, and later ones, answer.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold != nil {
		close(s.hold)
		s.hold = nil
	}
}

// Calls is how many requests the server got.
func (s *Server) Calls() int64 { return s.calls.Load() }

// CallsOf is how many requests of op the server got.
func (s *Server) CallsOf(op configv1alpha1.InterpreterOperation) int64 {
	if v, ok := s.byOp.Load(op); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// Close stops the server (releasing held calls first).
func (s *Server) Close() {
	s.Release()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	var in configv1alpha1.ResourceInterpreterContext
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
		http.Error(w, "not a ResourceInterpreterContext request", http.StatusBadRequest)
		return
	}
	v, _ := s.byOp.LoadOrStore(in.Request.Operation, &atomic.Int64{})
	v.(*atomic.Int64).Add(1)
	s.mu.Lock()
	h, hold := s.handler, s.hold
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	resp := h(in.Request)
	if resp == nil {
		resp = &configv1alpha1.ResourceInterpreterResponse{Successful: false, Status: &configv1alpha1.RequestStatus{Code: 400, Message: "not handled"}}
	}
	if resp.UID == "" {
		resp.UID = in.Request.UID
	}
	out := configv1alpha1.ResourceInterpreterContext{Response: resp}
	out.APIVersion, out.Kind = configv1alpha1.GroupVersion.String(), "ResourceInterpreterContext"
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// JSONPatch is a response patch of the operations given.
func JSONPatch(ops ...map[string]any) ([]byte, *configv1alpha1.PatchType) {
	data, _ := json.Marshal(ops)
	t := configv1alpha1.PatchTypeJSONPatch
	return data, &t
}
