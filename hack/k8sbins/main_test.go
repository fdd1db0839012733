package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Fake "binaries": shell scripts, so a test can run what was installed.
func fakeBinary(name string) []byte {
	return []byte("#!/bin/sh\necho fake " + name + "\n")
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func etcdTarball(t *testing.T, version, arch string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	dir := fmt.Sprintf("etcd-%s-linux-%s/", version, arch)
	files := []struct {
		name string
		body []byte
	}{
		{dir + "README.md", []byte("etcd\n")},
		{dir + "etcdctl", fakeBinary("etcdctl")},
		{dir + "etcd", fakeBinary("etcd")},
	}
	if err := tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// release is a loopback stand-in for dl.k8s.io and the GitHub release pages.
type release struct {
	files     map[string][]byte
	truncated map[string]bool // declare the full length, send half, close
	stall     map[string]bool // send headers, then nothing
}

func (r *release) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, ok := r.files[req.URL.Path]
	if !ok {
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	switch {
	case r.truncated[req.URL.Path]:
		_, _ = w.Write(body[:len(body)/2])
		return // the server closes the connection short of Content-Length
	case r.stall[req.URL.Path]:
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-req.Context().Done():
		case <-time.After(10 * time.Second):
		}
		return
	}
	_, _ = w.Write(body)
}

const (
	k8sV, etcdV, kwokV = "v1.99.0", "v3.99.0", "v0.99.0"
)

// newRelease serves every artefact with correct checksums; tests then break one.
func newRelease(t *testing.T) (*release, *Fetcher) {
	t.Helper()
	r := &release{files: map[string][]byte{}, truncated: map[string]bool{}, stall: map[string]bool{}}
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		p := "/k8s/" + k8sV + "/bin/linux/amd64/" + b
		r.files[p] = fakeBinary(b)
		r.files[p+".sha256"] = []byte(sum(fakeBinary(b)))
	}
	tgz := etcdTarball(t, etcdV, "amd64")
	r.files["/etcd/"+etcdV+"/etcd-"+etcdV+"-linux-amd64.tar.gz"] = tgz
	r.files["/etcd/"+etcdV+"/SHA256SUMS"] = []byte(fmt.Sprintf("%s  etcd-%s-darwin-arm64.zip\n%s  etcd-%s-linux-amd64.tar.gz\n%s  etcd-%s-linux-arm64.tar.gz\n",
		sum([]byte("x")), etcdV, sum(tgz), etcdV, sum([]byte("y")), etcdV))
	r.files["/kwok/"+kwokV+"/kwok-linux-amd64"] = fakeBinary("kwok")

	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server not on 127.0.0.1: %s", srv.URL)
	}
	f := NewFetcher()
	f.K8sURL, f.EtcdURL, f.KwokURL = srv.URL+"/k8s", srv.URL+"/etcd/", srv.URL+"/kwok"
	f.K8sVersion, f.EtcdVersion, f.KwokVersion = k8sV, etcdV, kwokV
	f.Arch = "amd64"
	f.KwokSHA256 = sum(fakeBinary("kwok"))
	f.Stall, f.Total = 2*time.Second, 10*time.Second
	f.Log = t.Logf
	return r, f
}

// runInstalled runs dir/name and returns its output: installed and usable.
func runInstalled(t *testing.T, dir, name string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(dir, name)).CombinedOutput()
	if err != nil {
		t.Fatalf("running installed %s: %v: %s", name, err, out)
	}
	return strings.TrimSpace(string(out))
}

// assertClean checks a failed fetch left nothing behind (no binary, no temporary file).
func assertClean(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind after a failed download: %s", e.Name())
	}
}

