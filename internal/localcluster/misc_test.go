package localcluster_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-io/flotilla/internal/localcluster"
)

var _ = Describe("Start", func() {
	It("rejects invalid options before starting anything", func(ctx SpecContext) {
		_, err := localcluster.Start(ctx, localcluster.Options{Name: "Not_A_Label"})
		Expect(err).To(MatchError(ContainSubstring(`invalid cluster name "Not_A_Label"`)))

		_, err = localcluster.Start(ctx, localcluster.Options{BinDir: GinkgoT().TempDir()})
		Expect(err).To(MatchError(ContainSubstring("hack/k8s-bins.sh")))

		_, err = localcluster.Start(ctx, localcluster.Options{Full: true, Nodes: []localcluster.NodeSpec{{Name: "a"}, {Name: "a"}}})
		Expect(err).To(MatchError(ContainSubstring(`duplicate node name "a"`)))
	})

	It("quotes the log of a process whose fixed port is taken", func(ctx SpecContext) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		defer l.Close()
		dir := filepath.Join(GinkgoT().TempDir(), "c")

		_, err = localcluster.Start(ctx, localcluster.Options{Dir: dir, EtcdPort: l.Addr().(*net.TCPAddr).Port})
		Expect(err).To(MatchError(And(
			ContainSubstring("etcd exited unexpectedly"),
			ContainSubstring("address already in use"),
		)))
		Expect(filepath.Join(dir, "run", "etcd.pid")).NotTo(BeAnExistingFile())
		Expect(filepath.Join(dir, "logs", "etcd.log")).To(BeAnExistingFile(), "a given Dir is kept for inspection")
	}, SpecTimeout(time.Minute))
})

var _ = Describe("StopProcessesIn", func() {
	It("stops recorded processes but spares a pid now used by another program", func() {
		dir := GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(dir, "c", "run"), 0o755)).To(Succeed())

		// Ours: its command line names a path in dir, as every process of a cluster does.
		ours := exec.Command("sh", "-c", "sleep 60", filepath.Join(dir, "c", "marker"))
		// A stranger whose pid a stale pid file happens to hold.
		stranger := exec.Command("sleep", "60")
		for _, c := range []*exec.Cmd{ours, stranger} {
			Expect(c.Start()).To(Succeed())
		}
		DeferCleanup(func() { _ = stranger.Process.Kill(); _ = stranger.Wait() })
		exited := make(chan error, 1)
		go func() { exited <- ours.Wait() }()

		writePid := func(name string, pid int) {
			Expect(os.WriteFile(filepath.Join(dir, "c", "run", name+".pid"), []byte(strconv.Itoa(pid)), 0o644)).To(Succeed())
		}
		writePid("ours", ours.Process.Pid)
		writePid("stranger", stranger.Process.Pid)

		Expect(localcluster.StopProcessesIn(dir)).To(Succeed())
		Eventually(exited).Should(Receive())
		Expect(processExists(stranger.Process.Pid)).To(BeTrue())
		Expect(filepath.Join(dir, "c", "run", "ours.pid")).NotTo(BeAnExistingFile())
		Expect(filepath.Join(dir, "c", "run", "stranger.pid")).NotTo(BeAnExistingFile(), "a stale pid file is removed")
	})
})

var _ = Describe("DefaultMembers", func() {
	It("places every member differently and gives the last full one GPUs", func() {
		members := localcluster.DefaultMembers(8, true)
		placements := map[string]bool{}
		for i, m := range members {
			Expect(m.Name).To(Equal("member" + strconv.Itoa(i+1)))
			Expect(m.Full).To(BeTrue())
			key := m.Provider + "/" + m.Region + "/" + m.Zone
			Expect(placements).NotTo(HaveKey(key))
			placements[key] = true
		}
		Expect(members[7].GPUs).To(BeNumerically(">", 0))
		Expect(members[6].GPUs).To(BeZero())
		Expect(localcluster.DefaultMembers(2, false)[1].GPUs).To(BeZero())
	})
})

var _ = Describe("Kubeconfig", func() {
	It("renders a kubeconfig whose entries merge with other clusters'", func() {
		c := &localcluster.Cluster{Name: "member1", Endpoint: "https://127.0.0.1:6443", CAData: []byte("ca")}
		cfg, err := clientcmd.Load(c.Kubeconfig("alice", "t0k3n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.CurrentContext).To(Equal("member1"))
		Expect(cfg.Contexts).To(HaveKey("member1"))
		Expect(cfg.Contexts["member1"].AuthInfo).To(Equal("member1-alice"))
		Expect(cfg.AuthInfos["member1-alice"].Token).To(Equal("t0k3n"))
		Expect(cfg.Clusters["member1"].Server).To(Equal(c.Endpoint))
		Expect(cfg.Clusters["member1"].CertificateAuthorityData).To(Equal([]byte("ca")))
	})
})
