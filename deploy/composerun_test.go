package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// composeProject is `docker compose up` for deploy/compose.yaml as local
// containers (sandbox_test.go): the file is loaded, interpolated and
// validated by compose-go (Docker Compose's own loader), every service gets
// its own address on the project network and resolves the others by name
// (Docker's embedded DNS, as /etc/hosts), named volumes start empty and
// root-owned, and services start in depends_on order, each condition
// (service_started, service_completed_successfully) honoured. A service a
// condition waits to complete must exit 0; any other service must keep
// running. An image with no stand-in here (Grafana) is not started, and the
// test log says so.
type composeProject struct {
	t       *testing.T
	net     *network
	img     *images
	wheels  string
	project *types.Project

	mu       sync.Mutex
	hosts    map[string]*host
	procs    map[string]*proc
	skipped  map[string]string // service → why it was not started
	oneShot  map[string]bool   // services another waits on to complete
	failures []error
}

// loadCompose loads a compose file as `docker compose` does, with an empty
// environment (TANDEM_API_KEY unset).
func loadComposeProject(t *testing.T, file string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{file}, cli.WithName("tandem"), cli.WithEnv([]string{}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose-go: %v", err)
	}
	return p
}

func upCompose(t *testing.T, file string) (*composeProject, error) {
	n := newNetwork(t)
	cp := &composeProject{t: t, net: n, img: &images{t: t}, wheels: modelWheels(t, n.state),
		project: loadComposeProject(t, file), hosts: map[string]*host{}, procs: map[string]*proc{},
		skipped: map[string]string{}, oneShot: map[string]bool{}}
	names := map[string][]string{}
	for _, name := range keys(cp.project.Services) {
		svc := cp.project.Services[name]
		if _, err := cp.img.resolve(svc.Image); err != nil {
			var ns errNoStandIn
			if !errors.As(err, &ns) {
				return cp, err
			}
			cp.skipped[name] = err.Error()
			continue
		}
		for dep, d := range svc.DependsOn {
			if d.Condition == types.ServiceConditionCompletedSuccessfully {
				cp.oneShot[dep] = true
			}
		}
		h := n.addHost(name)
		cp.hosts[name] = h
		names[name] = []string{h.ip}
		names[fmt.Sprintf("%s-%s-1", cp.project.Name, name)] = []string{h.ip}
	}
	for _, h := range cp.hosts {
		if err := h.writeHosts(nil, names); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for name := range cp.hosts {
		wg.Add(1)
		go func() { defer wg.Done(); cp.run(name) }()
	}
	wg.Wait()
	return cp, cp.err()
}

func (cp *composeProject) fail(err error) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.failures = append(cp.failures, err)
}

func (cp *composeProject) err() error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return errors.Join(cp.failures...)
}

// run starts one service once its dependencies' conditions hold.
func (cp *composeProject) run(name string) {
	svc := cp.project.Services[name]
	for _, dep := range keys(svc.DependsOn) {
		if why, ok := cp.skipped[dep]; ok {
			cp.mu.Lock()
			cp.skipped[name] = "depends on " + dep + ", not started: " + why
			cp.mu.Unlock()
			return
		}
		if err := cp.wait(dep, svc.DependsOn[dep].Condition); err != nil {
			cp.fail(fmt.Errorf("service %s: %w", name, err))
			return
		}
	}
	spec, err := cp.spec(name, svc)
	if err != nil {
		cp.fail(fmt.Errorf("service %s: %w", name, err))
		return
	}
	pr := cp.net.startContainer(cp.hosts[name], spec)
	cp.mu.Lock()
	cp.procs[name] = pr
	cp.mu.Unlock()
	if cp.oneShot[name] {
		return
	}
	go func() {
		<-pr.done
		cp.fail(fmt.Errorf("service %s exited: %v\n%s", name, errOrZero(pr.err), pr.log.tail(30)))
	}()
}

// wait blocks until dep meets condition.
func (cp *composeProject) wait(dep, condition string) error {
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		cp.mu.Lock()
		pr, failed := cp.procs[dep], len(cp.failures) > 0
		cp.mu.Unlock()
		if failed {
			return errors.New("another service failed")
		}
		if pr == nil {
			continue
		}
		switch condition {
		case types.ServiceConditionStarted, "":
			return nil
		case types.ServiceConditionCompletedSuccessfully:
			if done, err := pr.exited(); done {
				if err != nil {
					return fmt.Errorf("depends on %s completing successfully; it failed: %v\n%s", dep, err, pr.log.tail(30))
				}
				return nil
			}
		default:
			return fmt.Errorf("depends_on %s condition %s: not supported here", dep, condition)
		}
	}
	return fmt.Errorf("timed out waiting for %s (%s)", dep, condition)
}