func TestFetchGoodChecksumsInstallsEveryBinary(t *testing.T) {
	_, f := newRelease(t)
	dir := t.TempDir()
	names := []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kwok"}
	got := f.Run(context.Background(), dir, names)
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("installed %v, want %v", got, names)
	}
	for _, n := range names {
		if out := runInstalled(t, dir, n); out != "fake "+n {
			t.Errorf("%s printed %q", n, out)
		}
	}
	if len(mustReadDir(t, dir)) != len(names) {
		t.Errorf("unexpected files in %s: %v", dir, mustReadDir(t, dir))
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestFetchRejects(t *testing.T) {
	apiserver := "/k8s/" + k8sV + "/bin/linux/amd64/kube-apiserver"
	tarball := "/etcd/" + etcdV + "/etcd-" + etcdV + "-linux-amd64.tar.gz"
	kwok := "/kwok/" + kwokV + "/kwok-linux-amd64"
	cases := []struct {
		name, bin, wantErr string
		mutate             func(r *release, f *Fetcher)
	}{
		{"bad checksum", "kube-apiserver", "checksum mismatch", func(r *release, _ *Fetcher) {
			r.files[apiserver] = []byte("#!/bin/sh\necho tampered\n")
		}},
		{"checksum file not a hash", "kube-apiserver", "not a SHA-256", func(r *release, _ *Fetcher) {
			r.files[apiserver+".sha256"] = []byte("<html>not found</html>")
		}},
		{"404 binary", "kube-apiserver", "404", func(r *release, _ *Fetcher) { delete(r.files, apiserver) }},
		{"404 checksum", "kube-apiserver", "404", func(r *release, _ *Fetcher) { delete(r.files, apiserver+".sha256") }},
		{"truncated binary", "kube-apiserver", "unexpected EOF", func(r *release, _ *Fetcher) { r.truncated[apiserver] = true }},
		{"short body, honest length", "kube-apiserver", "checksum mismatch", func(r *release, _ *Fetcher) {
			r.files[apiserver] = r.files[apiserver][:10]
		}},
		{"stalled binary", "kube-apiserver", "no data for", func(r *release, f *Fetcher) {
			r.stall[apiserver] = true
			f.Stall = 300 * time.Millisecond
		}},
		{"etcd bad checksum", "etcd", "checksum mismatch", func(r *release, _ *Fetcher) {
			r.files[tarball] = etcdTarball(t, "v0.0.0", "amd64")
		}},
		{"etcd no SHA256SUMS entry", "etcd", "no entry for", func(r *release, _ *Fetcher) {
			r.files["/etcd/"+etcdV+"/SHA256SUMS"] = []byte(sum([]byte("x")) + "  etcd-" + etcdV + "-linux-arm64.tar.gz\n")
		}},
		{"etcd 404", "etcd", "404", func(r *release, _ *Fetcher) { delete(r.files, tarball) }},
		{"etcd truncated", "etcd", "unexpected EOF", func(r *release, _ *Fetcher) { r.truncated[tarball] = true }},
		{"kwok bad checksum", "kwok", "checksum mismatch", func(_ *release, f *Fetcher) { f.KwokSHA256 = sum([]byte("other")) }},
		{"kwok without a pinned checksum", "kwok", "FLOTILLA_KWOK_SHA256", func(_ *release, f *Fetcher) { f.KwokSHA256 = "" }},
		{"kwok 404", "kwok", "404", func(r *release, _ *Fetcher) { delete(r.files, kwok) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, f := newRelease(t)
			c.mutate(r, f)
			dir := t.TempDir()
			err := f.Fetch(context.Background(), c.bin, dir)
			if err == nil {
				t.Fatalf("Fetch(%s) succeeded; want an error", c.bin)
			}
			if !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("error %q does not mention %q", err, c.wantErr)
			}
			assertClean(t, dir)
			// Run reports it as not installed, so the script builds it from source.
			if got := f.Run(context.Background(), dir, []string{c.bin}); len(got) != 0 {
				t.Errorf("Run installed %v", got)
			}
			assertClean(t, dir)
		})
	}
}

func TestFetchOfflineFailsFast(t *testing.T) {
	_, f := newRelease(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more: connection refused
	f.K8sURL, f.EtcdURL = url, url
	dir := t.TempDir()
	start := time.Now()
	if got := f.Run(context.Background(), dir, []string{"kube-apiserver", "etcd"}); len(got) != 0 {
		t.Fatalf("installed %v with no server", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("giving up took %s", d)
	}
	assertClean(t, dir)
}

func TestParseSum(t *testing.T) {
	h := sum([]byte("a"))
	for _, c := range []struct{ text, file, want string }{
		{h + "\n", "", h},
		{h + "  kube-apiserver\n", "", h},
		{strings.ToUpper(h), "", h},
		{sum([]byte("b")) + "  other.tar.gz\n" + h + " *etcd-v1-linux-amd64.tar.gz\n", "etcd-v1-linux-amd64.tar.gz", h},
		{h + "  ./etcd-v1-linux-amd64.tar.gz\n", "etcd-v1-linux-amd64.tar.gz", h},
	} {
		got, err := parseSum(c.text, c.file)
		if err != nil || got != c.want {
			t.Errorf("parseSum(%q, %q) = %q, %v; want %q", c.text, c.file, got, err, c.want)
		}
	}
	for _, c := range []struct{ text, file string }{
		{"", ""},
		{"abc\n", ""},
		{h + "  etcd-v1-linux-amd64.tar.gz.asc\n", "etcd-v1-linux-amd64.tar.gz"},
	} {
		if got, err := parseSum(c.text, c.file); err == nil {
			t.Errorf("parseSum(%q, %q) = %q; want an error", c.text, c.file, got)
		}
	}
}
