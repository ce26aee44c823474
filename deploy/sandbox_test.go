package deploy

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// This file and container_test.go are a small container runtime for the
// tests that start what the deployment files describe (serve_test.go). A
// network is a Linux bridge with one network namespace per pod (or compose
// service), each with its own address, so every engine binds 0.0.0.0:5555 as
// in its container and a frontend reaches it at the pod's address. A
// container is a local process in its pod's network namespace and its own
// mount namespace, over an overlay of this machine's root filesystem (the
// stand-in for the image, images_test.go), with the volumes, /etc/hosts,
// user, groups, working directory and read-only root its file gives it.
//
// It needs root with CAP_SYS_ADMIN and CAP_NET_ADMIN (a CI machine of this
// project has them); elsewhere the tests skip and say why.

// sandboxSupport says why containers cannot run here ("" when they can).
func sandboxSupport() string {
	if os.Geteuid() != 0 {
		return "starting the deployment files needs root (network and mount namespaces)"
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed (iproute2, util-linux)"
		}
	}
	name := "tdtprobe" + randomHex(2)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Sprintf("cannot create a network namespace: %v: %s", err, out)
	}
	_ = exec.Command("ip", "netns", "del", name).Run()
	return ""
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sh runs a setup command, failing the test with its output.
func sh(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// subnets are the networks' subnets this test process has taken.
var subnets = struct {
	mu   sync.Mutex
	used map[string]bool
}{used: map[string]bool{}}

// network is a bridge and the hosts (network namespaces) on it.
type network struct {
	t      *testing.T
	id     string // 4 hex digits, in every interface and namespace name
	bridge string
	subnet string // "10.a.b."
	hostIP string // this test's address on the bridge: subnet + "1"
	state  string // a directory for the network's and its containers' files
	mu     sync.Mutex
	hosts  int
}

// newNetwork makes a bridge on a free 10.x.y.0/24 and a state directory
// (under /var/tmp: containers mount their own /tmp).
func newNetwork(t *testing.T) *network {
	t.Helper()
	if why := sandboxSupport(); why != "" {
		t.Skip(why)
	}
	state, err := os.MkdirTemp("/var/tmp", "tandem-deploytest-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o755); err != nil {
		t.Fatal(err)
	}
	n := &network{t: t, id: randomHex(2), state: state}
	n.bridge = "tdtb" + n.id
	routes, _ := exec.Command("ip", "-4", "route").Output()
	subnets.mu.Lock()
	for {
		b := make([]byte, 2)
		_, _ = rand.Read(b)
		n.subnet = fmt.Sprintf("10.%d.%d.", 200+int(b[0])%50, b[1])
		if !strings.Contains(string(routes), n.subnet) && !subnets.used[n.subnet] {
			break
		}
	}
	subnets.used[n.subnet] = true // parallel tests pick theirs before either adds a route
	subnets.mu.Unlock()
	n.hostIP = n.subnet + "1"
	sh(t, "ip", "link", "add", n.bridge, "type", "bridge")
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", n.bridge).Run()
		_ = os.RemoveAll(state)
	})
	sh(t, "ip", "addr", "add", n.hostIP+"/24", "dev", n.bridge)
	sh(t, "ip", "link", "set", n.bridge, "up")
	return n
}

// host is one network namespace on the network: a pod's, or a compose
// service's.
type host struct {
	netns string // its name under /run/netns
	ip    string
	dir   string // its files: hosts, resolv.conf
}

