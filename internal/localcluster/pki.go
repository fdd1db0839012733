package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// certValidity is long enough for a local fleet left running for months.
const certValidity = 2 * 365 * 24 * time.Hour

// AdminUser is the user name the admin token authenticates as; it is in system:masters.
const AdminUser = "flotilla-admin"

// ControllerManagerUser is the user kube-controller-manager authenticates as.
const ControllerManagerUser = "system:kube-controller-manager"

// controllerManagerToken is kube-controller-manager's token, derived from the admin token.
func controllerManagerToken(admin string) string { return admin + "-kcm" }

// hasControllerManagerToken reports whether the tokens file knows kube-controller-manager's
// user (clusters made by older versions do not).
func hasControllerManagerToken(files pkiFiles) bool {
	tokens, err := os.ReadFile(files.Tokens)
	return err == nil && strings.Contains(string(tokens), ","+ControllerManagerUser+",")
}

// pkiFiles are the paths of the credentials a cluster's processes read.
type pkiFiles struct {
	CACert, CAKey           string // the cluster CA; also signs kubelet-style CSRs in full clusters
	ServingCert, ServingKey string // kube-apiserver's serving certificate for 127.0.0.1 and localhost
	SAKey, SAPublicKey      string // service-account token signing key pair (RSA)
	Tokens                  string // --token-auth-file
}

// credentials holds what clients need to reach the apiserver.
type credentials struct {
	caPEM      []byte
	adminToken string
}

// pkiPaths returns the credential paths in dir.
func pkiPaths(dir string) pkiFiles {
	return pkiFiles{
		CACert:      filepath.Join(dir, "ca.crt"),
		CAKey:       filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "apiserver.crt"),
		ServingKey:  filepath.Join(dir, "apiserver.key"),
		SAKey:       filepath.Join(dir, "sa.key"),
		SAPublicKey: filepath.Join(dir, "sa.pub"),
		Tokens:      filepath.Join(dir, "tokens.csv"),
	}
}

// readCredentials reads back what writePKI wrote.
func readCredentials(files pkiFiles) (credentials, error) {
	ca, err := os.ReadFile(files.CACert)
	if err != nil {
		return credentials{}, err
	}
	tokens, err := os.ReadFile(files.Tokens)
	if err != nil {
		return credentials{}, err
	}
	token, _, ok := strings.Cut(string(tokens), ",")
	if !ok || token == "" {
		return credentials{}, fmt.Errorf("%s: no token", files.Tokens)
	}
	return credentials{caPEM: ca, adminToken: token}, nil
}

// writePKI generates a CA, a serving certificate signed by it, a service-account key
// pair and an admin token, and writes them into dir with owner-only permissions.
func writePKI(dir, clusterName string) (pkiFiles, credentials, error) {
	files := pkiPaths(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return files, credentials{}, err
	}

	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, credentials{}, fmt.Errorf("generating CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "flotilla-localcluster-ca-" + clusterName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caCert, caDER, err := signCert(caTemplate, caTemplate, caKey.Public(), caKey)
	if err != nil {
		return files, credentials{}, fmt.Errorf("creating CA certificate: %w", err)
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, credentials{}, fmt.Errorf("generating serving key: %w", err)
	}
	servingTemplate := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(kubernetesServiceIP)},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}
	_, servingDER, err := signCert(servingTemplate, caCert, servingKey.Public(), caKey)
	if err != nil {
		return files, credentials{}, fmt.Errorf("creating serving certificate: %w", err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return files, credentials{}, fmt.Errorf("generating service-account key: %w", err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return files, credentials{}, fmt.Errorf("encoding service-account public key: %w", err)
	}

	token, err := randomToken()
	if err != nil {
		return files, credentials{}, err
	}

	caKeyDER, err := x509.MarshalPKCS8PrivateKey(caKey)
	if err != nil {
		return files, credentials{}, fmt.Errorf("encoding CA key: %w", err)
	}
	servingKeyDER, err := x509.MarshalPKCS8PrivateKey(servingKey)
	if err != nil {
		return files, credentials{}, fmt.Errorf("encoding serving key: %w", err)
	}

	caPEM := pemBlock("CERTIFICATE", caDER)
	writes := []struct {
		path string
		data []byte
	}{
		{files.CACert, caPEM},
		{files.CAKey, pemBlock("PRIVATE KEY", caKeyDER)},
		{files.ServingCert, append(pemBlock("CERTIFICATE", servingDER), caPEM...)},
		{files.ServingKey, pemBlock("PRIVATE KEY", servingKeyDER)},
		{files.SAKey, pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))},
		{files.SAPublicKey, pemBlock("PUBLIC KEY", saPub)},
		// token,user,uid,"group1,group2"
		// kube-controller-manager has its own identity, as in a kubeadm cluster; it is in
		// system:masters so that it can run every controller on its own credentials too
		// (--use-service-account-credentials=false).
		{files.Tokens, fmt.Appendf(nil, "%s,%s,%s,\"system:masters\"\n%s,%s,%s,\"system:masters\"\n",
			token, AdminUser, AdminUser, controllerManagerToken(token), ControllerManagerUser, ControllerManagerUser)},
	}
	for _, w := range writes {
		if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
			return files, credentials{}, err
		}
	}
	return files, credentials{caPEM: caPEM, adminToken: token}, nil
}

// signCert creates a certificate from template, signed by parent's key, and returns it
// parsed and DER-encoded.
func signCert(template, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) (*x509.Certificate, []byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	template.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, template, parent, pub, signer)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, der, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// randomToken returns 32 random bytes, hex-encoded.
func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
