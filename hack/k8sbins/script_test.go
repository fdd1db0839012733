package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// runScript runs hack/k8s-bins.sh against a loopback release server with the source build
// disabled (FLOTILLA_K8S_SOURCE_BUILD=0), so a binary the download did not provide makes
// it exit 1 naming what it would have built.
func runScript(t *testing.T, r *release, env ...string) (out, cacheDir string, stderr string, err error, requests int64) {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock not installed")
	}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n.Add(1)
		r.ServeHTTP(w, req)
	}))
	defer srv.Close()

	cache := t.TempDir()
	cacheDir = filepath.Join(cache, "k8s-"+k8sV+"_etcd-"+etcdV+"_kwok-"+kwokV)
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// kwok's stage config comes from the module proxy, not from a release: present already.
	if err := os.WriteFile(filepath.Join(cacheDir, "kwok-stages.yaml"), []byte("# node-heartbeat-with-lease\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(t.TempDir(), "k8s")
	cmd := exec.Command("bash", "../k8s-bins.sh", out)
	cmd.Env = append(os.Environ(),
		"KUBEBUILDER_ASSETS=",
		"FLOTILLA_CACHE="+cache,
		"K8S_VERSION="+k8sV, "ETCD_VERSION="+etcdV, "KWOK_VERSION="+kwokV,
		"FLOTILLA_K8S_RELEASE_URL="+srv.URL+"/k8s",
		"FLOTILLA_ETCD_RELEASE_URL="+srv.URL+"/etcd",
		"FLOTILLA_KWOK_RELEASE_URL="+srv.URL+"/kwok",
		"FLOTILLA_KWOK_SHA256="+sum(fakeBinary("kwok")),
		"FLOTILLA_K8S_SOURCE_BUILD=0",
		"FLOTILLA_K8S_DOWNLOAD=1", // whatever the caller set; a test may override it below
	)
	cmd.Env = append(cmd.Env, env...)
	var e bytes.Buffer
	cmd.Stderr = &e
	err = cmd.Run()
	return out, cacheDir, e.String(), err, n.Load()
}

func TestScriptInstallsVerifiedDownloads(t *testing.T) {
	r, _ := newRelease(t)
	out, _, stderr, err, _ := runScript(t, r)
	if err != nil {
		t.Fatalf("k8s-bins.sh: %v\n%s", err, stderr)
	}
	for _, n := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kwok"} {
		if got := runInstalled(t, out, n); got != "fake "+n {
			t.Errorf("%s/%s printed %q", out, n, got)
		}
	}
	if strings.Contains(stderr, "not downloaded") || strings.Contains(stderr, "building") {
		t.Errorf("a fallback was taken although every download succeeded:\n%s", stderr)
	}
	t.Logf("k8s-bins.sh:\n%s", stderr)
}

func TestScriptFallsBackPerBinary(t *testing.T) {
	r, _ := newRelease(t)
	apiserver := "/k8s/" + k8sV + "/bin/linux/amd64/kube-apiserver"
	r.files[apiserver] = []byte("#!/bin/sh\necho tampered\n")
	r.truncated["/etcd/"+etcdV+"/etcd-"+etcdV+"-linux-amd64.tar.gz"] = true
	_, cacheDir, stderr, err, _ := runScript(t, r)
	if err == nil {
		t.Fatalf("k8s-bins.sh succeeded with a tampered kube-apiserver and a truncated etcd:\n%s", stderr)
	}
	for _, want := range []string{
		"kube-apiserver not downloaded", "checksum mismatch",
		"etcd not downloaded", "unexpected EOF",
		"kube-apiserver etcd missing and FLOTILLA_K8S_SOURCE_BUILD=0",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// The good ones are cached; the bad ones are not there at all.
	for _, n := range []string{"kube-controller-manager", "kube-scheduler", "kwok"} {
		if got := runInstalled(t, cacheDir, n); got != "fake "+n {
			t.Errorf("%s printed %q", n, got)
		}
	}
	for _, n := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(cacheDir, n)); err == nil {
			t.Errorf("%s installed although its download was bad", n)
		}
	}
}

func TestScriptDownloadDisabled(t *testing.T) {
	r, _ := newRelease(t)
	_, _, stderr, err, requests := runScript(t, r, "FLOTILLA_K8S_DOWNLOAD=0")
	if err == nil {
		t.Fatalf("k8s-bins.sh succeeded with downloads and the source build disabled:\n%s", stderr)
	}
	if requests != 0 {
		t.Errorf("FLOTILLA_K8S_DOWNLOAD=0 still made %d requests", requests)
	}
	if !strings.Contains(stderr, "missing and FLOTILLA_K8S_SOURCE_BUILD=0") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

func TestScriptOfflineSkipsTheDownloader(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed: the script then runs the downloader, which TestFetchOfflineFailsFast covers")
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL
	closed.Close() // connection refused, like a machine without network
	r, _ := newRelease(t)
	start := time.Now()
	_, _, stderr, err, _ := runScript(t, r, "FLOTILLA_K8S_RELEASE_URL="+url, "FLOTILLA_ETCD_RELEASE_URL="+url)
	if err == nil {
		t.Fatalf("k8s-bins.sh succeeded offline with the source build disabled:\n%s", stderr)
	}
	if !strings.Contains(stderr, "unreachable") || strings.Contains(stderr, "trying the release binaries") {
		t.Errorf("want the probe to skip the downloader:\n%s", stderr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("giving up took %s", d)
	}
}