// addHost makes a network namespace with one veth (eth0) on the bridge.
func (n *network) addHost(label string) *host {
	t := n.t
	t.Helper()
	n.mu.Lock()
	n.hosts++
	k := n.hosts
	n.mu.Unlock()
	if k > 250 {
		t.Fatal("network: more than 250 hosts")
	}
	h := &host{netns: fmt.Sprintf("tdt%s-%d", n.id, k), ip: fmt.Sprintf("%s%d", n.subnet, k+1)}
	h.dir = filepath.Join(n.state, "hosts", fmt.Sprintf("%d-%s", k, label))
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	outer, inner := fmt.Sprintf("tdt%sh%d", n.id, k), fmt.Sprintf("tdt%sp%d", n.id, k)
	sh(t, "ip", "netns", "add", h.netns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", h.netns).Run() })
	sh(t, "ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
	sh(t, "ip", "link", "set", outer, "master", n.bridge, "up")
	sh(t, "ip", "link", "set", inner, "netns", h.netns)
	sh(t, "ip", "-n", h.netns, "link", "set", inner, "name", "eth0")
	sh(t, "ip", "-n", h.netns, "addr", "add", h.ip+"/24", "dev", "eth0")
	sh(t, "ip", "-n", h.netns, "link", "set", "eth0", "up")
	sh(t, "ip", "-n", h.netns, "link", "set", "lo", "up")
	sh(t, "ip", "-n", h.netns, "route", "add", "default", "via", n.hostIP)
	// No DNS server: a name that is not in /etc/hosts fails at once.
	if err := os.WriteFile(filepath.Join(h.dir, "resolv.conf"), []byte("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// writeHosts writes the host's /etc/hosts: localhost, its own names, then
// names → addresses (the cluster's DNS, for the names the files use).
func (h *host) writeHosts(own []string, names map[string][]string) error {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	if len(own) > 0 {
		fmt.Fprintf(&b, "%s\t%s\n", h.ip, strings.Join(own, " "))
	}
	for _, name := range keys(names) {
		for _, ip := range names[name] {
			fmt.Fprintf(&b, "%s\t%s\n", ip, name)
		}
	}
	// In place, not renamed: running containers bind-mount this inode.
	f, err := os.OpenFile(filepath.Join(h.dir, "hosts"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// containerSpec is what container_test.go's init sets up before it executes
// Argv: the JSON handed to the re-executed test binary.
type containerSpec struct {
	Name         string
	Root         string      // a directory for the overlay's upper, work and merged trees
	ImageFiles   []mountSpec // the image's own files (the tandem binary), bound before the volumes
	ImageDirs    []imageDir  // directories the image has (its WORKDIR, a data directory)
	Mounts       []mountSpec // volumes, then /etc/hosts and /etc/resolv.conf
	Hostname     string
	UID, GID     int
	Groups       []int
	Dir          string
	Env          []string
	Argv         []string
	ReadOnlyRoot bool
	NoNewPrivs   bool
}

type mountSpec struct {
	Source, Target string
	ReadOnly       bool
}

type imageDir struct {
	Path     string
	UID, GID int
	Mode     os.FileMode
}

// proc is a started container: one process (group).
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *lineLog
	done chan struct{}
	err  error // the exit status, once done is closed
}

// startContainer runs spec in host's network namespace.
func (n *network) startContainer(h *host, spec containerSpec) *proc {
	t := n.t
	t.Helper()
	if spec.Root == "" {
		spec.Root = filepath.Join(n.state, "containers", spec.Name+"-"+randomHex(2))
	}
	if err := os.MkdirAll(spec.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(spec.Root, "spec.json")
	if err := os.WriteFile(specPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &proc{name: spec.Name, log: newLineLog(spec.Name), done: make(chan struct{})}
	c.cmd = exec.Command("nsenter", "--net=/run/netns/"+h.netns, "--", os.Args[0])
	c.cmd.Env = []string{containerEnv + "=" + specPath}
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	c.cmd.SysProcAttr = &syscall.SysProcAttr{
		Unshareflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
		Setpgid:      true,
		Pdeathsig:    syscall.SIGKILL,
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("container %s: %v", spec.Name, err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(c.stop)
	return c
}

// stop sends SIGTERM to the container's processes, then SIGKILL.
func (c *proc) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// exited reports whether the container has exited, and how.
func (c *proc) exited() (bool, error) {
	select {
	case <-c.done:
		return true, c.err
	default:
		return false, nil
	}
}

// lineLog keeps a container's output (stdout and stderr together).
type lineLog struct {
	name string
	mu   sync.Mutex
	b    strings.Builder
}

func newLineLog(name string) *lineLog { return &lineLog{name: name} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// tail is the last n lines of the log.
func (l *lineLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimRight(l.b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
