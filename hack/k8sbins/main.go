// Command k8sbins downloads the official release binaries of kube-apiserver,
// kube-controller-manager, kube-scheduler, etcd and kwok for the pinned versions, verifies
// each against its published SHA-256 and installs the ones that pass into -dir.
// hack/k8s-bins.sh runs it first and builds from source whatever it could not install, so
// it never fails the caller: every problem (no network, 404, bad checksum, truncated
// download) is logged and that binary is simply left missing.
//
//	go run ./hack/k8sbins -dir CACHE [-arch amd64] NAME...
//
// Sources (base URLs overridable, e.g. to a loopback server in tests):
//
//	kube-*: $FLOTILLA_K8S_RELEASE_URL (https://dl.k8s.io/release)/<v>/bin/linux/<arch>/<name>
//	        checked against <that URL>.sha256
//	etcd:   $FLOTILLA_ETCD_RELEASE_URL (https://github.com/etcd-io/etcd/releases/download)
//	        /<v>/etcd-<v>-linux-<arch>.tar.gz, checked against /<v>/SHA256SUMS
//	kwok:   $FLOTILLA_KWOK_RELEASE_URL (https://github.com/kubernetes-sigs/kwok/releases/download)
//	        /<v>/kwok-linux-<arch>, checked against $FLOTILLA_KWOK_SHA256: kwok's releases
//	        publish no checksum file we could confirm, so without a pinned hash kwok is not
//	        downloaded (never installed unverified).
package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// maxBinary bounds any one download (kube-apiserver is about 100 MB).
const maxBinary = 1 << 30

// Fetcher downloads and verifies release binaries.
type Fetcher struct {
	K8sURL, EtcdURL, KwokURL             string
	K8sVersion, EtcdVersion, KwokVersion string
	Arch                                 string
	// KwokSHA256 is the expected hex SHA-256 of kwok-linux-<arch>; empty: no kwok download.
	KwokSHA256 string

	Client *http.Client
	// Stall aborts a download that receives nothing for this long; Total bounds one binary.
	Stall, Total time.Duration
	Log          func(format string, args ...any)
}

// NewFetcher returns a Fetcher with the defaults and short network timeouts.
func NewFetcher() *Fetcher {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &Fetcher{
		K8sURL:  "https://dl.k8s.io/release",
		EtcdURL: "https://github.com/etcd-io/etcd/releases/download",
		KwokURL: "https://github.com/kubernetes-sigs/kwok/releases/download",
		Arch:    runtime.GOARCH,
		Client: &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 15 * time.Second,
		}},
		Stall: 30 * time.Second,
		Total: 10 * time.Minute,
		Log:   func(f string, a ...any) { fmt.Fprintf(os.Stderr, "k8s-bins: "+f+"\n", a...) },
	}
}

// Fetch downloads name, verifies it and installs it as dir/name (mode 0755). On any error
// nothing is left in dir.
func (f *Fetcher) Fetch(ctx context.Context, name, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, f.Total)
	defer cancel()
	switch name {
	case "kube-apiserver", "kube-controller-manager", "kube-scheduler":
		url := fmt.Sprintf("%s/%s/bin/linux/%s/%s", strings.TrimRight(f.K8sURL, "/"), f.K8sVersion, f.Arch, name)
		sum, err := f.get(ctx, url+".sha256", 1<<10)
		if err != nil {
			return fmt.Errorf("checksum: %w", err)
		}
		want, err := parseSum(string(sum), "")
		if err != nil {
			return fmt.Errorf("checksum %s: %w", url+".sha256", err)
		}
		return f.install(ctx, url, want, dir, name, nil)
	case "etcd":
		base := fmt.Sprintf("%s/%s", strings.TrimRight(f.EtcdURL, "/"), f.EtcdVersion)
		tarball := fmt.Sprintf("etcd-%s-linux-%s.tar.gz", f.EtcdVersion, f.Arch)
		sums, err := f.get(ctx, base+"/SHA256SUMS", 1<<20)
		if err != nil {
			return fmt.Errorf("checksum: %w", err)
		}
		want, err := parseSum(string(sums), tarball)
		if err != nil {
			return fmt.Errorf("checksum %s/SHA256SUMS: %w", base, err)
		}
		return f.install(ctx, base+"/"+tarball, want, dir, name, extractEtcd)
	case "kwok":
		if f.KwokSHA256 == "" {
			return errors.New("kwok publishes no checksum file we could confirm; set FLOTILLA_KWOK_SHA256 to download it")
		}
		want, err := parseSum(f.KwokSHA256, "")
		if err != nil {
			return fmt.Errorf("FLOTILLA_KWOK_SHA256: %w", err)
		}
		url := fmt.Sprintf("%s/%s/kwok-linux-%s", strings.TrimRight(f.KwokURL, "/"), f.KwokVersion, f.Arch)
		return f.install(ctx, url, want, dir, name, nil)
	}
	return fmt.Errorf("unknown binary %q", name)
}