// spec is the container of one service.
func (cp *composeProject) spec(name string, svc types.ServiceConfig) (containerSpec, error) {
	img, err := cp.img.resolve(svc.Image)
	if err != nil {
		return containerSpec{}, err
	}
	s := containerSpec{Name: "compose-" + name, ImageFiles: img.files, ImageDirs: img.dirs, UID: img.uid, GID: img.gid,
		Dir: img.workdir, Hostname: name, ReadOnlyRoot: svc.ReadOnly}
	// An entrypoint replaces the image's and drops its CMD (compose-spec).
	entry := []string(svc.Entrypoint)
	if entry != nil {
		s.Argv = append(append([]string{}, entry...), svc.Command...)
	} else {
		s.Argv = img.argv(nil, svc.Command, svc.Command != nil)
	}
	if svc.WorkingDir != "" {
		s.Dir = svc.WorkingDir
	}
	if svc.User != "" {
		if s.UID, s.GID, err = composeUser(svc.User); err != nil {
			return s, err
		}
	}
	s.Groups = []int{s.GID}
	env := map[string]string{}
	for _, kv := range img.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, v := range svc.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	if _, ok := env["HOME"]; !ok {
		env["HOME"] = img.home
		if s.UID == 0 {
			env["HOME"] = "/root"
		}
	}
	if pythonImage.MatchString(svc.Image) {
		env["PIP_NO_INDEX"], env["PIP_FIND_LINKS"] = "1", cp.wheels
	}
	env["HOSTNAME"] = name
	for _, k := range keys(env) {
		s.Env = append(s.Env, k+"="+env[k])
	}
	for _, v := range svc.Volumes {
		var src string
		switch v.Type {
		case types.VolumeTypeBind:
			src = v.Source
		case types.VolumeTypeVolume:
			if src, err = cp.volume(v.Source); err != nil {
				return s, err
			}
		default:
			return s, fmt.Errorf("volume type %s: not supported here", v.Type)
		}
		s.Mounts = append(s.Mounts, mountSpec{Source: src, Target: v.Target, ReadOnly: v.ReadOnly})
	}
	h := cp.hosts[name]
	s.Mounts = append(s.Mounts,
		mountSpec{Source: filepath.Join(h.dir, "hosts"), Target: "/etc/hosts"},
		mountSpec{Source: filepath.Join(h.dir, "resolv.conf"), Target: "/etc/resolv.conf"})
	return s, nil
}

// volume is a named volume's directory, made (empty, root:root 0755) on
// first use, as Docker makes one for a path the image does not have.
func (cp *composeProject) volume(name string) (string, error) {
	if _, ok := cp.project.Volumes[name]; !ok {
		return "", fmt.Errorf("volume %s is not declared", name)
	}
	dir := filepath.Join(cp.net.state, "volumes", name)
	return dir, os.MkdirAll(dir, 0o755)
}

// composeUser reads "uid[:gid]" or a user the images know by name.
func composeUser(u string) (uid, gid int, err error) {
	named := map[string]int{"root": 0, "nobody": 65534}
	user, group, hasGroup := strings.Cut(u, ":")
	num := func(s string) (int, error) {
		if v, ok := named[s]; ok {
			return v, nil
		}
		return strconv.Atoi(s)
	}
	if uid, err = num(user); err != nil {
		return 0, 0, fmt.Errorf("user %q: %w", u, err)
	}
	gid = uid
	if hasGroup {
		if gid, err = num(group); err != nil {
			return 0, 0, fmt.Errorf("user %q: %w", u, err)
		}
	}
	return uid, gid, nil
}

// running returns the address of a started long-running service, or fails.
func (cp *composeProject) address(t *testing.T, name string) string {
	t.Helper()
	h, ok := cp.hosts[name]
	if !ok || cp.procs[name] == nil {
		t.Fatalf("service %s is not running (%s)", name, cp.skipped[name])
	}
	return h.ip
}

// logs is every service's output tail.
func (cp *composeProject) logs() string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	names := keys(cp.procs)
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "--- %s\n%s\n", n, cp.procs[n].log.tail(15))
	}
	return b.String()
}