// install downloads url into a temporary file in dir, checks its SHA-256 against want,
// optionally extracts the binary from it, and renames the result to dir/name.
func (f *Fetcher) install(ctx context.Context, url, want, dir, name string, extract func(archive, out *os.File) error) error {
	tmp, err := os.CreateTemp(dir, ".download-"+name+"-")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	defer func() { _ = tmp.Close() }()
	h := sha256.New()
	if err := f.copy(ctx, url, io.MultiWriter(tmp, h)); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%s: checksum mismatch: got %s, published %s", url, got, want)
	}
	final := tmp
	if extract != nil {
		out, err := os.CreateTemp(dir, ".extract-"+name+"-")
		if err != nil {
			return err
		}
		defer func() { _ = os.Remove(out.Name()) }()
		defer func() { _ = out.Close() }()
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := extract(tmp, out); err != nil {
			return fmt.Errorf("%s: %w", url, err)
		}
		final = out
	}
	if err := final.Chmod(0o755); err != nil {
		return err
	}
	if err := final.Close(); err != nil {
		return err
	}
	return os.Rename(final.Name(), filepath.Join(dir, name))
}

// get returns a small body (a checksum file) of at most limit bytes.
func (f *Fetcher) get(ctx context.Context, url string, limit int64) ([]byte, error) {
	var b strings.Builder
	if err := f.copy(ctx, url, &limitWriter{w: &b, n: limit}); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// copy streams url's body into w, failing on a non-200 status, a body shorter than its
// Content-Length, or no progress for f.Stall.
func (f *Fetcher) copy(ctx context.Context, url string, w io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(f.Stall, func() { cancel(fmt.Errorf("no data for %s", f.Stall)) })
	defer stall.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := f.Client.Do(req)
	if err != nil {
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
			return fmt.Errorf("%s: %w", url, c)
		}
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	n, err := io.Copy(w, &progressReader{r: io.LimitReader(resp.Body, maxBinary), stall: stall, d: f.Stall})
	if err != nil {
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
			return fmt.Errorf("%s: %w", url, c)
		}
		return fmt.Errorf("%s: %w", url, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("%s: truncated: %d of %d bytes", url, n, resp.ContentLength)
	}
	return nil
}

type progressReader struct {
	r     io.Reader
	stall *time.Timer
	d     time.Duration
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.stall.Reset(p.d)
	}
	return n, err
}

type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > l.n {
		return 0, errors.New("checksum file too large")
	}
	l.n -= int64(len(b))
	return l.w.Write(b)
}

// parseSum finds the hex SHA-256 in a checksum file: with file empty, the first field of a
// bare "<hash>" or "<hash>  <name>" file; otherwise the hash on the line naming file
// (sha256sum format, "<hash>  <name>" or "<hash> *<name>").
func parseSum(text, file string) (string, error) {
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if file != "" {
			if len(fields) < 2 || path.Base(strings.TrimPrefix(fields[1], "*")) != file {
				continue
			}
		}
		sum := strings.ToLower(fields[0])
		if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
			return "", fmt.Errorf("not a SHA-256: %q", fields[0])
		}
		return sum, nil
	}
	if file != "" {
		return "", fmt.Errorf("no entry for %s", file)
	}
	return "", errors.New("empty")
}

// extractEtcd copies the etcd binary out of etcd's release tarball
// (etcd-<v>-linux-<arch>/etcd).
func extractEtcd(archive, out *os.File) error {
	gz, err := gzip.NewReader(archive)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return errors.New("no etcd binary in the tarball")
		}
		if err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg && path.Base(hdr.Name) == "etcd" && strings.Count(strings.Trim(hdr.Name, "/"), "/") <= 1 {
			if _, err := io.Copy(out, io.LimitReader(tr, maxBinary)); err != nil {
				return err
			}
			return nil
		}
	}
}

// Run fetches each name into dir, logging each outcome, and returns the names installed.
func (f *Fetcher) Run(ctx context.Context, dir string, names []string) []string {
	var ok []string
	for _, name := range names {
		start := time.Now()
		f.Log("downloading %s", name)
		if err := f.Fetch(ctx, name, dir); err != nil {
			f.Log("%s not downloaded (%v); it will be built from source", name, err)
			continue
		}
		f.Log("%s downloaded and verified in %s", name, time.Since(start).Round(100*time.Millisecond))
		ok = append(ok, name)
	}
	return ok
}

func main() {
	f := NewFetcher()
	dir := flag.String("dir", "", "directory to install the binaries into (required)")
	flag.StringVar(&f.Arch, "arch", f.Arch, "architecture (amd64, arm64, ...)")
	flag.StringVar(&f.K8sVersion, "k8s-version", "", "Kubernetes version, e.g. v1.36.3")
	flag.StringVar(&f.EtcdVersion, "etcd-version", "", "etcd version, e.g. v3.6.16")
	flag.StringVar(&f.KwokVersion, "kwok-version", "", "kwok version, e.g. v0.8.0")
	flag.Parse()
	if *dir == "" || f.K8sVersion == "" || f.EtcdVersion == "" || f.KwokVersion == "" {
		fmt.Fprintln(os.Stderr, "usage: k8sbins -dir DIR -k8s-version V -etcd-version V -kwok-version V NAME...")
		os.Exit(2)
	}
	for env, dst := range map[string]*string{
		"FLOTILLA_K8S_RELEASE_URL":  &f.K8sURL,
		"FLOTILLA_ETCD_RELEASE_URL": &f.EtcdURL,
		"FLOTILLA_KWOK_RELEASE_URL": &f.KwokURL,
		"FLOTILLA_KWOK_SHA256":      &f.KwokSHA256,
	} {
		if v := os.Getenv(env); v != "" {
			*dst = v
		}
	}
	f.Run(context.Background(), *dir, flag.Args())
}
